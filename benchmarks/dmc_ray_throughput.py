"""How far deep Monte Carlo on Ray actors scales (``train.py --algo dmc --ray --actors N``), 4
players against ``--opponent`` (default ``greedy``), at DMC's default settings (4,096 decisions
per update, 256 games per actor, minibatch 256, one epoch, network 256-256-128, one torch thread):

- ``learner``: the learner's update (:meth:`odin_lab.training.dmc.DMCLearner._update`) on one
  update's decisions, in wall and CPU seconds, as samples/s: the learner's ceiling, on
  ``--device`` (``cuda`` where there is one);
- ``one process``: collecting those decisions in the learner's process (torch's greedy), as
  decisions/s;
- ``ray, N actors``: an asynchronous run of ``--updates`` updates after a warm-up, on a local Ray
  of N CPUs: the learner's steps/s, the decisions/s each actor collected (from what arrived
  while the learner waited, and per CPU second of the actors' calls: the figure that holds on a
  shared machine), the share of the time the learner waited for them, and the mean weight lag.

    python benchmarks/dmc_ray_throughput.py [--actors 1 2] [--updates 4] [--device cpu]
                                            [--opponent greedy] [--json PATH]

Timings on a shared machine are noisy: run it when nothing else is busy, and say when not.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from odin_lab.cli import shell_command


def timed(call):
    wall, cpu = time.perf_counter(), time.process_time()
    out = call()
    return time.perf_counter() - wall, time.process_time() - cpu, out


def one_process(config, repeats: int) -> dict[str, float]:
    """Collecting one update's decisions and the update on them in this process, best of
    ``repeats`` after a warm-up."""
    from odin_lab.training.dmc import DMCLearner

    learner = DMCLearner(config)
    learner.start()
    settings = config.algo_config
    collect, update = [], []
    for k in range(repeats + 1):
        wall, cpu, batch = timed(
            lambda: learner.actors.turn(0).collect(settings.decisions_per_update, 0.05)
        )
        took = timed(lambda b=batch: learner._update(b))
        if k:  # the first: warm-up (numba, torch)
            collect.append((wall, cpu, len(batch)))
            update.append((took[0], took[1], len(batch)))
    best_collect = min(collect, key=lambda c: c[0] / c[2])
    best_update = min(update, key=lambda u: u[0] / u[2])
    return {
        "decisions": best_update[2],
        "collect_decisions_per_s": best_collect[2] / best_collect[0],
        "collect_cpu_s": best_collect[1],
        "update_wall_s": best_update[0],
        "update_cpu_s": best_update[1],
        "learner_samples_per_s": best_update[2] / best_update[0],
        "learner_samples_per_cpu_s": best_update[2] / best_update[1],
        "collect_decisions_per_cpu_s": best_collect[2] / best_collect[1],
    }


def on_ray(config, actors: int, updates: int) -> dict[str, float]:
    """An asynchronous run of ``updates`` updates on ``actors`` actors, after one warm-up
    update."""
    from odin_lab.training.dmc import DMCLearner

    config = replace(config, ray="local", actors=actors)
    config.run_dir.mkdir(parents=True, exist_ok=True)
    learner = DMCLearner(config)
    learner.start()
    try:
        learner.train_step()  # warm-up: the actors start and compile
        remote = learner.remote
        steps, waited, received = learner.steps, remote.seconds, remote.decisions
        cpu = remote.actor_cpu
        lags = []
        began = time.perf_counter()
        for _ in range(updates):
            lags.append(learner.train_step()["ray/weights_lag"])
        wall = time.perf_counter() - began
        return {
            "actors": actors,
            "learner_steps_per_s": (learner.steps - steps) / wall,
            "waiting_share": (remote.seconds - waited) / wall,
            "decisions_per_s_per_actor": (remote.decisions - received) / wall / actors,
            "decisions_per_actor_cpu_s": (remote.decisions - received) / (remote.actor_cpu - cpu),
            "weights_lag": float(np.mean(lags)),
        }
    finally:
        learner.close()


def main() -> None:
    import ray

    from odin_lab.evaluation.distributed import connect
    from odin_lab.training import make_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2], help="actor counts")
    parser.add_argument("--updates", type=int, default=4, help="timed updates per setting")
    parser.add_argument("--device", default="cpu", help="the learner's: cpu, cuda or auto")
    parser.add_argument("--opponent", default="greedy", help="agent playing the 3 other seats")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as runs:
        config = make_config(
            "dmc", runs_dir=runs, name="bench", opponents=[args.opponent], device=args.device
        )
        dmc = config.algo_config
        print(
            f"settings: {dmc.decisions_per_update} decisions per update, {config.selfplay_batch} "
            f"games per actor, minibatch {dmc.batch_size}, {dmc.epochs} epoch, net {dmc.net}, "
            f"opponents {args.opponent}, learner on {args.device}; {os.cpu_count()} CPUs, load "
            f"average {os.getloadavg()[0]:.2f} at the start"
        )
        local = one_process(config, repeats=2)
        print(
            f"learner         : {local['learner_samples_per_s']:8,.0f} samples/s, "
            f"{local['learner_samples_per_cpu_s']:,.0f} per CPU second (an update of "
            f"{local['decisions']:,} decisions: {local['update_wall_s']:.3f} s, "
            f"{local['update_cpu_s']:.3f} s CPU)"
        )
        print(
            f"one process     : {local['collect_decisions_per_s']:8,.0f} decisions/s collected, "
            f"{local['collect_decisions_per_cpu_s']:,.0f} per CPU second"
        )
        settings = [{"setting": "one process", **local}]
        connect("local", max(args.actors))
        for n in args.actors:
            got = on_ray(config, n, args.updates)
            print(
                f"ray, {n:2d} actors  : {got['learner_steps_per_s']:8,.0f} learner steps/s, "
                f"{got['decisions_per_s_per_actor']:,.0f} decisions/s per actor "
                f"({got['decisions_per_actor_cpu_s']:,.0f} per actor CPU second), learner waiting "
                f"{got['waiting_share']:.0%}, weights {got['weights_lag']:.1f} updates old"
            )
            settings.append({"setting": f"ray, {n} actors", **got})
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        if args.json:
            report = {
                "command": shell_command("benchmarks/dmc_ray_throughput.py"),
                "settings": settings,
            }
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2) + "\n")
        ray.shutdown()


if __name__ == "__main__":
    main()
