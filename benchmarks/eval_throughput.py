"""Evaluation speed: games per second of tournaments (4 players, threshold 15, rotated seats).

    python benchmarks/eval_throughput.py [--games 400] [--batched-games 4000] [--planner-games 200]
                                         [--seed 0] [--ray] [--json PATH]

Three lines: four ``greedy`` players on the single engine (one ``rules.Game`` at a time) with 1
and 2 worker processes (the 2-worker figure includes the start-up of the worker processes); the
same four ``greedy`` on the batched engine (``odin_env.batched``, up to 1,024 games at once, its
kernel a batch at a time), one worker; four ``random`` players on the single and the
batched engine, one worker each; four ``planner`` players on the single engine (its numba kernel,
``agents.batched_planner``, one row per decision) and on the batched engine (the same kernel a
batch at a time; the same games). The batched figures exclude the one-off loading of its compiled
kernels (done before the clock starts) and plays more games, so that its slots stay busy.
``--ray``: also the four ``greedy`` on the single engine as Ray tasks on a local Ray of 2 CPUs
(its start-up and the workers' first chunk excluded).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from odin_env.rules import Config
from odin_lab.cli import shell_command
from odin_lab.evaluation.tournament import play_tournament

CONFIG = Config(players=4, threshold=15)


def games_per_second(
    spec: str, games: int, seed: int, workers: int = 1, engine: str = "single", ray=None
) -> float:
    """Games per second of ``spec`` x4 on ``games`` games with ``workers`` processes (or Ray
    tasks on the cluster ``ray``)."""
    start = time.perf_counter()
    records = play_tournament(
        [spec] * 4,
        CONFIG,
        games // 4,
        seed,
        workers=workers,
        progress=False,
        engine=engine,
        ray=ray,
    )
    return len(records) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--batched-games", type=int, default=4000)
    parser.add_argument("--planner-games", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--ray", action="store_true", help="also on a local Ray of 2 CPUs")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    rows = []  # the figures, for --json

    def row(agents: str, engine: str, games: int, rate: float, note: str = "") -> None:
        rows.append(
            {"agents": agents, "engine": engine, "games": games, "games_per_s": rate, "note": note}
        )

    one = games_per_second("greedy", args.games, args.seed)
    two = games_per_second("greedy", args.games, args.seed, workers=2)
    print(
        f"greedy x4, {args.games} games: 1 worker {one:.1f} games/s, "
        f"2 workers {two:.1f} games/s (x{two / one:.2f})"
    )
    row("greedy x4", "single, 1 worker", args.games, one)
    row("greedy x4", "single, 2 workers", args.games, two, "with the workers' start-up")
    if args.ray:
        from odin_lab.evaluation.distributed import connect

        connect("local", 2)
        games_per_second("greedy", 64, args.seed, ray="local")  # workers up, agents built
        on_ray = games_per_second("greedy", args.games, args.seed, ray="local")
        print(
            f"greedy x4, {args.games} games as Ray tasks, 2 CPUs: {on_ray:.1f} games/s "
            f"(x{on_ray / one:.2f})"
        )
        row("greedy x4", "single, Ray tasks on 2 CPUs", args.games, on_ray)
    games_per_second("random", 4, args.seed, engine="batched")  # loads the kernels
    greedy = games_per_second("greedy", args.batched_games, args.seed, engine="batched")
    print(
        f"greedy x4, batched engine {greedy:.1f} games/s ({args.batched_games} games) "
        f"(x{greedy / one:.1f} the single engine)"
    )
    row("greedy x4", "batched", args.batched_games, greedy)
    single = games_per_second("random", args.games, args.seed)
    batched = games_per_second("random", args.batched_games, args.seed, engine="batched")
    print(
        f"random x4: single engine {single:.1f} games/s ({args.games} games), "
        f"batched engine {batched:.1f} games/s ({args.batched_games} games) "
        f"(x{batched / single:.1f})"
    )
    row("random x4", "single", args.games, single)
    row("random x4", "batched", args.batched_games, batched)
    slow = games_per_second("planner", args.planner_games, args.seed)
    games_per_second("planner", 4, args.seed, engine="batched")  # compiles the kernel
    fast = games_per_second("planner", 10 * args.planner_games, args.seed, engine="batched")
    print(
        f"planner x4: single engine {slow:.1f} games/s ({args.planner_games} games), "
        f"batched engine {fast:.1f} games/s ({10 * args.planner_games} games) "
        f"(x{fast / slow:.1f})"
    )
    row("planner x4", "single", args.planner_games, slow)
    row("planner x4", "batched", 10 * args.planner_games, fast)
    if args.json:
        command = shell_command("benchmarks/eval_throughput.py")
        args.json.parent.mkdir(parents=True, exist_ok=True)
        report = {"command": command, "players": CONFIG.players, "threshold": CONFIG.threshold,
                  "tournaments": rows}  # fmt: skip
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
