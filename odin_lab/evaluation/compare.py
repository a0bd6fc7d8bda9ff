"""Two agents compared on the same games (``evaluate.py compare``): the paired difference.

Each of the two agents plays a rotated-seat tournament in one seat against the same players in
the others, at the same seed: the deals, and every seat's rotation, are the same in both, so the
games differ only by who sits in that seat (and by what the others do in answer). The difference
of the two agents' win shares is then taken deal by deal (each deal's share over its rotations),
which removes the luck of the deal that two separate tournaments would carry: its standard error
over the deals is usually far smaller than either win share's interval. The two tournaments are
ordinary ones, written under ``out/first`` and ``out/second`` (each resumable, and readable by
every tool that reads a tournament); ``compare.json`` holds the comparison.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from odin_env.rules import Config
from odin_lab.evaluation import stats
from odin_lab.evaluation.limits import MAX_RECORDS_BYTES
from odin_lab.evaluation.names import short_names
from odin_lab.evaluation.records import config_dict, load_records
from odin_lab.evaluation.studies import deals_for, tournament
from odin_lab.evaluation.tournament import GameRecord
from odin_lab.files import write_atomic

HALVES = ("first", "second")
"""The folders, under ``out``, of the two agents' tournaments."""


def compare(
    agents: Sequence[str],
    against: Sequence[str],
    config: Config,
    games: int,
    seed: int,
    out: Path,
    workers: int = 1,
    resume: bool = False,
    **common,
) -> tuple[dict, str]:
    """Play ``agents[0]`` and then ``agents[1]`` in one seat, ``against`` in the others (one spec
    a seat), ``games`` games each at ``seed``; write both tournaments and ``compare.json`` under
    ``out``; return the comparison and its table. ``resume``: a half whose tournament is complete
    in ``out`` is read, not played again; a partial one goes on (:func:`studies.tournament`);
    ``common``: :func:`studies.tournament`'s ``progress``, ``engine``, ``ray``, ``provenance``.
    ``resume`` with no tournament of the first agent in ``out``: ``ValueError``, before anything
    is played or written (as a tournament's ``--resume`` with nothing to resume). One deal: no
    standard error (``difference_se`` None; it needs two deals)."""
    first_half = Path(out) / HALVES[0] / "tournament.json"
    if resume and not first_half.is_file():
        raise ValueError(
            f"--resume: {first_half} does not exist: nothing to resume; start "
            "afresh without --resume"
        )
    if not resume:  # a comparison of earlier halves must not stand beside new ones
        (Path(out) / "compare.json").unlink(missing_ok=True)
    shares = []
    for half, spec in zip(HALVES, agents, strict=True):
        where, table = Path(out) / half, [spec, *against]
        kept = _kept(where, table, config, games, seed) if resume else None
        if kept is None:
            partial = resume and (where / "tournament.json").is_file()
            tournament(table, config, games, seed, where, workers, resume=partial, **common)
            kept = load_records(where / "tournament.json", MAX_RECORDS_BYTES).games
        shares.append(deal_shares(kept))
    first, second = shares
    if first.keys() != second.keys():
        raise ValueError(f"the two tournaments under {out} played other deals: play them again")
    deals = sorted(first)
    a, b = (np.array([half[d] for d in deals]) for half in shares)
    difference = b - a
    error = float(difference.std(ddof=1) / math.sqrt(len(deals))) if len(deals) > 1 else None
    rotations = config.players
    summary = {
        "study": "compare",
        "agents": list(agents),
        "against": list(against),
        "players": config.players,
        "seed": seed,
        "deals": len(deals),
        "games": len(deals) * rotations,
        "win": [float(a.mean()), float(b.mean())],
        "ci": [list(stats.wilson(x.sum() * rotations, len(deals) * rotations)) for x in (a, b)],
        "difference": float(difference.mean()),
        "difference_se": error,
    }
    write_atomic(Path(out) / "compare.json", (json.dumps(summary, indent=2) + "\n").encode())
    return summary, compare_table(summary)


def _kept(where: Path, table: list[str], config: Config, games: int, seed: int):
    """The games of the whole tournament of ``table`` written in ``where``; None when there is
    none or only a partial one (which :func:`studies.tournament` goes on with, or refuses);
    ``ValueError`` for a whole tournament of other settings."""
    path = where / "tournament.json"
    if not path.is_file():
        return None
    kept = load_records(path, MAX_RECORDS_BYTES)
    if kept.extra.get("partial"):
        return None
    ours = (table, config_dict(config), seed, deals_for(games, config.players))
    theirs = (
        list(kept.specs),
        config_dict(kept.config),
        kept.extra.get("seed"),
        kept.extra.get("deals"),
    )
    if ours != theirs:
        raise ValueError(
            f"{where} holds a tournament of other agents or settings than this comparison's: "
            "run without --resume to play it again, or give another --out"
        )
    return kept.games


def deal_shares(games: Sequence[GameRecord]) -> dict[int, float]:
    """The win share of agent 0 (the compared agent) in each deal, over its rotations."""
    kept: dict[int, list[float]] = {}
    for record in games:
        kept.setdefault(record.deal, []).append(stats.seat_shares(record)[record.agents.index(0)])
    return {deal: float(np.mean(values)) for deal, values in kept.items()}


def compare_table(summary: dict) -> str:
    """The readable terminal table of a comparison."""
    names = short_names(summary["agents"])
    width = max(14, *(len(name) + 2 for name in names))
    lines = [
        f"compare: {summary['games']} games each ({summary['deals']} deals x "
        f"{summary['players']} seat rotations), seed {summary['seed']}, the same games but for "
        f"one seat; the others: {' '.join(summary['against'])}",
        f"{'agent':<{width}}{'win rate':>9}  95% CI",
    ]
    for name, win, (low, high) in zip(names, summary["win"], summary["ci"]):
        lines.append(f"{name:<{width}}{win:>9.1%}  [{low:.1%}, {high:.1%}]")
    difference, error = summary["difference"], summary["difference_se"]
    if error is None or not math.isfinite(error):  # an older file's NaN too
        lines.append(
            f"{names[1]} minus {names[0]}: {100 * difference:+.1f} points (one deal: the "
            "standard error over the deals needs two deals)"
        )
        return "\n".join(lines)
    lines.append(
        f"{names[1]} minus {names[0]}: {100 * difference:+.1f} ± {100 * error:.1f} points "
        f"(standard error over the deals; 95%: {100 * (difference - 1.96 * error):+.1f} to "
        f"{100 * (difference + 1.96 * error):+.1f})"
    )
    return "\n".join(lines)


__all__ = ["HALVES", "compare", "compare_table", "deal_shares"]
