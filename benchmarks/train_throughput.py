"""Learner env-steps per second of PPO training, 4 players against heuristic opponents.

Three measurements in the same run, with ``--opponent`` (default ``greedy``) in the 3 other seats:

- ``batched`` (the lab's default): :class:`odin_lab.training.TrainConfig`'s settings (legal-set
  policy, 1,024-sample minibatches, 4 epochs, one torch thread) on the batched engine:
  ``selfplay_batch`` games in lockstep in one process, the learner in one seat per game drawn per
  episode, the opponents asked once per step for all their rows
  (:class:`odin_lab.training.pool.OpponentPool`);
- ``subproc``: the same settings on ``n_envs`` subprocesses of ``SingleAgentEnv``;
- ``sb3 defaults``: sb3-contrib's default ``MaskablePPO`` (64-sample minibatches, 10 epochs, its
  own masked distribution) on the same subprocess envs, for reference.

Each figure is whole training wall time (rollouts and updates) over whole rollouts, after one
warm-up rollout (numba compilation, the subprocesses' start).

    python benchmarks/train_throughput.py [--opponent greedy] [--n-envs 4] [--rollouts 3]

Timings on a shared machine are noisy: run it when nothing else is busy.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch as th


def measure(model, rollout_steps: int, rollouts: int) -> float:
    """Steps per second over ``rollouts`` rollouts + updates, after one warm-up rollout."""
    model.learn(rollout_steps, reset_num_timesteps=False)
    start, steps = time.perf_counter(), model.num_timesteps
    model.learn(rollout_steps * rollouts, reset_num_timesteps=False)
    return (model.num_timesteps - steps) / (time.perf_counter() - start)


def batched(config, rollouts: int) -> tuple[float, float]:
    """Steps/s of batched training and the share of its time spent collecting."""
    from odin_lab.training.model import build_model
    from odin_lab.training.pool import OpponentPool
    from odin_lab.training.selfplay import train_selfplay
    from odin_lab.training.subproc import spaces_env

    model = build_model(config, spaces_env(config), tensorboard=False)
    pool = OpponentPool(config.opponents, config.game.players, seed=config.seed)
    size = config.n_steps * config.n_envs
    common = dict(batch=config.selfplay_batch, rollout_decisions=size, progress=False, pool=pool)
    train_selfplay(model, config.game, size, seed=0, **common)
    stats = train_selfplay(model, config.game, size * (rollouts + 1), seed=1, **common)
    return stats.steps_per_s, stats.collect_seconds / stats.seconds


def main() -> None:
    from sb3_contrib import MaskablePPO

    from odin_lab.training.config import TrainConfig
    from odin_lab.training.model import build_model
    from odin_lab.training.subproc import make_vec_env

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponent", default="greedy", help="agent playing the 3 other seats")
    parser.add_argument("--n-envs", type=int, default=TrainConfig.n_envs, help="subprocess envs")
    parser.add_argument("--rollouts", type=int, default=3, help="timed rollouts per setting")
    parser.add_argument("--skip-default", action="store_true", help="skip sb3's default settings")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as runs:
        config = TrainConfig(runs_dir=runs, opponents=[args.opponent], n_envs=args.n_envs)
        th.set_num_threads(config.torch_threads)
        print(
            f"PPO settings  : n_steps x n_envs {config.n_steps} x {config.n_envs}, minibatch "
            f"{config.batch_size}, epochs {config.n_epochs}, pi {config.net_pi}, vf "
            f"{config.net_vf}, torch threads {config.torch_threads}; opponents {args.opponent}"
        )
        ours, share = batched(config, args.rollouts)
        print(
            f"batched       : {ours:7,.0f} learner steps/s  ({config.selfplay_batch} games in "
            f"lockstep, {share:.0%} of the time collecting)"
        )
        venv = make_vec_env(config, seed=0)
        try:
            model = build_model(config, venv, tensorboard=False)
            sub = measure(model, config.n_steps * config.n_envs, args.rollouts)
            print(f"subproc       : {sub:7,.0f} learner steps/s  ({config.n_envs} SubprocVecEnv)")
            if not args.skip_default:
                default = MaskablePPO("MlpPolicy", venv, device="cpu", seed=0)
                ref = measure(default, default.n_steps * config.n_envs, 1)
                print(
                    f"sb3 defaults  : {ref:7,.0f} learner steps/s  (subproc, n_steps "
                    f"{default.n_steps}, batch {default.batch_size}, epochs {default.n_epochs}, "
                    "net 64x64 tanh)"
                )
                print(f"batched / sb3 : {ours / ref:7.1f}x")
            print(f"batched / subproc: {ours / sub:4.1f}x")
        finally:
            venv.close()


if __name__ == "__main__":
    main()
