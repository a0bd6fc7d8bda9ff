"""The Goat study: what the Grumpy Goat (RULES G1-G5) changes in a game, at every table size.

For each player count, the same agent in every seat plays ``games`` seeded games without the
Goat and ``games`` with it (no seat rotation: every seat holds the same agent). Per cell:

- **hands per game**: the mean and its Student-t 95% interval;
- **the seat advantage**: the win share of the game's first leader (ties shared), with its
  Wilson interval, against the fair share ``1/n``;
- **the Goat's holder** (with the Goat only): the share of hands won (gone out of) by the seat
  the Goat was dealt to, over every hand of every game, with its Wilson interval, against
  ``1/n``; and the share of the hands at whose end the Goat was still in a hand (costing 5, G4);
- **the winner's and the loser's totals**: the mean lowest and highest final total of a game,
  each with its t interval.

:func:`goat_study` writes ``goat.json``, ``goat.csv`` and ``goat.png`` (and ``.pdf``) as the
other studies do (:mod:`odin_lab.evaluation.studies`: one run per folder, written beside it and
moved into place; each row saved as it finishes, marked partial; ``--resume``);
``evaluate.py goat`` runs it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from odin_env.rules import Config
from odin_lab.evaluation import figures, stats
from odin_lab.evaluation.names import labels
from odin_lab.evaluation.records import config_dict, goat_hands
from odin_lab.evaluation.results import results_folder
from odin_lab.evaluation.rows import play_rows, resumed_rows
from odin_lab.evaluation.studies import _interval, write_study
from odin_lab.evaluation.tournament import GameRecord, play_tournament

GOAT_FILES = ("goat.json", "goat.csv", "goat.png", "goat.pdf", "provenance.json")
"""What the Goat study's folder holds."""


def goat_study(
    agent: str,
    players: Sequence[int],
    games: int,
    seed: int,
    out: Path,
    base: Config,
    workers: int = 1,
    progress: bool = True,
    ray: str | None = None,
    provenance: dict | None = None,
    resume: bool = False,
) -> tuple[dict, str]:
    """Play the study (module docstring) and write its files under ``out``; return the
    summary and a readable table. The deals of a player count are the seeded deals of
    ``seed`` (a game with the Goat deals from a deck with it, so the two cells share the seed,
    not the cards). Each row is saved as it finishes (``"partial": true``, no figure;
    :mod:`odin_lab.evaluation.rows`): Ctrl-C keeps the rows finished and raises
    :class:`~odin_lab.evaluation.results.Interrupted` saying so; ``resume=True`` continues a
    partial study of the same settings."""
    out = Path(out)
    plan = [{"players": n, "goat": goat} for n in players for goat in (False, True)]

    def play(row: dict) -> dict:
        config = replace(base, players=row["players"], colours=None, goat=row["goat"])
        # Every seat holds the same agent, so rotating seats would replay the same games.
        records = play_tournament(
            [agent] * config.players,
            config,
            games,
            seed,
            rotate=False,
            workers=workers,
            progress=progress,
            ray=ray,
        )
        return goat_cell(records, config)

    def save(cells: list[dict], partial: bool, stopping: bool) -> None:
        summary = _summary(cells, agent, base, seed, games, partial=partial)
        with results_folder(out, GOAT_FILES, provenance, interrupted=stopping) as stage:
            _write_files(stage, summary)

    expected = _summary([], agent, base, seed, games)
    done = resumed_rows(out / "goat.json", expected, plan, "cells") if resume else []
    summary = _summary(play_rows(plan, play, save, done), agent, base, seed, games)
    return summary, goat_table(summary)


def goat_cell(records: Sequence[GameRecord], config: Config) -> dict:
    """One row of the study from the games of one config (module docstring)."""
    n = config.players
    hands, hands_low, hands_high = stats.mean_interval([len(r.hands) for r in records])
    leader = stats.seat_win_rates(records, from_leader=True)[0]
    cell = {
        "players": n,
        "goat": config.goat,
        "games": len(records),
        "mean_hands": hands,
        "hands_ci_low": hands_low,
        "hands_ci_high": hands_high,
        "leader_win_rate": leader["win_rate"],
        "leader_ci_low": leader["ci_low"],
        "leader_ci_high": leader["ci_high"],
        "fair_share": 1 / n,
    }
    for name, pick in (("winner", min), ("loser", max)):
        mean, low, high = stats.mean_interval([pick(r.totals) for r in records])
        cell.update({f"{name}_total": mean, f"{name}_ci_low": low, f"{name}_ci_high": high})
    goat_keys = [
        f"{name}_{k}" for name in ("holder", "goat_left") for k in ("rate", "ci_low", "ci_high")
    ]
    cell.update(dict.fromkeys([*goat_keys, "hands"]))  # None (empty in the CSV) without the Goat
    if config.goat:
        won = left = played = 0
        for record in records:
            for (holder, kept), penalties in zip(goat_hands(record, config), record.hands):
                played += 1
                won += penalties[holder] == 0
                left += kept
        for name, count in (("holder", won), ("goat_left", left)):
            low, high = stats.wilson(count, played)
            cell.update(
                {f"{name}_rate": count / played, f"{name}_ci_low": low, f"{name}_ci_high": high}
            )
        cell["hands"] = played
    return cell


def _summary(
    cells: list[dict], agent: str, base: Config, seed: int, games: int, partial: bool = False
) -> dict:
    summary = {
        "study": "goat",
        "agent": agent,
        "config": config_dict(replace(base, goat=False)),
        "seed": seed,
        "games_per_cell": games,
        "cells": cells,
    }
    if partial:
        summary["partial"] = True
    return summary


def _write_files(stage: Path, summary: dict) -> None:
    write_study(stage, "goat", summary, summary["cells"], figures.goat_figure)


def goat_table(summary: dict) -> str:
    """Readable table of the study: one row per player count, without and with the Goat."""
    agent = labels([summary["agent"]])[0]
    lines = [
        f"the Goat: {agent} in every seat, {summary['games_per_cell']} games per row; "
        "95% intervals (t for means, Wilson for rates)",
        f"{'players':>7} {'Goat':>4} {'hands':>6} {'[95% CI]':<13}{'leader %':>8} "
        f"{'[95% CI]':<13}{'fair':>5} {'holder %':>8} {'[95% CI]':<13}"
        f"{'winner':>6} {'loser':>6}",
    ]
    for c in summary["cells"]:
        held = _interval(c["holder_ci_low"], c["holder_ci_high"]) if c["goat"] else ""
        holder = f"{100 * c['holder_rate']:8.1f} {held:<13}" if c["goat"] else f"{'-':>8} {'':<13}"
        lines.append(
            f"{c['players']:>7} {'yes' if c['goat'] else 'no':>4} {c['mean_hands']:6.2f} "
            f"{_interval(c['hands_ci_low'], c['hands_ci_high'], 1.0, 2):<13}"
            f"{100 * c['leader_win_rate']:8.1f} "
            f"{_interval(c['leader_ci_low'], c['leader_ci_high']):<13}"
            f"{100 * c['fair_share']:5.1f} {holder}"
            f"{c['winner_total']:6.2f} {c['loser_total']:6.2f}"
        )
    return "\n".join(lines)


__all__ = ["GOAT_FILES", "goat_cell", "goat_study", "goat_table"]
