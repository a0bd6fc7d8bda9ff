"""Learner env-steps per second of PPO training, 4 players against heuristic opponents.

Two measurements in the same run, on the same environments: the lab's settings
(:class:`agents.training.TrainConfig` defaults: legal-set policy, 2,048-sample minibatches,
few epochs, one torch thread per process) and sb3-contrib's default ``MaskablePPO`` settings
(64-sample minibatches, 10 epochs, its own masked distribution) for reference. Each figure is
whole training wall time (rollouts and updates) over whole rollouts, after one warm-up rollout.

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


def main() -> None:
    from sb3_contrib import MaskablePPO

    from agents.training import TrainConfig, build_model, make_vec_env

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponent", default="greedy", help="heuristic playing the 3 other seats")
    parser.add_argument("--n-envs", type=int, default=TrainConfig.n_envs, help="subprocess envs")
    parser.add_argument("--rollouts", type=int, default=3, help="timed rollouts per setting")
    parser.add_argument("--skip-default", action="store_true", help="only the lab's settings")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as runs:
        config = TrainConfig(runs_dir=runs, opponents=[args.opponent], n_envs=args.n_envs)
        th.set_num_threads(config.torch_threads)
        venv = make_vec_env(config, seed=0)
        try:
            model = build_model(config, venv, tensorboard=False)
            ours = measure(model, config.n_steps * config.n_envs, args.rollouts)
            print(
                f"lab settings   : {ours:7,.0f} learner steps/s  (n_envs {config.n_envs}, "
                f"n_steps {config.n_steps}, batch {config.batch_size}, epochs {config.n_epochs}, "
                f"pi {config.net_pi}, vf {config.net_vf}, torch threads {config.torch_threads})"
            )
            if not args.skip_default:
                default = MaskablePPO("MlpPolicy", venv, device="cpu", seed=0)
                ref = measure(default, default.n_steps * config.n_envs, 1)
                print(
                    f"sb3 defaults   : {ref:7,.0f} learner steps/s  (n_steps {default.n_steps}, "
                    f"batch {default.batch_size}, epochs {default.n_epochs}, net 64x64 tanh)"
                )
                print(f"speed-up       : {ours / ref:7.1f}x")
        finally:
            venv.close()


if __name__ == "__main__":
    main()
