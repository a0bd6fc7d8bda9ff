"""The studies behind ``evaluate.py``: a tournament, the seating study and the thresholds study
(the showcase that ``make run`` runs is :mod:`odin_lab.evaluation.showcase`). Each one plays
games (:mod:`odin_lab.evaluation.tournament`), summarises them (:mod:`odin_lab.evaluation.stats`),
writes JSON, CSV and one figure (:mod:`odin_lab.evaluation.figures`, as PNG and PDF) under its
output folder and returns its summary and a readable table. The folder always describes one run
(:func:`odin_lab.evaluation.results.results_folder`): every file is written beside it first and
moved into place at the end, so an earlier result is replaced whole or left whole, also on a
full disk, and a Ctrl-C during the write waits for it. The work finished is written as the
study goes, marked ``"partial": true`` (a tournament's whole deals at most once a minute, a
study's rows as each finishes: :mod:`odin_lab.evaluation.rows`), so ``kill -9`` costs only the
work since; Ctrl-C writes it and raises a ``KeyboardInterrupt`` that says what was kept
(:class:`~odin_lab.evaluation.tournament.TournamentInterrupted`: a tournament;
:class:`~odin_lab.evaluation.results.Interrupted`: the others); ``resume=True`` continues a
partial result of the same settings.

Nothing written depends on the time or the number of workers, so a seeded study writes the same
JSON, CSV and figure bytes every time.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from odin_env.rules import Config
from odin_lab.evaluation import figures, stats
from odin_lab.evaluation.names import labels, short_names
from odin_lab.evaluation.records import (
    RECORDS_FORMAT,
    RECORDS_VERSION,
    config_dict,
    records_text,
)
from odin_lab.evaluation.results import results_folder
from odin_lab.evaluation.resume import Saver, partial_records
from odin_lab.evaluation.rows import play_rows, resumed_rows
from odin_lab.evaluation.tournament import (
    GameRecord,
    TournamentInterrupted,
    play_tournament,
)
from odin_lab.files import write_atomic

TOURNAMENT_FILES = ("tournament.json", "games.csv", "agents.csv", "tournament.png",
                    "tournament.pdf", "provenance.json")  # fmt: skip
"""What a tournament's folder holds (an earlier result's files a new one lacks are removed)."""
SEATING_FILES = ("seating.json", "seating.csv", "seating.png", "seating.pdf", "provenance.json")
THRESHOLDS_FILES = ("thresholds.json", "thresholds.csv", "thresholds.png", "thresholds.pdf",
                    "provenance.json")  # fmt: skip

# -- writing -----------------------------------------------------------------------------------


def write_json(path: Path, obj: object) -> None:
    write_atomic(path, (json.dumps(obj, indent=1, sort_keys=False) + "\n").encode())


def write_csv(path: Path, rows: Sequence[dict]) -> None:
    buf = io.StringIO()
    if rows:
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    write_atomic(path, buf.getvalue().encode())


def game_rows(records: Sequence[GameRecord], specs: Sequence[str]) -> list[dict]:
    """One CSV row per game: seed, who sat where, per-hand penalties, totals, winners."""
    names = labels(specs)
    return [
        {
            "deal": r.deal,
            "rotation": r.rotation,
            "seed": r.seed,
            "seats": " ".join(names[i] for i in r.agents),
            "first_leader": r.first_leader,
            "hand_penalties": ";".join("-".join(map(str, h)) for h in r.hands),
            "totals": "-".join(map(str, r.totals)),
            "winners": " ".join(names[r.agents[s]] for s in r.winners),
            "winner_seats": "-".join(map(str, r.winners)),
        }
        for r in records
    ]


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


def _interval(low: float, high: float, scale: float = 100.0, digits: int = 1) -> str:
    """An interval as the tables print it: ``[lo, hi]`` (never a symmetric "±": a Wilson
    interval is not symmetric)."""
    return f"[{scale * low:.{digits}f}, {scale * high:.{digits}f}]"


# -- tournament --------------------------------------------------------------------------------


def deals_for(games: int, players: int, rotate: bool = True) -> int:
    """Deals needed for at least ``games`` games: every deal is played ``players`` times when
    seats rotate."""
    if games < 1:
        raise ValueError(f"games must be >= 1; got {games}")
    return math.ceil(games / players) if rotate else games


def tournament(
    specs: Sequence[str],
    config: Config,
    games: int,
    seed: int,
    out: Path,
    workers: int = 1,
    progress: bool = True,
    engine: str = "auto",
    resume: bool = False,
    ray: str | None = None,
    provenance: dict | None = None,
) -> tuple[dict, str]:
    """Play a rotated-seat tournament; write ``tournament.json``, ``games.csv``,
    ``agents.csv`` and ``tournament.png`` under ``out``; return the summary and a table.
    ``engine``, ``ray``: see :func:`odin_lab.evaluation.tournament.play_tournament` (every study
    takes ``ray``: its games as Ray tasks, the same files).

    The deals finished are written as the run goes (``"partial": true`` in ``tournament.json``;
    at most once in :data:`~odin_lab.evaluation.resume.SAVE_EVERY_S` seconds), so ``kill -9``
    or a crash loses only the games since; Ctrl-C writes the deals finished (nothing when none
    finished) and re-raises :class:`TournamentInterrupted`; ``resume=True`` continues a partial
    result in ``out`` (same agents, settings and seed, every kept game replayed and checked,
    else ``ValueError``: :func:`odin_lab.evaluation.resume.partial_records`) and, once complete,
    writes the very files an uninterrupted run writes. ``provenance``: written as
    ``provenance.json`` with the result."""
    deals = deals_for(games, config.players)
    key = {"agents_specs": list(specs), "config": config_dict(config), "seed": seed, "deals": deals}
    done: list[GameRecord] = partial_records(Path(out), key) if resume else []
    start = len({r.deal for r in done})

    def keep(finished: list[GameRecord], stopping: bool = False) -> None:
        """The games kept and ``finished`` (whole deals) written as a partial result; a signal
        meanwhile waits for the write, and then stops the run unless it is ``stopping``."""
        if done or finished:
            kept, where = done + finished, Path(out)
            _write_tournament(kept, specs, config, seed, deals, where, provenance, True, stopping)

    try:
        records = done + (
            play_tournament(
                specs,
                config,
                deals,
                seed,
                workers=workers,
                progress=progress,
                engine=engine,
                start=start,
                ray=ray,
                on_deals=Saver(keep, config.players),
            )
            if start < deals
            else []
        )
    except TournamentInterrupted as stop:
        keep(stop.records, stopping=True)
        raise
    summary = _write_tournament(records, specs, config, seed, deals, Path(out), provenance)
    return summary, tournament_table(summary)


def _write_tournament(
    records: list[GameRecord],
    specs: Sequence[str],
    config: Config,
    seed: int,
    deals: int,
    out: Path,
    provenance: dict | None = None,
    partial: bool = False,
    stopping: bool = False,
) -> dict:
    """Write the tournament's files; ``partial``: some deals only (no figure); ``stopping``: for
    a run that is stopping (a signal during the write is then dropped, not delivered)."""
    agents = stats.agent_summary(records, specs)
    seats = stats.seat_win_rates(records)
    summary = {
        "study": "tournament",
        "agents_specs": list(specs),
        "config": config_dict(config),
        "seed": seed,
        "deals": deals,
        "games": len(records),
        "agents": agents,
        "seats": seats,
        "draw_rate": stats.draw_rate(records),
        "mean_hands": stats.mean_hands(records),
    }
    if partial:
        summary["partial"] = True
    with results_folder(out, TOURNAMENT_FILES, provenance, interrupted=stopping) as stage:
        _write_records_json(stage / "tournament.json", summary, records)
        write_csv(stage / "games.csv", game_rows(records, specs))
        write_csv(stage / "agents.csv", agents)
        if not partial:
            figures.save_figure(figures.tournament_figure(summary), stage / "tournament.png")
    return summary


def _write_records_json(path: Path, summary: dict, records: Sequence[GameRecord]) -> None:
    """``tournament.json``: a records file (``odin_lab.evaluation.records``, ``docs/records.md``)
    whose extra keys are the summary."""
    head = {"format": RECORDS_FORMAT, "version": RECORDS_VERSION}
    document = {**head, **summary, "game_records": [r.to_dict() for r in records]}
    write_atomic(path, records_text(document).encode())


def tournament_table(summary: dict) -> str:
    """The readable terminal table of a tournament summary."""
    c = summary["config"]
    width = max(14, *(len(a["agent"]) + 2 for a in summary["agents"]))
    lines = [
        f"tournament: {summary['games']} games ({summary['deals']} deals x {c['players']} seat "
        f"rotations), {c['players']} players, threshold {c['threshold']}, "
        f"first player {c['first_player']}, seed {summary['seed']}",
        f"{'agent':<{width}}{'win rate':>9}  {'95% CI':<15}{'total':>7}{'per hand':>9}"
        f"{'rating':>8}{'(mu)':>7}",
    ]
    for a in stats.ranked(summary["agents"]):
        lines.append(
            f"{a['agent']:<{width}}{_pct(a['win_rate']):>9}  "
            f"[{_pct(a['ci_low'])},{_pct(a['ci_high'])}] "
            f"{a['mean_total']:6.2f}{a['mean_penalty_per_hand']:9.2f}"
            f"{a['ordinal']:8.2f}{a['mu']:7.2f}"
        )
    seats = "  ".join(
        f"seat {s['seat']} {_pct(s['win_rate']).strip()} {_interval(s['ci_low'], s['ci_high'])}"
        for s in summary["seats"]
    )
    lines.append(f"per seat (95% CI): {seats}")
    lines.append(f"draws {_pct(summary['draw_rate'])}, {summary['mean_hands']:.2f} hands per game")
    return "\n".join(lines)


# -- seating -----------------------------------------------------------------------------------


def seating(
    agent: str,
    players: Sequence[int],
    rules: Sequence[str],
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
    """The same agent in every seat: win rate by position counted clockwise from the game's
    first leader, with 95% CIs and a chi-square test of no seat effect, for each player count
    and first-player rule. Writes ``seating.json``, ``seating.csv`` and ``seating.png``. Each
    row is saved as it finishes (``"partial": true``, no figure; :mod:`odin_lab.evaluation.rows`):
    Ctrl-C keeps the rows finished and raises :class:`~odin_lab.evaluation.results.Interrupted`
    saying so; ``resume=True`` continues a partial study of the same settings."""
    out = Path(out)
    plan = [{"players": n, "first_player": rule} for rule in rules for n in players]
    key = {
        "study": "seating",
        "agent": agent,
        "config": config_dict(base),
        "seed": seed,
        "games_per_cell": games,
    }

    def play(row: dict) -> dict:
        config = replace(
            base, players=row["players"], first_player=row["first_player"], colours=None
        )
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
        positions = stats.seat_win_rates(records, from_leader=True)
        test = stats.no_seat_effect([p["wins"] for p in positions])
        return {**row, "games": len(records), "positions": positions, **test}

    def save(cells: list[dict], partial: bool, stopping: bool) -> None:
        summary = {**key, "cells": cells, **({"partial": True} if partial else {})}
        with results_folder(out, SEATING_FILES, provenance, interrupted=stopping) as stage:
            _write_seating_files(stage, summary)

    done = resumed_rows(out / "seating.json", key, plan, "cells") if resume else []
    cells = play_rows(plan, play, save, done)
    summary = {**key, "cells": cells}
    return summary, seating_table(summary)


def _write_seating_files(stage: Path, summary: dict) -> None:
    cells = summary["cells"]
    write_json(stage / "seating.json", summary)
    write_csv(
        stage / "seating.csv",
        [
            {
                "players": c["players"],
                "first_player": c["first_player"],
                "position": p["seat"],
                "win_rate": p["win_rate"],
                "ci_low": p["ci_low"],
                "ci_high": p["ci_high"],
                "chi2": c["chi2"],
                "p": c["p"],
            }
            for c in cells
            for p in c["positions"]
        ],
    )
    if not summary.get("partial"):
        figures.save_figure(figures.seating_figure(summary), stage / "seating.png")


def seating_table(summary: dict) -> str:
    """Readable table of a seating study: one row per player count and rule."""
    agent = short_names([summary["agent"]])[0]
    lines = [
        f"seat effect: {agent} in every seat, {summary['games_per_cell']} games per "
        f"row; position 0 = the game's first leader, then clockwise",
        f"{'players':>7} {'rule':<7} {'chi2':>7} {'p':>9}  win rate % by position "
        f"[95% Wilson interval]",
    ]
    for c in summary["cells"]:
        rates = "  ".join(
            f"{100 * p['win_rate']:.1f} {_interval(p['ci_low'], p['ci_high'])}"
            for p in c["positions"]
        )
        lines.append(
            f"{c['players']:>7} {c['first_player']:<7} {c['chi2']:7.2f} {c['p']:9.2g}  {rates}"
        )
    return "\n".join(lines)


# -- thresholds --------------------------------------------------------------------------------


def thresholds(
    specs: Sequence[str],
    values: Sequence[int],
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
    """For each threshold: the first agent's win rate, the hands per game and the draw rate,
    each with its 95% interval (Wilson for the rates, Student t for the mean). Writes
    ``thresholds.json``, ``thresholds.csv`` and ``thresholds.png``. Each row is saved as it
    finishes (``"partial": true``, no figure; :mod:`odin_lab.evaluation.rows`): Ctrl-C keeps the
    rows finished and raises :class:`~odin_lab.evaluation.results.Interrupted` saying so;
    ``resume=True`` continues a partial study of the same settings."""
    out = Path(out)
    plan = [{"threshold": threshold} for threshold in values]

    def play(row: dict) -> dict:
        return _threshold_row(specs, row["threshold"], games, seed, base, workers, progress, ray)

    def save(rows: list[dict], partial: bool, stopping: bool) -> None:
        summary = _thresholds_summary(rows, specs, base, seed, partial)
        with results_folder(out, THRESHOLDS_FILES, provenance, interrupted=stopping) as stage:
            _write_thresholds_files(stage, summary)

    expected = _thresholds_summary([], specs, base, seed)
    done = resumed_rows(out / "thresholds.json", expected, plan, "rows") if resume else []
    rows = play_rows(plan, play, save, done)
    summary = _thresholds_summary(rows, specs, base, seed)
    return summary, thresholds_table(summary)


def _threshold_row(
    specs: Sequence[str],
    threshold: int,
    games: int,
    seed: int,
    base: Config,
    workers: int,
    progress: bool,
    ray: str | None,
) -> dict:
    """Play one threshold's games; its row."""
    config = replace(base, threshold=threshold)
    deals = deals_for(games, config.players)
    records = play_tournament(
        specs, config, deals, seed, workers=workers, progress=progress, ray=ray
    )
    first = stats.agent_summary(records, specs)[0]
    hands, hands_low, hands_high = stats.mean_interval([len(r.hands) for r in records])
    draw_low, draw_high = stats.wilson(stats.draw_rate(records) * len(records), len(records))
    return {
        "threshold": threshold,
        "games": len(records),
        "win_rate": first["win_rate"],
        "ci_low": first["ci_low"],
        "ci_high": first["ci_high"],
        "mean_hands": hands,
        "hands_ci_low": hands_low,
        "hands_ci_high": hands_high,
        "draw_rate": stats.draw_rate(records),
        "draw_ci_low": draw_low,
        "draw_ci_high": draw_high,
    }


def _thresholds_summary(
    rows: list[dict], specs: Sequence[str], base: Config, seed: int, partial: bool = False
) -> dict:
    summary = {
        "study": "thresholds",
        "agents_specs": list(specs),
        "config": config_dict(base),
        "seed": seed,
        "rows": rows,
    }
    if partial:
        summary["partial"] = True
    return summary


def _write_thresholds_files(stage: Path, summary: dict) -> None:
    write_study(stage, "thresholds", summary, summary["rows"], figures.thresholds_figure)


def write_study(stage: Path, name: str, summary: dict, rows: Sequence[dict], figure) -> None:
    """A study's ``NAME.json`` (the summary), ``NAME.csv`` (``rows``) and, unless the summary
    is partial, ``NAME.png`` and ``.pdf`` (``figure(summary)``) under ``stage``."""
    write_json(stage / f"{name}.json", summary)
    write_csv(stage / f"{name}.csv", rows)
    if not summary.get("partial"):
        figures.save_figure(figure(summary), stage / f"{name}.png")


def thresholds_table(summary: dict) -> str:
    names = labels(summary["agents_specs"])
    lines = [
        f"thresholds: {names[0]} against {', '.join(names[1:])}",
        f"{'threshold':>9} {'games':>6} {'win rate %':>10} {'[95% CI]':<13}"
        f"{'hands':>7} {'[95% CI]':<14}{'draws %':>7} {'[95% CI]':<12}",
    ]
    for r in summary["rows"]:
        lines.append(
            f"{r['threshold']:>9} {r['games']:>6} {100 * r['win_rate']:10.1f} "
            f"{_interval(r['ci_low'], r['ci_high']):<13}{r['mean_hands']:7.2f} "
            f"{_interval(r['hands_ci_low'], r['hands_ci_high'], 1.0, 2):<14}"
            f"{100 * r['draw_rate']:7.1f} {_interval(r['draw_ci_low'], r['draw_ci_high'])}"
        )
    return "\n".join(lines)
