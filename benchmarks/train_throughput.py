"""Learner decisions per second of PPO training, 4 players against heuristic opponents.

Two measurements in the same run, with ``--opponent`` (default ``greedy``) in the 3 other seats
and PPO's default settings (legal-set policy, 1,024-sample minibatches, 4 epochs, one torch
thread, ``selfplay_batch`` games in lockstep on the batched engine):

- ``loop``: :func:`odin_lab.training.selfplay.train_selfplay`, the bare collect-and-update loop
  (what ``train.py`` ran before the run services existed);
- ``run services``: ``train.py``'s own path, :func:`odin_lab.training.train` with
  :class:`odin_lab.training.ppo.PPOLearner` (progress bar, TensorBoard, snapshots; evaluations
  off, one checkpoint at the end), in steady state (a run's fixed costs to start and end left
  out).

Each figure is wall time over whole updates after one warm-up update (numba compilation). The
ratio ``services / loop`` is the cost of the run services (1.00: none).

    python benchmarks/train_throughput.py [--opponent greedy] [--updates 4] [--json PATH]

Timings on a shared machine are noisy: run it when nothing else is busy.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch as th


def loop(config, updates: int) -> float:
    """Learner decisions per second of the bare loop."""
    from odin_lab.training.model import build_model
    from odin_lab.training.pool import OpponentPool
    from odin_lab.training.selfplay import train_selfplay

    ppo = config.algo_config
    model = build_model(config)
    pool = OpponentPool(config.opponents, config.game.players, seed=config.seed)
    size = ppo.n_steps * ppo.n_envs
    common = dict(batch=config.selfplay_batch, rollout_decisions=size, progress=False, pool=pool)
    train_selfplay(model, config.game, size, seed=0, **common)
    stats = train_selfplay(model, config.game, size * (updates + 1), seed=1, **common)
    return stats.steps_per_s


def services(config, updates: int) -> float:
    """Learner decisions per second of ``train()`` in steady state: two fresh runs, of one update
    and of ``updates + 1``, after a warm-up run; the difference of their decisions over the
    difference of their times (what a run costs once, to start and to end, cancels out)."""
    from dataclasses import replace

    from odin_lab.training import train
    from odin_lab.training.checkpoints import checkpoint_step

    size = config.algo_config.n_steps * config.algo_config.n_envs
    quiet = dict(eval_every=0, checkpoint_every=10**9)
    train(replace(config, name="warm", total_steps=size, **quiet))
    done = []
    for name, total in (("short", size), ("long", size * (updates + 1))):
        start = time.perf_counter()
        path = train(replace(config, name=name, total_steps=total, **quiet))
        done.append((checkpoint_step(path), time.perf_counter() - start))
    (short_steps, short_s), (long_steps, long_s) = done
    return (long_steps - short_steps) / (long_s - short_s)


def main() -> None:
    from odin_lab.training import make_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponent", default="greedy", help="agent playing the 3 other seats")
    parser.add_argument("--updates", type=int, default=4, help="timed updates per measurement")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as runs:
        config = make_config(runs_dir=runs, opponents=[args.opponent])
        ppo = config.algo_config
        th.set_num_threads(config.torch_threads)
        print(
            f"PPO settings  : {ppo.n_steps * ppo.n_envs} decisions per update, minibatch "
            f"{ppo.batch_size}, epochs {ppo.n_epochs}, pi {ppo.net_pi}, vf {ppo.net_vf}, "
            f"{config.selfplay_batch} games, torch threads {config.torch_threads}; "
            f"opponents 3 x {args.opponent}"
        )
        bare = loop(config, args.updates)
        print(f"loop          : {bare:7,.0f} learner steps/s")
        full = services(config, args.updates)
        print(f"run services  : {full:7,.0f} learner steps/s")
        print(f"services / loop: {full / bare:5.2f}")
    if args.json:
        figures = {
            "benchmark": "train_throughput",
            "opponent": args.opponent,
            "updates": args.updates,
            "loop_steps_per_s": bare,
            "services_steps_per_s": full,
            "ratio": full / bare,
            "command": "python benchmarks/train_throughput.py "
            f"--opponent {args.opponent} --updates {args.updates}",
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
