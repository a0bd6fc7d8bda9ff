"""Learner env-steps per second of PPO: batched self-play (every seat learns) against the
single-seat SubprocVecEnv path, 4 players, same PPO settings, measured in the same run.

A learner step is one decision PPO trains on; each figure is whole training wall time
(collection and updates) over whole rollouts, after one warm-up rollout (numba compilation, the
subprocesses' start). Both use :func:`odin_lab.training.build_model` with the
:class:`odin_lab.training.TrainConfig` defaults (``n_steps x n_envs`` decisions per update,
1,024-sample minibatches, 4 epochs, one torch thread):

- ``single-seat``: ``model.learn`` on :func:`odin_lab.training.make_vec_env` (``n_envs``
  subprocesses of ``SingleAgentEnv``; ``--opponent`` plays the other seats inside ``step``,
  default ``random``, the cheapest opponent, so the figure favours this path);
- ``self-play``: :class:`odin_lab.training.selfplay.SelfPlayCollector` on ``--batch`` games of
  :class:`odin_env.batched.BatchedGames` in the main process, then ``model.train()``, in steady
  state (decisions carried over from the previous rollout included).

    python benchmarks/selfplay_throughput.py [--batch 256] [--n-envs 4] [--rollouts 2]

Timings on a shared machine are noisy: run it when nothing else is busy.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import torch as th


def single_seat(config, rollouts: int) -> float:
    """Steps/s of ``model.learn`` on the subprocess envs, after one warm-up rollout."""
    from odin_lab.training.model import build_model
    from odin_lab.training.subproc import make_vec_env

    venv = make_vec_env(config, seed=0)
    try:
        model = build_model(config, venv, tensorboard=False)
        size = config.n_steps * config.n_envs
        model.learn(size, reset_num_timesteps=False)
        start, steps = time.perf_counter(), model.num_timesteps
        model.learn(size * rollouts, reset_num_timesteps=False)
        return (model.num_timesteps - steps) / (time.perf_counter() - start)
    finally:
        venv.close()


def self_play(config, batch: int, rollouts: int) -> tuple[float, float, int]:
    """Steps/s of collection + update, the share of time spent collecting, decisions/rollout."""
    from stable_baselines3.common.vec_env import DummyVecEnv

    from odin_env.batched import BatchedGames
    from odin_env.single_agent import SingleAgentEnv
    from odin_lab.training.collector import SelfPlayCollector
    from odin_lab.training.model import build_model
    from odin_lab.training.update import train_on_rollout

    spaces_only = DummyVecEnv([lambda: SingleAgentEnv(config.game)])
    model = build_model(config, spaces_only, tensorboard=False)
    collector = SelfPlayCollector(model, BatchedGames(config.game, batch, config.seed))
    size = -(-config.n_steps * config.n_envs // batch) * batch
    train_on_rollout(model, collector.collect(size))
    steps = collecting = 0.0
    start = time.perf_counter()
    for _ in range(rollouts):
        began = time.perf_counter()
        rollout = collector.collect(size)
        collecting += time.perf_counter() - began
        train_on_rollout(model, rollout)
        steps += len(rollout)
    elapsed = time.perf_counter() - start
    return steps / elapsed, collecting / elapsed, size


def main() -> None:
    from odin_lab.training.config import TrainConfig

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256, help="games in lockstep (self-play)")
    parser.add_argument("--n-envs", type=int, default=TrainConfig.n_envs, help="subprocess envs")
    parser.add_argument("--opponent", default="random", help="single-seat path's opponents")
    parser.add_argument("--rollouts", type=int, default=2, help="timed rollouts per path")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as runs:
        config = TrainConfig(runs_dir=runs, opponents=[args.opponent], n_envs=args.n_envs)
        th.set_num_threads(config.torch_threads)
        ours, share, size = self_play(config, args.batch, args.rollouts)
        ref = single_seat(config, args.rollouts)
    settings = (
        f"n_steps x n_envs {config.n_steps} x {config.n_envs}, minibatch {config.batch_size}, "
        f"epochs {config.n_epochs}, pi {config.net_pi}, vf {config.net_vf}, torch threads "
        f"{config.torch_threads}"
    )
    print(f"PPO settings : {settings}")
    print(
        f"single-seat  : {ref:8,.0f} learner steps/s  ({config.n_envs} SubprocVecEnv, "
        f"opponents {args.opponent})"
    )
    print(
        f"self-play    : {ours:8,.0f} learner steps/s  (batch {args.batch}, {size} decisions "
        f"per rollout, {share:.0%} of the time collecting)"
    )
    print(f"ratio        : {ours / ref:8.2f}x")


if __name__ == "__main__":
    main()
