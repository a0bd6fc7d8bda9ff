"""Stable-Baselines3 / sb3-contrib: MaskablePPO on the single-agent Gymnasium env, then its win
rate against random.

    python examples/sb3_maskable_ppo.py            # 11 min on 2 busy cores (30,720 steps)
    python examples/sb3_maskable_ppo.py --smoke    # a few seconds
    python examples/sb3_maskable_ppo.py --save results/sb3_maskable_ppo.zip   # keep the model

``--save`` writes SB3's own model file, which ``examples/my_agent.py`` wraps as a lab agent for
every command that takes one (docs/own-agent.md: on the leaderboard).

SB3 needs no adapter: ``gymnasium.make("odin_env/Odin-v0")`` is one learning seat (drawn per
episode) whose opponents act inside ``step()`` (``random`` here, the default) and which pays the
learner its own reward, also when an opponent ends the hand; its ``action_masks()`` is what
``MaskablePPO`` asks for. Both environment checkers pass on it with no warning.
"""

from __future__ import annotations

import gymnasium as gym
from common import PolicyAgent, parse, report_win_rate
from sb3_contrib import MaskablePPO
from stable_baselines3.common.env_checker import check_env
from stable_baselines3.common.env_util import make_vec_env

import odin_env


def main() -> None:
    args, config = parse(__doc__, save="also save the trained model here (SB3's .zip)")
    check_env(gym.make(odin_env.GYM_ID, config=config).unwrapped)
    steps = 256 if args.smoke else 30_000
    env = make_vec_env(lambda: gym.make(odin_env.GYM_ID, config=config), n_envs=2, seed=args.seed)
    model = MaskablePPO(
        "MlpPolicy",
        env,
        n_steps=128 if args.smoke else 1024,
        batch_size=256,
        seed=args.seed,
        learning_rate=1e-3,
        verbose=0,
    )
    model.learn(total_timesteps=steps)
    if args.save is not None:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        model.save(args.save)
        print(f"saved the model to {args.save}", flush=True)

    def scores(observation):  # the policy's action logits for one observation
        obs, _ = model.policy.obs_to_tensor(observation)
        return model.policy.get_distribution(obs).distribution.logits[0].detach().numpy()

    deals = args.deals or (2 if args.smoke else 100)
    report_win_rate(PolicyAgent("sb3", scores), config, deals, args.seed)


if __name__ == "__main__":
    main()
