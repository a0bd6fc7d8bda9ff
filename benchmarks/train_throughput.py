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

Each figure is decisions over whole updates after a warm-up run (numba compilation, torch's
first calls), per wall-clock second and per CPU second of this process; the two are measured
``--repeats`` times, alternately, and the best of each is kept (as ``timeit`` does: what a busy
machine adds is noise, never speed). The ratio ``services / loop`` is the cost of the run
services (1.00: none). On a machine busy with other work, read the CPU figures: they depend far
less on the load than the wall-clock ones.

    python benchmarks/train_throughput.py [--opponent greedy] [--updates 4] [--repeats 3]
        [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch as th


def timed(work, *args, **kwargs) -> tuple[Any, float, float]:
    """``work(*args, **kwargs)``, and its wall and CPU (this process, every thread) seconds."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = work(*args, **kwargs)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def loop(config, updates: int) -> tuple[int, float, float]:
    """Decisions, wall and CPU seconds of ``updates + 1`` updates of the bare loop, after a
    warm-up update."""
    from odin_lab.training.model import build_model
    from odin_lab.training.pool import OpponentPool
    from odin_lab.training.selfplay import train_selfplay

    ppo = config.algo_config
    model = build_model(config)
    pool = OpponentPool(config.opponents, config.game.players, seed=config.seed)
    size = ppo.n_steps * ppo.n_envs
    common = dict(batch=config.selfplay_batch, rollout_decisions=size, progress=False, pool=pool)
    train_selfplay(model, config.game, size, seed=0, **common)
    stats, wall, cpu = timed(
        train_selfplay, model, config.game, size * (updates + 1), seed=1, **common
    )
    return stats.decisions, wall, cpu


def services(config, updates: int) -> tuple[int, float, float]:
    """Decisions, wall and CPU seconds of ``train()`` in steady state: two fresh runs, of one
    update and of ``updates + 1``; the differences of their decisions and of their times (what a
    run costs once, to start and to end, cancels out)."""
    from dataclasses import replace

    from odin_lab.training import train
    from odin_lab.training.checkpoints import checkpoint_step

    size = config.algo_config.n_steps * config.algo_config.n_envs
    quiet = dict(eval_every=0, checkpoint_every=10**9)
    done = []
    for name, total in (("short", size), ("long", size * (updates + 1))):
        path, wall, cpu = timed(train, replace(config, name=name, total_steps=total, **quiet))
        done.append((checkpoint_step(path), wall, cpu))
        shutil.rmtree(Path(config.runs_dir) / name)  # the next repeat's run starts afresh
    (steps_a, wall_a, cpu_a), (steps_b, wall_b, cpu_b) = done
    return steps_b - steps_a, wall_b - wall_a, cpu_b - cpu_a


def main() -> None:
    from dataclasses import replace

    from odin_lab.training import make_config, train

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponent", default="greedy", help="agent playing the 3 other seats")
    parser.add_argument("--updates", type=int, default=4, help="timed updates per measurement")
    parser.add_argument("--repeats", type=int, default=3, help="measurements of each, alternated")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as runs:
        config = make_config("ppo", runs_dir=runs, opponents=[args.opponent])
        ppo = config.algo_config
        th.set_num_threads(config.torch_threads)
        print(
            f"PPO settings  : {ppo.n_steps * ppo.n_envs} decisions per update, minibatch "
            f"{ppo.batch_size}, epochs {ppo.n_epochs}, pi {ppo.net_pi}, vf {ppo.net_vf}, "
            f"{config.selfplay_batch} games, torch threads {config.torch_threads}; "
            f"opponents 3 x {args.opponent}"
        )
        size = ppo.n_steps * ppo.n_envs
        warm = dict(eval_every=0, checkpoint_every=10**9, name="warm", total_steps=size)
        train(replace(config, **warm))  # numba's compilation, torch's first calls
        best = {"loop": (0.0, 0.0), "run services": (0.0, 0.0)}
        for repeat in range(args.repeats):
            for name, measure in (("loop", loop), ("run services", services)):
                steps, wall, cpu = measure(config, args.updates)
                rates = (steps / wall, steps / cpu)
                best[name] = tuple(map(max, best[name], rates))
                print(
                    f"{name:<13} {repeat + 1}: {rates[0]:7,.0f} learner steps/s wall-clock, "
                    f"{rates[1]:7,.0f} per CPU second",
                    flush=True,
                )
    (loop_wall, loop_cpu), (full_wall, full_cpu) = best["loop"], best["run services"]
    print(f"best of {args.repeats}    : loop {loop_wall:,.0f} / {loop_cpu:,.0f} (wall / CPU), "
          f"run services {full_wall:,.0f} / {full_cpu:,.0f}")  # fmt: skip
    print(
        f"services / loop: {full_wall / loop_wall:5.2f} wall-clock, {full_cpu / loop_cpu:5.2f} CPU"
    )
    if args.json:
        figures = {
            "benchmark": "train_throughput",
            "opponent": args.opponent,
            "updates": args.updates,
            "repeats": args.repeats,
            "loop_steps_per_s": loop_wall,
            "services_steps_per_s": full_wall,
            "ratio": full_wall / loop_wall,
            "loop_steps_per_cpu_s": loop_cpu,
            "services_steps_per_cpu_s": full_cpu,
            "cpu_ratio": full_cpu / loop_cpu,
            "command": "python benchmarks/train_throughput.py "
            f"--opponent {args.opponent} --updates {args.updates} --repeats {args.repeats}",
        }
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
