"""A leaderboard: many agents rated from a round robin over tables of ``players`` of them.

With more agents than seats no one tournament holds them all, so the leaderboard plays tables:

- **Which tables.** Every combination of ``players`` distinct agents (:func:`plan_tables`), in
  the lexicographic order of the agents' positions in the list, when there are at most ``most``
  of them (:data:`MAX_TABLES` by default). When there are more, a seeded balanced sample of
  ``most`` distinct combinations: table by table, the unused combination whose agents have sat
  at the fewest tables so far, then the one whose pairs have met the least, then a seeded random
  order. So every agent sits at as many tables as any other, give or take one (as long as an
  unused table of the least-seated agents is left), and pairs meet as evenly as the picks
  allow; the seed (a sub-stream of the deals' seed) breaks the ties.
- **How a table plays.** As a rotated-seat tournament
  (:func:`odin_lab.evaluation.tournament.play_tournament`): every deal once per seat rotation, so
  every agent at the table plays every deal from every seat. Every table plays the same deals (deal
  ``d`` of the leaderboard's seed), on the batched engine when all its agents have a batched
  form (all but ``search``). With all combinations, every agent therefore plays the same number
  of games from every seat.
- **Ratings.** OpenSkill Plackett-Luce (:func:`odin_lab.evaluation.stats.ratings`) over every game,
  fed in ``(deal, table, rotation)`` order, so that no table comes wholly before another; the
  interval is ``[mu - 1.96 sigma, mu + 1.96 sigma]``. Beside it, each agent's win share against
  the field (its tie-shared wins over its games, at every table it sat at) with its 95% Wilson
  interval, and the head-to-head matrix: the mean win share of the row agent in the games where
  the column agent sat at its table.

Tables run in parallel on ``workers`` processes (each table in one process, whole); nothing
written depends on the number of workers. The finished tables are written as they come (at most
once a minute: ``kill -9`` loses only the tables since), and Ctrl-C keeps every finished table:
the files are written from them, marked partial, and :class:`LeaderboardInterrupted` is raised.
``resume=True`` plays the tables a partial result lacks.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

import numpy as np
from tqdm import tqdm

from odin_env.rules import Config
from odin_lab.evaluation import stats
from odin_lab.evaluation.failures import AgentFailed, decision_limit, set_decision_limit
from odin_lab.evaluation.leaderboard_plan import MAX_TABLES, check, plan_tables
from odin_lab.evaluation.names import labels
from odin_lab.evaluation.players import keep_built_agents
from odin_lab.evaluation.records import config_dict, records_document, records_text
from odin_lab.evaluation.results import results_folder
from odin_lab.evaluation.resume import Saver, partial_tables
from odin_lab.evaluation.tournament import GameRecord, PlayerFailed, play_tournament
from odin_lab.evaluation.workers import Workers
from odin_lab.files import write_atomic


class LeaderboardInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`leaderboard`: ``tables_done`` of ``tables_planned`` tables finished
    and were written (``written``: false when none had finished, and nothing was written)."""

    def __init__(self, tables_done: int, tables_planned: int, written: bool):
        super().__init__(f"interrupted after {tables_done} of {tables_planned} tables")
        self.tables_done, self.tables_planned, self.written = tables_done, tables_planned, written


# -- playing -----------------------------------------------------------------------------------


def _init_worker() -> None:
    # A worker shows no progress bar; tqdm's default lock is a process-shared semaphore that a
    # terminated worker would leave behind (a "leaked semaphore" warning at exit).
    tqdm.set_lock(threading.RLock())
    keep_built_agents()  # it plays table after table: each agent built once in it


def _play_table(task: tuple) -> tuple[int, list[GameRecord]]:
    """One table, whole, in this process; its records with the leaderboard's agent indices.
    An agent's failure: its :class:`AgentFailed` (an ``Exception``: a worker sends it back)."""
    index, table, specs, config, deals, seed, workers, ray, limit = task
    set_decision_limit(limit)  # the command's, in a worker process too
    try:
        seated = [specs[a] for a in table]
        records = play_tournament(
            seated, config, deals, seed, workers=workers, progress=False, ray=ray
        )
    except PlayerFailed as stop:
        raise stop.failure from None
    return index, [replace(r, agents=tuple(table[i] for i in r.agents)) for r in records]


def play_tables(
    specs: Sequence[str],
    tables: Sequence[tuple[int, ...]],
    config: Config,
    deals: int,
    seed: int,
    workers: int = 1,
    progress: bool = True,
    ray: str | None = None,
    on_table: Callable[[list[tuple[int, list[GameRecord]]]], None] | None = None,
    done: dict[int, list[GameRecord]] | None = None,
) -> tuple[dict[int, list[GameRecord]], KeyboardInterrupt | None]:
    """Play every table; return the records of each finished table (by table index, agents as
    indices into ``specs``) and what stopped the play before every table finished (Ctrl-C, or
    :class:`~odin_lab.evaluation.workers.WorkerDiedError`), if anything did.
    ``on_table(tables)``: called in this process after each table with the finished ones so
    far, ``(table index, records)`` pairs in the order they finished. ``done``: tables already
    played (a resumed leaderboard's), kept and not played again.

    Several tables on several workers: one process per table at a time. One table, or Ray: the
    tables one after the other, each spread over the workers (or Ray tasks)."""
    per_table = deals * config.players
    done = dict(done or {})
    left = [k for k in range(len(tables)) if k not in done]
    in_turn = workers == 1 or len(left) == 1 or ray is not None
    inner = (workers, ray) if in_turn else (1, None)  # how each table spreads its own games
    limit = decision_limit()
    tasks = [(k, tables[k], tuple(specs), config, deals, seed, *inner, limit) for k in left]
    bar = tqdm(
        total=len(tables) * per_table,
        initial=len(done) * per_table,
        unit="game",
        disable=not progress,
        leave=False,
    )
    try:
        with bar:
            if in_turn:
                for index, records in map(_play_table, tasks):
                    done[index] = records
                    bar.update(per_table)
                    if on_table is not None:
                        on_table(list(done.items()))
            else:
                with Workers(min(workers, len(tasks)), initializer=_init_worker) as pool:
                    for index, records in pool.imap(_play_table, tasks, ordered=False):
                        done[index] = records
                        bar.update(per_table)
                        if on_table is not None:
                            on_table(list(done.items()))
    except KeyboardInterrupt as stop:  # a table cut short is dropped: only whole tables count
        return done, stop
    except AgentFailed as failure:  # as a Ctrl-C, but saying which agent failed
        return done, PlayerFailed([], 0, failure)
    return done, None


# -- summarising -------------------------------------------------------------------------------


def summarise(
    specs: Sequence[str],
    tables: Sequence[tuple[int, ...]],
    played: dict[int, list[GameRecord]],
    config: Config,
    seed: int,
    deals: int,
    selection: str,
) -> tuple[dict, list[GameRecord]]:
    """The leaderboard's summary (the JSON's keys but the records) and every game, table by
    table, each table's games in ``(deal, rotation)`` order."""
    n, k = len(specs), config.players
    finished = sorted(played)
    records = [r for t in finished for r in played[t]]
    table_of = [t for t in finished for _ in played[t]]
    # Ratings from the games interleaved (deal, table, rotation): no table wholly first.
    order = sorted(range(len(records)), key=lambda g: (records[g].deal, table_of[g], g))
    rating = stats.ratings([records[g] for g in order], n)
    wins, totals = np.zeros(n), np.zeros(n)
    by_seat = np.zeros((n, k), dtype=np.int64)
    h2h_wins, h2h_games = np.zeros((n, n)), np.zeros((n, n), dtype=np.int64)
    for r in records:
        for seat, share in enumerate(stats.seat_shares(r)):
            a = r.agents[seat]
            wins[a] += share
            totals[a] += r.totals[seat]
            by_seat[a, seat] += 1
            for b in r.agents:
                if b != a:
                    h2h_wins[a, b] += share
                    h2h_games[a, b] += 1
    games = by_seat.sum(axis=1)
    rows = []
    for a, (spec, name) in enumerate(zip(specs, labels(specs))):
        row = {
            "agent": name,
            "spec": spec,
            "tables": sum(a in tables[t] for t in finished),
            "games": int(games[a]),
            "games_by_seat": by_seat[a].tolist(),
        }
        # An agent with no finished table (a partial leaderboard) has no figures, not the
        # rating prior or a 0% win share, which would read as measured.
        measured = ("win_share", "ci_low", "ci_high", "mu", "sigma", "rating_low", "rating_high")
        row.update(dict.fromkeys((*measured, "ordinal", "mean_total")))
        if games[a]:
            lo, hi = stats.wilson(float(wins[a]), int(games[a]))
            mu, sigma = rating[a]["mu"], rating[a]["sigma"]
            row.update(
                win_share=float(wins[a] / games[a]),
                ci_low=lo,
                ci_high=hi,
                mu=mu,
                sigma=sigma,
                rating_low=mu - stats.Z95 * sigma,
                rating_high=mu + stats.Z95 * sigma,
                ordinal=rating[a]["ordinal"],
                mean_total=float(totals[a] / games[a]),
            )
        rows.append(row)
    # Best rating first; agents without games last, in their order.
    ranking = sorted(range(n), key=lambda a: (rows[a]["mu"] is None, -(rows[a]["mu"] or 0), a))
    for place, a in enumerate(ranking, 1):
        rows[a] = {"rank": place, **rows[a]}
    share = [
        [float(h2h_wins[a, b] / h2h_games[a, b]) if h2h_games[a, b] else None for b in range(n)]
        for a in range(n)
    ]
    summary = {
        "study": "leaderboard",
        "seed": seed,
        "selection": selection,
        "tables_planned": len(tables),
        "deals_per_table": deals,
        "games_per_table": deals * k,
        "games": len(records),
        "tables": [
            {"table": t, "agents": list(tables[t]), "specs": [specs[a] for a in tables[t]]}
            for t in finished
        ],
        "agents": rows,
        "head_to_head": {"win_share": share, "games": h2h_games.tolist()},
    }
    return summary, records


def ranked(summary: dict) -> list[dict]:
    """The summary's agent rows in rank order (rating ``mu``, best first)."""
    return sorted(summary["agents"], key=lambda row: row["rank"])


def leaderboard_table(summary: dict, config: Config) -> str:
    """The readable table: agents by rating, every interval as ``[lo, hi]``, then the
    head-to-head matrix with columns numbered by rank."""
    rows, deals = ranked(summary), summary["deals_per_table"]
    index = {row["agent"]: i for i, row in enumerate(summary["agents"])}
    width = max(8, *(len(row["agent"]) for row in rows)) + 2
    partial = (
        f"; PARTIAL: {len(summary['tables'])} of {summary['tables_planned']} tables"
        if summary.get("partial")
        else ""
    )
    lines = [
        f"leaderboard: {len(rows)} agents, {summary['tables_planned']} tables of {config.players} "
        f"({summary['selection']}), {summary['games_per_table']} games per table "
        f"({deals} deal{'s' * (deals != 1)} x {config.players} seat rotations), "
        f"{summary['games']} games{partial}",
        f"{config.players} players, threshold {config.threshold}, first player "
        f"{config.first_player}, seed {summary['seed']}",
        f"{'#':>3} {'agent':<{width}}{'rating [95% interval]':<25}"
        f"{'win share [95% Wilson]':<24}{'games':>7}{'tables':>7}",
    ]
    for row in rows:
        rating, share = "no games", ""
        if row["games"]:
            rating = f"{row['mu']:.2f} [{row['rating_low']:.2f}, {row['rating_high']:.2f}]"
            share = f"{100 * row['win_share']:.1f}% [{100 * row['ci_low']:.1f}, "
            share += f"{100 * row['ci_high']:.1f}]"
        lines.append(
            f"{row['rank']:>3} {row['agent']:<{width}}{rating:<25}{share:<24}"
            f"{row['games']:>7}{row['tables']:>7}"
        )
    lines.append(
        "rating: OpenSkill Plackett-Luce mu, interval [mu - 1.96 sigma, mu + 1.96 sigma]; "
        f"win share: tie-shared wins over games, fair share {100 / config.players:.1f}%"
    )
    lines.append("head to head: win share (%) of the row agent in games with the column agent")
    header = "".join(f"{'#' + str(row['rank']):>7}" for row in rows)
    lines.append(f"{'':>3} {'':<{width}}{header}")
    matrix = summary["head_to_head"]["win_share"]
    for row in rows:
        cells = ""
        for col in rows:
            value = matrix[index[row["agent"]]][index[col["agent"]]]
            cells += f"{'-' if value is None else f'{100 * value:.1f}':>7}"
        lines.append(f"{row['rank']:>3} {row['agent']:<{width}}{cells}")
    return "\n".join(lines)


def csv_rows(summary: dict) -> list[dict]:
    """``leaderboard.csv``: one row per agent in rank order, its figures, then its head-to-head
    win share against each agent (``vs NAME``; empty against itself or one it never met)."""
    index = {row["agent"]: i for i, row in enumerate(summary["agents"])}
    matrix = summary["head_to_head"]["win_share"]
    out = []
    for row in ranked(summary):
        flat = {k: v for k, v in row.items() if k != "games_by_seat"}
        flat["games_by_seat"] = " ".join(map(str, row["games_by_seat"]))
        for col in ranked(summary):
            value = matrix[index[row["agent"]]][index[col["agent"]]]
            flat[f"vs {col['agent']}"] = "" if value is None else value
        out.append(flat)
    return out


# -- the whole study ---------------------------------------------------------------------------


def leaderboard(
    specs: Sequence[str],
    config: Config,
    games: int,
    seed: int,
    out: Path,
    workers: int = 1,
    progress: bool = True,
    most: int | None = None,
    ray: str | None = None,
    provenance: dict | None = None,
    resume: bool = False,
) -> tuple[dict, str]:
    """Play the leaderboard of ``specs`` at tables of ``config.players`` (``games`` per table,
    rounded up to whole deals); write ``leaderboard.json`` (a records file: every game replays,
    ``agents_specs`` are all the agents and each game's ``agents`` the indices of its table's),
    ``leaderboard.csv`` and ``leaderboard.png`` (and ``.pdf``) under ``out``; return the summary
    and the printed table. ``ValueError`` for a leaderboard :func:`check` refuses.

    The finished tables are written as the play goes (``"partial": true``; at most once in
    :data:`~odin_lab.evaluation.resume.SAVE_EVERY_S`), so ``kill -9`` loses only the tables
    since. Ctrl-C writes the finished tables (``"partial": true``) and raises
    :class:`LeaderboardInterrupted`; with no table finished it writes nothing. The folder is
    written as one result (:func:`odin_lab.evaluation.results.results_folder`), with
    ``provenance`` as ``provenance.json`` when given. ``resume=True`` keeps the tables of the
    partial ``leaderboard.json`` in ``out`` (checked by
    :func:`odin_lab.evaluation.resume.partial_tables`: the same agents, settings, seed and size,
    every game replayed) and plays the others; the result is the one an uninterrupted run
    writes."""
    specs = list(specs)
    check(specs, config.players, most)
    if games < 1:
        raise ValueError(f"games must be >= 1; got {games}")
    deals = -(-games // config.players)
    tables, selection = plan_tables(len(specs), config.players, most, seed)
    key = {
        "agents_specs": specs,
        "config": config_dict(config),
        "seed": seed,
        "deals_per_table": deals,
        "tables_planned": len(tables),
        "selection": selection,
    }
    done = partial_tables(Path(out), key, tables) if resume else {}

    def save(finished: list[tuple[int, list[GameRecord]]]) -> None:
        """The finished tables written as a partial result (the last is written whole below)."""
        if len(finished) < len(tables):
            summary, records = summarise(specs, tables, dict(finished), config, seed, deals,
                                         selection)  # fmt: skip
            write(Path(out), {**summary, "partial": True}, records, config, specs, provenance)

    played, stopped = play_tables(
        specs,
        tables,
        config,
        deals,
        seed,
        workers,
        progress,
        ray,
        on_table=Saver(save),
        done=done,
    )
    if stopped is not None and not played:
        raise LeaderboardInterrupted(0, len(tables), written=False) from stopped
    summary, records = summarise(specs, tables, played, config, seed, deals, selection)
    if stopped is not None:
        summary["partial"] = True
    write(Path(out), summary, records, config, specs, provenance, interrupted=stopped is not None)
    if stopped is not None:
        raise LeaderboardInterrupted(len(played), len(tables), written=True) from stopped
    return summary, leaderboard_table(summary, config)


LEADERBOARD_FILES = ("leaderboard.json", "leaderboard.csv", "leaderboard.png", "leaderboard.pdf",
                     "provenance.json")  # fmt: skip
"""What a leaderboard's folder holds (an earlier result's files a new one lacks are removed)."""


def write(
    out: Path,
    summary: dict,
    records: Sequence[GameRecord],
    config: Config,
    specs: Sequence[str],
    provenance: dict | None = None,
    interrupted: bool = False,
) -> None:
    """``leaderboard.json``, ``leaderboard.csv``, ``leaderboard.png`` and ``.pdf``, as one
    result in ``out``."""
    with results_folder(out, LEADERBOARD_FILES, provenance, interrupted=interrupted) as stage:
        _write_files(stage, summary, records, config, specs)


def _write_files(
    out: Path, summary: dict, records: Sequence[GameRecord], config: Config, specs: Sequence[str]
) -> None:
    from odin_lab.evaluation import (
        figures,  # here: the workers, which import this module, draw nothing
    )
    from odin_lab.evaluation.studies import write_csv

    document = records_document(config, specs, records, extra=summary)
    write_atomic(out / "leaderboard.json", records_text(document).encode())
    write_csv(out / "leaderboard.csv", csv_rows(summary))
    figure = figures.leaderboard_figure({**summary, "config": config_dict(config)})
    figures.save_figure(figure, out / "leaderboard.png")


__all__ = [
    "MAX_TABLES",
    "LeaderboardInterrupted",
    "check",
    "csv_rows",
    "leaderboard",
    "leaderboard_table",
    "plan_tables",
    "play_tables",
    "ranked",
    "summarise",
]
