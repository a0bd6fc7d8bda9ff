"""RLlib: PettingZooEnv and its action-masking RLModule, one PPO policy shared by every seat,
trained briefly by self-play, then its win rate against random.

    .venv-rllib/bin/python examples/rllib_ppo.py            # 16 min on 2 busy cores (50,000 steps)
    .venv-rllib/bin/python examples/rllib_ppo.py --smoke    # under a minute (Ray's start-up)

RLlib 2.60 pins gymnasium 1.2.2, so it lives in its own environment (``make .venv-rllib``).
Its ``PettingZooEnv`` hands each agent, when it is next to act, what it earned since its last
turn, and at the game's end every agent its rest, so it needs no reward adapter; its
action-masking module reads the observation under the key ``observations``, which
``odin_env.wrappers.ObservationsKey`` provides. RLlib's environment pre-check samples actions
without the mask (an illegal action raises here), so it is turned off.
"""

from __future__ import annotations

import numpy as np
import ray
import torch
from common import PolicyAgent, parse, report_win_rate
from ray.rllib.algorithms.ppo import PPOConfig
from ray.rllib.core.rl_module.multi_rl_module import MultiRLModuleSpec
from ray.rllib.core.rl_module.rl_module import RLModuleSpec
from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv
from ray.rllib.examples.rl_modules.classes.action_masking_rlm import (
    ActionMaskingTorchRLModule,
)
from ray.tune.registry import register_env

import odin_env
from odin_env.rules import NUM_ACTIONS, Config
from odin_env.wrappers import ObservationsKey


def make_env(settings: dict) -> PettingZooEnv:
    return PettingZooEnv(ObservationsKey(odin_env.env(config=Config(**settings))))


def main() -> None:
    args, config = parse(__doc__)
    iterations, batch = (1, 128) if args.smoke else (25, 2000)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    register_env("odin", make_env)
    settings = {"players": config.players, "threshold": config.threshold}
    algo_config = (
        PPOConfig()
        .environment("odin", env_config=settings, disable_env_checking=True)
        .env_runners(num_env_runners=0)  # collect in this process: two cores are enough
        .multi_agent(policies={"shared"}, policy_mapping_fn=lambda agent, *a, **k: "shared")
        .rl_module(
            rl_module_spec=MultiRLModuleSpec(
                rl_module_specs={
                    "shared": RLModuleSpec(
                        module_class=ActionMaskingTorchRLModule,
                        model_config={"head_fcnet_hiddens": [128]},
                    )
                }
            )
        )
        .training(train_batch_size_per_learner=batch, minibatch_size=min(batch, 512), lr=3e-4)
        .debugging(seed=args.seed)
    )
    algo = algo_config.build_algo()
    for _ in range(iterations):
        algo.train()
    module = algo.get_module("shared")
    everything = torch.ones(1, NUM_ACTIONS)  # the agent applies the real mask itself

    @torch.no_grad()
    def scores(observation):  # the shared policy's action logits for one observation
        obs = {"observations": torch.as_tensor(observation)[None], "action_mask": everything}
        return np.asarray(module.forward_inference({"obs": obs})["action_dist_inputs"][0])

    deals = args.deals or (2 if args.smoke else 100)
    report_win_rate(PolicyAgent("rllib", scores), config, deals, args.seed)
    algo.stop()
    ray.shutdown()


if __name__ == "__main__":
    main()
