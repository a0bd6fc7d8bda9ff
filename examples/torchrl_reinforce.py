"""TorchRL: PettingZooWrapper(use_mask=True) on the AEC env, a shared masked policy trained
briefly by self-play, then its win rate against random.

    python examples/torchrl_reinforce.py            # 19 min on 2 busy cores (30,720 steps)
    python examples/torchrl_reinforce.py --smoke    # a few seconds

TorchRL needs no adapter: with ``use_mask=True`` its wrapper marks the acting seat (``mask``),
gives each seat's legal actions (``action_mask``) and every seat's reward on every step, so each
seat's rewards sum to its engine total. All seats form one group and share one actor
(``ProbabilisticActor`` over a ``MaskedCategorical``); ``env.rollout`` collects, and a
REINFORCE step with a mean baseline on the acting seats' decisions updates it (the same actor
plugs into ``ClipPPOLoss`` for PPO).
"""

from __future__ import annotations

import torch
from common import PolicyAgent, parse, report_win_rate
from tensordict.nn import TensorDictModule
from torch import nn
from torchrl.envs.libs.pettingzoo import PettingZooWrapper
from torchrl.envs.utils import MarlGroupMapType
from torchrl.modules import MaskedCategorical, ProbabilisticActor

import odin_env
from odin_env.observation import OBS_SIZE
from odin_env.rules import NUM_ACTIONS

GROUP = "agents"  # TorchRL's name of the one group holding every seat
OBS = (GROUP, "observation", "observation")


def main() -> None:
    args, config = parse(__doc__)
    torch.manual_seed(args.seed)
    iterations, steps = (2, 64) if args.smoke else (60, 512)
    env = PettingZooWrapper(
        env=odin_env.env(config=config),
        use_mask=True,  # compulsory for an AEC env: one seat acts per step
        group_map=MarlGroupMapType.ALL_IN_ONE_GROUP,
        seed=args.seed,
    )
    net = nn.Sequential(nn.Linear(OBS_SIZE, 128), nn.ReLU(), nn.Linear(128, NUM_ACTIONS))
    actor = ProbabilisticActor(
        TensorDictModule(net, in_keys=[OBS], out_keys=[(GROUP, "logits")]),
        in_keys={"logits": (GROUP, "logits"), "mask": (GROUP, "action_mask")},
        out_keys=[env.action_key],
        distribution_class=MaskedCategorical,
        return_log_prob=True,
        log_prob_key=(GROUP, "log_prob"),
    )
    optimiser = torch.optim.Adam(net.parameters(), lr=3e-4)
    for _ in range(iterations):
        batch = env.rollout(steps, actor, break_when_any_done=False, auto_cast_to_device=False)
        rewards = batch["next", GROUP, "reward"].squeeze(-1) / 9.0  # (steps, seats)
        done = batch["next", "done"].squeeze(-1).float()
        returns, running = torch.zeros_like(rewards), torch.zeros_like(rewards[0])
        for t in reversed(range(len(rewards))):  # each seat's reward-to-go within its game
            running = rewards[t] + 0.99 * running * (1 - done[t])
            returns[t] = running
        acting = batch[GROUP, "mask"]  # the seat that chose the action of each step
        advantage = returns[acting] - returns[acting].mean()
        dist = actor.get_dist(batch)
        log_prob = dist.log_prob(batch[env.action_key])[acting]
        loss = -(log_prob * advantage).mean()
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()

    @torch.no_grad()
    def scores(observation):
        return net(torch.as_tensor(observation)).numpy()

    deals = args.deals or (2 if args.smoke else 100)
    report_win_rate(PolicyAgent("torchrl", scores), config, deals, args.seed)


if __name__ == "__main__":
    main()
