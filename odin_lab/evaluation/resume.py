"""Resuming a tournament or a leaderboard: its finished deals (tables) saved as they come
(:class:`Saver`), and the games of a partial ``tournament.json`` (:func:`partial_records`) or
``leaderboard.json`` (:func:`partial_tables`), each one checked before it is trusted, so that a
file edited since cannot count in a result."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from odin_env.rules import Config
from odin_lab.evaluation.records import RecordsFile, config_dict, load_records, replay
from odin_lab.evaluation.tournament import GameRecord, deal_seed, rotation_order

SAVE_EVERY_S = 60.0
"""Fewest seconds between two saves of a running tournament's finished deals (:class:`Saver`):
what ``kill -9`` can cost, beside the games in flight."""


class Saver:
    """``on_deals`` of :func:`~odin_lab.evaluation.tournament.play_tournament` (or
    ``on_table`` of the leaderboard's play): passes the whole deals of the work so far
    (``rotations`` items each: games; 1: tables) to ``write``, at most once in
    :data:`SAVE_EVERY_S` seconds and after at least ten times as long as its last write took
    (a long run's saves cost it at most a tenth of its time)."""

    def __init__(self, write: Callable[[list], None], rotations: int = 1):
        self.write, self.rotations = write, rotations
        self.saved, self.took = time.monotonic(), 0.0

    def __call__(self, games: list) -> None:
        if time.monotonic() - self.saved < max(SAVE_EVERY_S, 10 * self.took):
            return
        began = time.monotonic()
        self.write(games[: len(games) // self.rotations * self.rotations])
        self.saved = time.monotonic()
        self.took = self.saved - began


def partial_records(out: Path, key: dict) -> list[GameRecord]:
    """The games of the partial tournament in ``out/tournament.json``, each one checked; a
    ``ValueError`` of one line when there is none, when it is unreadable, over a limit or not
    a regular file (read by :func:`~odin_lab.evaluation.records.load_records`), when it was
    played with other agents, settings, seed or size, and when a kept game is not the
    tournament's game at its place (its deal, rotation, seed and seats) or does not replay from
    its seed and actions to its recorded hands, totals and winners (a file edited since)."""
    path = Path(out) / "tournament.json"
    saved = _partial(path, key)
    _check_kept(saved.games, saved.config, key["seed"], key["deals"], path)
    return list(saved.games)


def partial_tables(
    out: Path, key: dict, tables: Sequence[tuple[int, ...]]
) -> dict[int, list[GameRecord]]:
    """The finished tables of the partial leaderboard in ``out/leaderboard.json``, by table
    index (games with the leaderboard's agent indices, as :func:`~odin_lab.evaluation.
    leaderboard.play_tables` returns them), each game checked as :func:`partial_records` checks
    a tournament's: ``key`` (``agents_specs``, ``config``, the summary's ``seed``,
    ``deals_per_table``, ``tables_planned``, ``selection``) must be the file's, each listed table
    one of the plan's ``tables`` with its agents, and each of its games the table's tournament
    game at its place that replays to its record. ``ValueError`` of one line otherwise."""
    path = Path(out) / "leaderboard.json"
    saved = _partial(path, key)
    listed = saved.extra.get("tables")
    per_table = key["deals_per_table"] * saved.config.players
    if not isinstance(listed, list) or len(saved.games) != per_table * len(listed):
        raise ValueError(
            f"--resume: {path} holds {len(saved.games)} games: not {per_table} for each of "
            f"the tables it lists; start afresh without --resume"
        )
    done: dict[int, list[GameRecord]] = {}
    for i, entry in enumerate(listed):
        index = entry.get("table") if isinstance(entry, dict) else None
        if not (isinstance(index, int) and 0 <= index < len(tables)) or index in done:
            raise ValueError(f"--resume: {path}: tables[{i}] is not a table of the plan")
        table = tables[index]
        if entry.get("agents") != list(table):
            raise ValueError(
                f"--resume: {path}: table {index} seats {_short(entry.get('agents'))}, not the "
                f"plan's {list(table)}"
            )
        games = list(saved.games[i * per_table : (i + 1) * per_table])
        if any(not set(g.agents) <= set(table) for g in games):
            raise ValueError(f"--resume: {path}: a game of table {index} seats another agent")
        local = [replace(g, agents=tuple(table.index(a) for a in g.agents)) for g in games]
        _check_kept(local, saved.config, key["seed"], key["deals_per_table"], path, i * per_table)
        done[index] = games
    return done


def _partial(path: Path, key: dict) -> RecordsFile:
    """The partial records file at ``path`` played with ``key``'s settings (``agents_specs``,
    ``config``, and entries of its summary); ``ValueError`` of one line otherwise."""
    try:
        saved = load_records(path)
    except ValueError as e:
        raise ValueError(f"--resume: {e}; start afresh without --resume") from None
    if saved.extra.get("partial") is not True:
        raise ValueError(f"--resume: {path} is complete; nothing to resume")
    found = {"agents_specs": list(saved.specs), "config": config_dict(saved.config)}
    for name, value in key.items():
        recorded = found[name] if name in found else saved.extra.get(name)
        if recorded != value:
            raise ValueError(
                f"--resume: {path} was played with {name} {_short(recorded)}, not {_short(value)}"
            )
    return saved


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _check_kept(
    games: Sequence[GameRecord], config: Config, seed: int, deals: int, path, first: int = 0
) -> None:
    """``ValueError`` naming the first kept game that is not game ``k`` of the tournament or
    does not replay to its record (:func:`~odin_lab.evaluation.records.replay`); ``first``:
    the file's index of ``games[0]``, for the message."""
    n = config.players
    if len(games) % n or len(games) > deals * n:
        raise ValueError(
            f"--resume: {path} holds {len(games)} games: not whole deals of {n} rotations, "
            f"of at most {deals} deals; start afresh without --resume"
        )
    for k, game in enumerate(games):
        deal, rotation = divmod(k, n)
        where = f"--resume: {path}: game_records[{first + k}]"
        if (game.deal, game.rotation) != (deal, rotation):
            raise ValueError(
                f"{where} is deal {game.deal} rotation {game.rotation}, not the tournament's "
                f"deal {deal} rotation {rotation}"
            )
        if game.seed != deal_seed(seed, deal):
            raise ValueError(f"{where}: seed {game.seed} is not the seed of deal {deal}")
        if game.agents != rotation_order(n, rotation):
            raise ValueError(
                f"{where}: seats {list(game.agents)} are not rotation {rotation}'s "
                f"{list(rotation_order(n, rotation))}"
            )
        if not game.winners:
            raise ValueError(f"{where}: an unfinished game (no winners)")
        try:
            replay(game, config)
        except ValueError as e:
            raise ValueError(f"{where}: {e}; start afresh without --resume") from None


__all__ = ["SAVE_EVERY_S", "Saver", "partial_records", "partial_tables"]
