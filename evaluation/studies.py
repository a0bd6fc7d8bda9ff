"""The studies behind ``evaluate.py``: a tournament, the seating study, the thresholds study, and
the showcase that ``make run`` runs. Each one plays games (:mod:`evaluation.tournament`), summarises
them (:mod:`evaluation.stats`), writes JSON, CSV and one PNG figure under its output folder
(atomically: a temp file, then ``os.replace``) and returns its summary and a readable table.

Nothing written depends on the time or the number of workers, so a seeded study writes the same
JSON and CSV bytes every time.
"""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Sequence
from dataclasses import asdict, replace
from pathlib import Path

# Figures are drawn on bare Figure objects, not pyplot: no global backend is chosen or changed
# for the process that imports this module (a notebook keeps its inline backend).
from matplotlib.figure import Figure

from agents.files import write_atomic
from evaluation import stats
from evaluation.tournament import GameRecord, TournamentInterrupted, play_tournament
from odin_env.rules import Config

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


def save_figure(fig: Figure, path: Path) -> None:
    buf = io.BytesIO()
    # No metadata: the PNG then depends only on the data.
    fig.savefig(buf, format="png", dpi=110, metadata={"Software": None})
    write_atomic(path, buf.getvalue())


def game_rows(records: Sequence[GameRecord], specs: Sequence[str]) -> list[dict]:
    """One CSV row per game: seed, who sat where, per-hand penalties, totals, winners."""
    names = stats.labels(specs)
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


def config_dict(config: Config) -> dict:
    return {k: v for k, v in asdict(config).items() if k != "seed"}


def _errors(rows: Sequence[dict], scale: float = 1.0) -> list[list[float]]:
    """Error-bar lengths below and above each win rate (clipped: rounding can make the Wilson
    bound cross the rate by 1e-17 when the rate is 0 or 1)."""
    return [
        [scale * max(0.0, r["win_rate"] - r["ci_low"]) for r in rows],
        [scale * max(0.0, r["ci_high"] - r["win_rate"]) for r in rows],
    ]


def _pct(x: float) -> str:
    return f"{100 * x:5.1f}%"


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
) -> tuple[dict, str]:
    """Play a rotated-seat tournament; write ``tournament.json``, ``games.csv``,
    ``agents.csv`` and ``tournament.png`` under ``out``; return the summary and a table.
    ``engine``: see :func:`evaluation.tournament.play_tournament`.

    Ctrl-C writes the deals finished so far (``"partial": true`` in ``tournament.json``) and
    re-raises :class:`TournamentInterrupted`; ``resume=True`` continues a partial result in
    ``out`` (same agents, settings and seed, else ``ValueError``) and, once complete, writes the
    very files an uninterrupted run writes."""
    deals = deals_for(games, config.players)
    key = {"agents_specs": list(specs), "config": config_dict(config), "seed": seed, "deals": deals}
    done: list[GameRecord] = partial_records(Path(out), key) if resume else []
    start = len({r.deal for r in done})
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
            )  # fmt: skip
            if start < deals
            else []
        )
    except TournamentInterrupted as stop:
        _write_tournament(done + stop.records, specs, config, seed, deals, Path(out), partial=True)
        raise
    summary = _write_tournament(records, specs, config, seed, deals, Path(out))
    return summary, tournament_table(summary)


def partial_records(out: Path, key: dict) -> list[GameRecord]:
    """The games of the partial tournament in ``out/tournament.json``; ``ValueError`` when there
    is none or it was played with other agents, settings, seed or size."""
    path = out / "tournament.json"
    try:
        saved = json.loads(path.read_text())
    except (OSError, ValueError):
        raise ValueError(f"--resume: no readable partial tournament at {path}") from None
    if not saved.get("partial"):
        raise ValueError(f"--resume: {path} is complete; nothing to resume")
    for name, value in key.items():
        if saved.get(name) != value:
            raise ValueError(
                f"--resume: {path} was played with {name} {saved.get(name)!r}, not {value!r}"
            )
    return [GameRecord.from_dict(r) for r in saved["game_records"]]


def _write_tournament(
    records: list[GameRecord],
    specs: Sequence[str],
    config: Config,
    seed: int,
    deals: int,
    out: Path,
    partial: bool = False,
) -> dict:
    if not records:  # interrupted before the first deal finished
        summary = {"study": "tournament", "agents_specs": list(specs),
                   "config": config_dict(config), "seed": seed, "deals": deals, "games": 0,
                   "partial": True}  # fmt: skip
        write_json(out / "tournament.json", {**summary, "game_records": []})
        return summary
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
    records_json = [r.to_dict() for r in records]
    write_json(out / "tournament.json", {**summary, "game_records": records_json})
    write_csv(out / "games.csv", game_rows(records, specs))
    write_csv(out / "agents.csv", agents)
    if not partial:
        save_figure(_tournament_figure(agents, config), out / "tournament.png")
    return summary


def tournament_table(summary: dict) -> str:
    """The readable terminal table of a tournament summary."""
    c = summary["config"]
    lines = [
        f"tournament: {summary['games']} games ({summary['deals']} deals x {c['players']} seat "
        f"rotations), {c['players']} players, threshold {c['threshold']}, "
        f"first player {c['first_player']}, seed {summary['seed']}",
        f"{'agent':<14}{'win rate':>9}  {'95% CI':<15}{'total':>7}{'per hand':>9}"
        f"{'rating':>8}{'(mu)':>7}",
    ]
    for a in sorted(summary["agents"], key=lambda a: -a["win_rate"]):
        lines.append(
            f"{a['agent']:<14}{_pct(a['win_rate']):>9}  "
            f"[{_pct(a['ci_low'])},{_pct(a['ci_high'])}] "
            f"{a['mean_total']:6.2f}{a['mean_penalty_per_hand']:9.2f}"
            f"{a['ordinal']:8.2f}{a['mu']:7.2f}"
        )
    seats = "  ".join(f"seat {s['seat']} {_pct(s['win_rate'])}" for s in summary["seats"])
    lines.append(f"per seat: {seats}")
    lines.append(f"draws {_pct(summary['draw_rate'])}, {summary['mean_hands']:.2f} hands per game")
    return "\n".join(lines)


def _tournament_figure(agents: list[dict], config: Config) -> Figure:
    fig = Figure(figsize=(6, 3.5))
    ax = fig.subplots()
    names = [a["agent"] for a in agents]
    rates = [a["win_rate"] for a in agents]
    err = _errors(agents)
    ax.bar(names, rates, yerr=err, capsize=4, color="tab:blue")
    ax.axhline(1 / config.players, ls="--", color="grey", label="equal share")
    ax.set_ylabel("win rate (ties shared)")
    ax.set_title(f"{config.players} players, threshold {config.threshold}: win rate, 95% CI")
    ax.legend()
    fig.tight_layout()
    return fig


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
) -> tuple[dict, str]:
    """The same agent in every seat: win rate by position counted clockwise from the game's
    first leader, with 95% CIs and a chi-square test of no seat effect, for each player count
    and first-player rule. Writes ``seating.json``, ``seating.csv`` and ``seating.png``."""
    cells = []
    for rule in rules:
        for n in players:
            config = replace(base, players=n, first_player=rule, colours=None)
            # Every seat holds the same agent, so rotating seats would replay the same games.
            records = play_tournament(
                [agent] * n, config, games, seed, rotate=False, workers=workers, progress=progress
            )
            positions = stats.seat_win_rates(records, from_leader=True)
            test = stats.no_seat_effect([p["wins"] for p in positions])
            cells.append(
                {"players": n, "first_player": rule, "games": len(records),
                 "positions": positions, **test}
            )  # fmt: skip
    summary = {
        "study": "seating",
        "agent": agent,
        "config": config_dict(base),
        "seed": seed,
        "games_per_cell": games,
        "cells": cells,
    }
    out = Path(out)
    write_json(out / "seating.json", summary)
    write_csv(
        out / "seating.csv",
        [
            {"players": c["players"], "first_player": c["first_player"], "position": p["seat"],
             "win_rate": p["win_rate"], "ci_low": p["ci_low"], "ci_high": p["ci_high"],
             "chi2": c["chi2"], "p": c["p"]}
            for c in cells
            for p in c["positions"]
        ],
    )  # fmt: skip
    save_figure(_seating_figure(summary), out / "seating.png")
    return summary, seating_table(summary)


def seating_table(summary: dict) -> str:
    """Readable table of a seating study: one row per player count and rule."""
    lines = [
        f"seat effect: {summary['agent']} in every seat, {summary['games_per_cell']} games per "
        f"row; position 0 = the game's first leader, then clockwise",
        f"{'players':>7} {'rule':<7} {'chi2':>7} {'p':>9}  win rate by position (95% CI)",
    ]
    for c in summary["cells"]:
        rates = " ".join(
            f"{_pct(p['win_rate']).strip()}±{50 * (p['ci_high'] - p['ci_low']):.1f}"
            for p in c["positions"]
        )
        lines.append(
            f"{c['players']:>7} {c['first_player']:<7} {c['chi2']:7.2f} {c['p']:9.2g}  {rates}"
        )
    return "\n".join(lines)


def _seating_figure(summary: dict) -> Figure:
    rules = list(dict.fromkeys(c["first_player"] for c in summary["cells"]))
    fig = Figure(figsize=(5 * len(rules), 3.8))
    axes = fig.subplots(1, len(rules), squeeze=False)
    for ax, rule in zip(axes[0], rules):
        for c in (c for c in summary["cells"] if c["first_player"] == rule):
            n = c["players"]
            xs = [p["seat"] for p in c["positions"]]
            # Scaled by n so every player count shares one axis: 1 means no seat effect.
            ys = [n * p["win_rate"] for p in c["positions"]]
            err = _errors(c["positions"], n)
            ax.errorbar(xs, ys, yerr=err, marker="o", capsize=3, label=f"{n} players")
        ax.axhline(1.0, ls="--", color="grey")
        ax.set_xticks(range(max(c["players"] for c in summary["cells"])))
        ax.set_xlabel("position after the first leader")
        ax.set_ylabel("win rate x players")
        ax.set_title(f"first player: {rule}")
        ax.legend(fontsize=8)
    fig.suptitle(f"seat effect, {summary['agent']} in every seat (95% CI)")
    fig.tight_layout()
    return fig


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
) -> tuple[dict, str]:
    """For each threshold: the first agent's win rate (95% CI), hands per game, draw rate.
    Writes ``thresholds.json``, ``thresholds.csv`` and ``thresholds.png``."""
    rows = []
    for threshold in values:
        config = replace(base, threshold=threshold)
        deals = deals_for(games, config.players)
        records = play_tournament(specs, config, deals, seed, workers=workers, progress=progress)
        first = stats.agent_summary(records, specs)[0]
        rows.append(
            {
                "threshold": threshold,
                "games": len(records),
                "win_rate": first["win_rate"],
                "ci_low": first["ci_low"],
                "ci_high": first["ci_high"],
                "mean_hands": stats.mean_hands(records),
                "draw_rate": stats.draw_rate(records),
            }
        )
    summary = {
        "study": "thresholds",
        "agents_specs": list(specs),
        "config": config_dict(base),
        "seed": seed,
        "rows": rows,
    }
    out = Path(out)
    write_json(out / "thresholds.json", summary)
    write_csv(out / "thresholds.csv", rows)
    save_figure(_thresholds_figure(summary), out / "thresholds.png")
    return summary, thresholds_table(summary)


def thresholds_table(summary: dict) -> str:
    specs = summary["agents_specs"]
    lines = [
        f"thresholds: {specs[0]} against {', '.join(specs[1:])}",
        f"{'threshold':>9} {'games':>6} {'win rate':>9}  {'95% CI':<15} {'hands':>6} {'draws':>7}",
    ]
    for r in summary["rows"]:
        lines.append(
            f"{r['threshold']:>9} {r['games']:>6} {_pct(r['win_rate']):>9}  "
            f"[{_pct(r['ci_low'])},{_pct(r['ci_high'])}] {r['mean_hands']:6.2f} "
            f"{_pct(r['draw_rate']):>7}"
        )
    return "\n".join(lines)


def _thresholds_figure(summary: dict) -> Figure:
    rows = summary["rows"]
    xs = [r["threshold"] for r in rows]
    fig = Figure(figsize=(12, 3.5))
    axes = fig.subplots(1, 3)
    axes[0].errorbar(
        xs,
        [r["win_rate"] for r in rows],
        yerr=_errors(rows),
        marker="o",
        capsize=3,
    )
    axes[0].set_ylabel(f"{summary['agents_specs'][0]} win rate (95% CI)")
    axes[1].plot(xs, [r["mean_hands"] for r in rows], marker="o")
    axes[1].set_ylabel("hands per game")
    axes[2].plot(xs, [r["draw_rate"] for r in rows], marker="o")
    axes[2].set_ylabel("draw rate")
    for ax in axes:
        ax.set_xlabel("threshold")
    fig.suptitle(f"{' vs '.join(summary['agents_specs'])}: effect of the threshold")
    fig.tight_layout()
    return fig


# -- showcase ----------------------------------------------------------------------------------


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
             seed: int = 0, progress: bool = True) -> str:  # fmt: skip
    """What ``make run`` shows: a tournament of the built-in agents and a seat-effect table.
    Returns the printed text (also written to ``showcase.txt``)."""
    specs = showcase_agents()
    out = Path(out)
    config = Config(players=len(specs))
    _, table = tournament(specs, config, games, seed, out / "tournament", workers, progress)
    _, seats = seating(
        "greedy", [config.players], ["rotate", "winner"], seating_games, seed,
        out / "seating", config, workers, progress,
    )  # fmt: skip
    text = f"{table}\n\n{seats}\n"
    write_atomic(out / "showcase.txt", text.encode())
    return text
