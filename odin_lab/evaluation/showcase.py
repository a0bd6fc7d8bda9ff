"""The showcase that ``make run`` runs (``evaluate.py showcase``): a tournament of the built-in
agents and a seat-effect table, written as one result."""

from __future__ import annotations

from pathlib import Path

from odin_env.rules import Config
from odin_lab.evaluation.results import Interrupted, results_folder
from odin_lab.evaluation.studies import seating, tournament
from odin_lab.files import write_atomic

SHOWCASE_FILES = ("tournament", "seating", "showcase.txt", "provenance.json")
"""What the showcase's folder holds."""


def showcase_agents() -> list[str]:
    """The built-in agents for ``make run``: the bundled PPO agent when it loads, then the
    heuristics strongest first, then random to fill four seats."""
    from agents import make
    from agents.heuristics import HEURISTICS

    specs = []
    try:
        make("ppo")
        specs.append("ppo")
    except Exception:  # noqa: BLE001 - no bundled model (or no torch): show the rest
        pass
    specs += list(reversed(list(HEURISTICS)))
    specs.append("random")
    return specs[:4] if len(specs) > 4 else specs


def showcase(out: Path, workers: int = 1, games: int = 800, seating_games: int = 600,
             seed: int = 0, progress: bool = True, ray: str | None = None,
             provenance: dict | None = None) -> str:  # fmt: skip
    """What ``make run`` shows: a tournament of the built-in agents and a seat-effect table.
    Returns the printed text (also written to ``showcase.txt``). Written as one result: Ctrl-C
    leaves an earlier showcase whole and raises :class:`~odin_lab.evaluation.results.Interrupted`
    (nothing kept: the showcase has no resume)."""
    specs = showcase_agents()
    config = Config(players=len(specs))
    try:
        with results_folder(out, SHOWCASE_FILES, provenance, hold=False) as stage:
            _, table = tournament(
                specs, config, games, seed, stage / "tournament", workers, progress, ray=ray
            )
            # greedy's games take this process a few seconds, less than starting workers would.
            _, seats = seating(
                "greedy", [config.players], ["rotate", "winner"], seating_games, seed,
                stage / "seating", config, 1, progress, ray,
            )  # fmt: skip
            text = f"{table}\n\n{seats}\n"
            write_atomic(stage / "showcase.txt", text.encode())
    except KeyboardInterrupt:
        raise Interrupted("") from None
    return text
