"""The search's labels per second: in one process, on local worker processes and as Ray tasks.

    python benchmarks/label_throughput.py [--decisions 200] [--rollouts 512] [--playout planner]
                                          [--seed 0] [--ray ADDRESS] [--json PATH]

``--decisions`` decisions of ``dmc_one`` against three ``planner`` (``labels.game_decisions``:
the ``TOP`` candidates ``dmc_one`` values most, as ``research/teacher_fit.py`` draws them) are
searched in the tasks of ``labels.relabel`` (``labels.PART`` decisions, ``--rollouts``
``--playout`` playouts each) four ways (:class:`odin_lab.training.searches.Searches`): in this
process; on 2 local worker processes; as Ray tasks on a local Ray of 2 CPUs, or on the cluster
at ``--ray``; and as Ray tasks of one playout a decision, whose time is mostly the cost of a
task itself. The pools' start and their workers' first tasks are not timed. Each line gives
labels per second of wall clock; the one process also per CPU second (a figure that holds when
other jobs share the cores), and Ray the CPU time this process, the driver, spends per task:
the most tasks a second one driver can hand out, whatever the cluster.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from agents.dmc import BUNDLED_DMC_ONE
from agents.search import TOP
from odin_env.seeding import spawn_seed
from odin_lab.cli import shell_command
from odin_lab.evaluation.distributed import SLOW_START, connect
from odin_lab.training import labels
from odin_lab.training.searches import Searches, search_rows

TABLE = [f"dmc:{BUNDLED_DMC_ONE}", "planner", "planner", "planner"]
STARTS = 3
"""Times ``connect`` (itself two starts) is called before Ray's start-up failure is raised: on
a busy machine its node misses Ray's fixed 30 s wait again and again."""


def started(address: str) -> int:
    """The CPUs of the Ray at ``address``, connected (a local one of 2 CPUs)."""
    import ray

    for start in range(1, STARTS + 1):
        try:
            return connect(address, 2)
        except Exception as error:
            if SLOW_START not in str(error) or start == STARTS:
                raise
            ray.shutdown()  # the processes of the start that missed the wait
    raise AssertionError("unreachable")


def search_tasks(decisions: list, playout: str, rollouts: int) -> list:
    """The tasks ``labels.relabel`` hands out for ``decisions`` (seed 1, no cache)."""
    rows = [
        (o, labels.candidate_mask(c), spawn_seed(1, k)) for k, (o, c, _) in enumerate(decisions)
    ]
    return [
        (playout, rollouts, rows[i : i + labels.PART]) for i in range(0, len(rows), labels.PART)
    ]


def timed(searches: Searches, tasks: list) -> dict:
    """Wall and this process's CPU seconds of the searches of ``tasks``."""
    wall, cpu = time.perf_counter(), time.process_time()
    found = sum(len(scores) for scores in searches.map(search_rows, tasks))
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"labels": found, "wall_s": wall, "cpu_s": cpu, "labels_per_s": found / wall}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--decisions", type=int, default=200)
    parser.add_argument("--rollouts", type=int, default=512)
    parser.add_argument("--playout", default="planner")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--ray", default="local", help="the cluster's address (default: a local Ray of 2 CPUs)"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    cpus = started(args.ray)  # first: a start that fails costs no measurement
    # One playout a decision: the decisions drawn cheaply, searched below.
    drawn = labels.game_decisions(TABLE, args.decisions, args.seed, TOP, args.playout, 1, 1)
    tasks = search_tasks(drawn, args.playout, args.rollouts)
    quick = search_tasks(drawn, args.playout, 1)  # what a task costs, besides its searches
    rows = {}
    with Searches(1) as one:
        rows["one process"] = timed(one, tasks)
    with Searches(2) as two:
        timed(two, quick)  # the workers started, their kernels loaded
        rows["2 local workers"] = timed(two, tasks)
    ray = Searches(ray=args.ray)
    timed(ray, quick)  # Ray's workers started, their kernels loaded
    rows[f"Ray tasks, {cpus} CPUs"] = timed(ray, tasks)
    rows["Ray tasks of 1 playout"] = timed(ray, quick)
    for name, row in rows.items():
        row["driver_cpu_s_per_task"] = row["cpu_s"] / len(tasks) if name.startswith("Ray") else None
        extra = ""
        if row["driver_cpu_s_per_task"] is not None:
            extra = f", driver {1e3 * row['driver_cpu_s_per_task']:.1f} ms CPU a task"
        elif name == "one process":
            extra = f", {row['labels'] / row['cpu_s']:.2f} a CPU second"
        print(f"{name:<24} {row['labels_per_s']:8.2f} labels/s ({row['wall_s']:.1f} s){extra}")
    if args.json:
        report = {
            "command": shell_command("benchmarks/label_throughput.py"),
            "table": "dmc_one, planner, planner, planner",
            "top": TOP,
            "playout": args.playout,
            "rollouts": args.rollouts,
            "decisions_a_task": labels.PART,
            "ways": [{"way": name, **row} for name, row in rows.items()],
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
