"""What the examples share: their flags, and the win rate of a trained policy against
``random`` measured by the lab's tournament code (``odin_lab.evaluation.tournament.play_deals``:
seeded deals, each played from every seat; ``odin_lab.evaluation.stats``: the win rate with its 95%
Wilson interval)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import numpy as np

from agents import make
from odin_env.rules import Config
from odin_lab import cli
from odin_lab.evaluation import stats
from odin_lab.evaluation.tournament import play_deals

GAME = ("players", "threshold")
"""The game settings the examples take as flags (``odin_env.rules.Config`` fields)."""


def parse(
    doc: str, argv: list[str] | None = None, save: str = ""
) -> tuple[argparse.Namespace, Config]:
    """The examples' flags: ``--smoke`` (a few seconds: what the tests run), ``--seed``,
    ``--deals``, the game settings ``GAME``, and ``--save PATH`` when ``save`` says what it
    saves. Bad input exits 2 with one line."""
    p = cli.Parser(description=doc.split("\n\n")[0])
    p.add_argument("--smoke", action="store_true", help="a tiny run of a few seconds (tests)")
    if save:
        p.add_argument("--save", type=Path, metavar="PATH", help=save)
    p.add_argument("--seed", type=int, default=0, help="seed of training and evaluation (>= 0)")
    p.add_argument("--deals", type=int, help="evaluation deals, each played from every seat")
    names = cli.add_fields(p, Config, skip={f for f in Config.__dataclass_fields__} - set(GAME))
    args = p.parse_args(argv)
    if args.seed < 0:
        p.error(f"--seed must be an integer >= 0; got {args.seed}")
    if args.deals is not None and args.deals < 1:
        p.error(f"--deals must be >= 1; got {args.deals}")
    try:
        return args, Config(**cli.given(args, names))
    except ValueError as e:
        p.error(str(e))


class PolicyAgent:
    """A lab agent (``act(observation, action_mask)``) around a trained policy: ``scores``
    maps one observation to one score per action; the agent plays the best legal one."""

    def __init__(self, name: str, scores: Callable[[np.ndarray], np.ndarray]):
        self.name, self.scores = name, scores

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        scores = np.asarray(self.scores(observation), dtype=np.float64)
        return int(np.where(action_mask.astype(bool), scores, -np.inf).argmax())


def report_win_rate(agent, config: Config, deals: int, seed: int) -> dict:
    """Play ``agent`` against ``players - 1`` random agents on ``deals`` seeded deals (each from
    every seat, on deals the training never saw: seeds from ``seed + 1_000_000``) and print
    ``win rate against random: W% [LO, HI] ...``; return the agent's summary row."""
    agents = [agent] + [make("random") for _ in range(config.players - 1)]
    records = play_deals(agents, config, deals, seed=seed + 1_000_000, engine="single")
    names = [agent.name] + ["random"] * (config.players - 1)
    row = stats.agent_summary(records, names)[0]
    print(
        f"win rate against random: {100 * row['win_rate']:.1f}% "
        f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}] (95% Wilson interval; "
        f"{row['games']} games, {config.players} players, fair share {100 / config.players:.1f}%)",
        flush=True,
    )
    return row
