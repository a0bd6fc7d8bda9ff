"""The showcase that ``make run`` runs (``evaluate.py showcase``): a tournament of the lab's best
agents against its heuristics and a seat-effect table, written as one result."""

from __future__ import annotations

from pathlib import Path

from odin_env.rules import Config
from odin_lab.evaluation.results import Interrupted, results_folder
from odin_lab.evaluation.studies import seating, tournament
from odin_lab.files import write_atomic

SHOWCASE_FILES = ("tournament", "seating", "showcase.txt", "provenance.json")
"""What the showcase's folder holds."""


SHOWCASE_AGENTS = ("search", "dmc", "planner", "shaper")
"""The agents ``make run`` shows: the lab's strongest player, its strongest network, then its two
strongest heuristics (docs/agents.md). Every one plays from the core install."""


def showcase(
    out: Path,
    workers: int = 1,
    games: int = 200,
    seating_games: int | None = None,
    seed: int = 0,
    progress: bool = True,
    ray: str | None = None,
    provenance: dict | None = None,
) -> str:
    """What ``make run`` shows: a tournament of :data:`SHOWCASE_AGENTS` (``games`` games, seats
    rotated) and a seat-effect table of ``greedy`` (``seating_games`` a row; default three times
    ``games``, so that a small showcase is quick).
    Returns the printed text (also written to ``showcase.txt``). Written as one result: Ctrl-C
    leaves an earlier showcase whole and raises :class:`~odin_lab.evaluation.results.Interrupted`
    (nothing kept: the showcase has no resume)."""
    specs = list(SHOWCASE_AGENTS)
    seating_games = 3 * games if seating_games is None else seating_games
    config = Config(players=len(specs))
    try:
        with results_folder(out, SHOWCASE_FILES, provenance, hold=False) as stage:
            _, table = tournament(
                specs, config, games, seed, stage / "tournament", workers, progress, ray=ray
            )
            # greedy's games take this process a few seconds, less than starting workers would.
            _, seats = seating(
                "greedy",
                [config.players],
                ["rotate", "winner"],
                seating_games,
                seed,
                stage / "seating",
                config,
                workers=1,
                progress=progress,
                ray=ray,
            )
            text = f"{table}\n\n{seats}\n"
            write_atomic(stage / "showcase.txt", text.encode())
    except KeyboardInterrupt:
        raise Interrupted("") from None
    return text
