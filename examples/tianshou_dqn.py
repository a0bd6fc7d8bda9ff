"""Tianshou: PettingZooEnv and its multi-agent algorithm, a DQN learner in seat 0 against
random opponents, trained briefly, then its win rate against random.

    python examples/tianshou_dqn.py            # 3 min on 2 busy cores (60,000 steps)
    python examples/tianshou_dqn.py --smoke    # a few seconds

Tianshou stores with each step the reward vector read right after it and trains each agent on
its own steps' entries only, ending the episode at the first termination. Odin pays a hand's
penalties on the step that ends the hand, usually another player's, so unwrapped an agent would
see a few percent of its reward. ``odin_env.wrappers.RewardOnOwnStep`` puts into the acting
agent's entry everything it earned since its previous step and, at the game's end, gives every
other agent one settling turn (only PASS legal) that pays the rest: summed over its own steps,
each agent then sees exactly its engine total.
"""

from __future__ import annotations

import numpy as np
import torch
from common import PolicyAgent, parse, report_win_rate
from tianshou.algorithm import (
    DQN,
    MARLRandomDiscreteMaskedOffPolicyAlgorithm,
    MultiAgentOffPolicyAlgorithm,
)
from tianshou.algorithm.modelfree.dqn import DiscreteQLearningPolicy
from tianshou.algorithm.optim import AdamOptimizerFactory
from tianshou.data import Collector, VectorReplayBuffer
from tianshou.env import DummyVectorEnv, PettingZooEnv
from tianshou.utils.net.common import Net
from tianshou.utils.torch_utils import policy_within_training_step, torch_train_mode

import odin_env
from odin_env.observation import OBS_SIZE
from odin_env.rules import NUM_ACTIONS
from odin_env.wrappers import RewardOnOwnStep


def main() -> None:
    args, config = parse(__doc__)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    rounds, steps = (2, 64) if args.smoke else (150, 400)

    def make_env() -> PettingZooEnv:
        return PettingZooEnv(RewardOnOwnStep(odin_env.env(config=config)))

    env = make_env()
    net = Net(state_shape=OBS_SIZE, action_shape=NUM_ACTIONS, hidden_sizes=[128])
    learner = DQN(
        policy=DiscreteQLearningPolicy(
            model=net, action_space=env.action_space, eps_training=0.1, eps_inference=0.0
        ),
        optim=AdamOptimizerFactory(lr=1e-3),
        gamma=0.95,
        n_step_return_horizon=1,
        target_update_freq=200,
    )
    randoms = [
        MARLRandomDiscreteMaskedOffPolicyAlgorithm(action_space=env.action_space)
        for _ in range(config.players - 1)
    ]
    algorithm = MultiAgentOffPolicyAlgorithm(algorithms=[learner, *randoms], env=env)
    envs = DummyVectorEnv([make_env for _ in range(2)])
    envs.seed(args.seed)
    collector = Collector(
        algorithm, envs, VectorReplayBuffer(20_000, len(envs)), exploration_noise=True
    )
    collector.reset()
    # What Tianshou's trainer does around each step, here by hand to keep the example short.
    with policy_within_training_step(algorithm.policy), torch_train_mode(algorithm):
        for _ in range(rounds):
            collector.collect(n_step=steps)
            algorithm.update(buffer=collector.buffer, sample_size=128)

    @torch.no_grad()
    def scores(observation):  # the learner's Q-values of one observation
        return net(torch.as_tensor(observation)[None])[0][0].numpy()

    deals = args.deals or (2 if args.smoke else 100)
    report_win_rate(PolicyAgent("tianshou", scores), config, deals, args.seed)


if __name__ == "__main__":
    main()
