"""Evaluation speed: games per second of a tournament of four ``greedy`` players, with 1 and 2
worker processes (4 players, threshold 15, rotated seats).

    python benchmarks/eval_throughput.py [--games 400] [--seed 0]

The 2-worker figure includes the start-up of the worker processes.
"""

from __future__ import annotations

import argparse
import time

from agents.tournament import play_tournament
from odin_env.rules import Config


def games_per_second(workers: int, games: int, seed: int) -> float:
    """Games per second of ``greedy`` x4 on ``games`` games with ``workers`` processes."""
    config = Config(players=4, threshold=15)
    start = time.perf_counter()
    records = play_tournament(
        ["greedy"] * 4, config, games // 4, seed, workers=workers, progress=False
    )
    return len(records) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--games", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    one = games_per_second(1, args.games, args.seed)
    two = games_per_second(2, args.games, args.seed)
    print(f"greedy x4, {args.games} games: 1 worker {one:.1f} games/s, "
          f"2 workers {two:.1f} games/s (x{two / one:.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
