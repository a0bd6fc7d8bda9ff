"""The batched engine of a tournament: its games played many at once in one
:class:`~odin_env.batched.BatchedGames`, and how a tournament's games are cut into the parts
that its workers play (:mod:`odin_lab.evaluation.tournament` says what the engine guarantees)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from odin_env.batched import BatchedGames
from odin_env.seeding import GOLDEN, splitmix64
from odin_lab.evaluation import failures
from odin_lab.evaluation.deals import GameRecord, Job, deal_seed, rotation_order, seat_name
from odin_lab.evaluation.failures import AgentFailed

_MIN_WIDTH = 64
"""Fewest slots a batched part uses (when ``batch`` allows): fewer, and the per-step Python
work outweighs the games' own."""


def batched_parts(first: int, games: int, batch: int, parts: int = 16) -> list[range]:
    """Games ``first .. games - 1`` of a batched tournament cut into the parts that workers
    play, in order. The first part is small (``_MIN_WIDTH`` games), so that progress shows
    within seconds even with slow agents; each next one is twice the last, up to ``8 * batch``
    games (big parts keep the slots busy: a part's last games finish with idle slots) and to
    about a ``parts``-th of the games (so that the workers finish together). How the games are
    cut does not change them."""
    most = min(8 * batch, max(_MIN_WIDTH, -(-(games - first) // parts)))
    cut, lo, size = [], first, min(_MIN_WIDTH, most)
    while lo < games:
        cut.append(range(lo, min(lo + size, games)))
        lo += size
        size = min(2 * size, most)
    return cut


def _seat_keys(deal_seed_: int, rotation: int, players: int) -> list[int]:
    """The random key of each seat's first decision in game ``(deal, rotation)``; decision
    ``t`` of the game is keyed ``key[seat] + t * golden`` (a SplitMix64 stream per seat)."""
    return [splitmix64(deal_seed_ ^ splitmix64(rotation << 8 | seat)) for seat in range(players)]


def play_games_batched(job: Job, games: range, agents: Sequence) -> list[GameRecord]:
    """Games ``games`` (game ``g`` is deal ``g // rotations``, rotation ``g % rotations``) in
    one :class:`BatchedGames` of up to ``job.batch`` slots, each slot given the next game of
    the list when its game ends; returns their records in list order. An agent's failure
    raises :class:`AgentFailed` whose ``done`` holds the games finished before it that begin
    the list (the slots' games finish out of order: those after the first unfinished one are
    dropped)."""
    records: list[GameRecord | None] = [None] * len(games)
    try:
        _fill_batched(job, games, agents, records)
    except AgentFailed as failure:
        finished = records.index(None) if None in records else len(records)
        raise AgentFailed(failure.line, failure.details, records[:finished]) from None
    return records  # type: ignore[return-value]


def _fill_batched(
    job: Job, games: range, agents: Sequence, records: list[GameRecord | None]
) -> None:
    """:func:`play_games_batched`'s games, each record put in ``records`` as its game ends."""
    n, rotations, count = job.config.players, job.rotations, len(games)
    deal_of = [g // rotations for g in games]
    rotation_of = [g % rotations for g in games]
    deal_array, rotation_array = np.array(deal_of), np.array(rotation_of)
    seeds: dict[int, int] = {d: deal_seed(job.seed, d) for d in dict.fromkeys(deal_of)}
    # Each distinct agent object is asked once per step; ``table[a]`` is agent a's object.
    distinct = list({id(agent): agent for agent in agents}.values())
    table = np.array([[d is a for d in distinct].index(True) for a in agents], dtype=np.int64)
    names = [seat_name(job, agents, [a is d for a in agents].index(True)) for d in distinct]
    # When the list runs out, slots go idle while the longest games finish: with fewer slots
    # than games / 8, each slot plays 8 games or more and the idle tail stays short.
    width = min(job.batch, max(_MIN_WIDTH, -(-count // 8)), count)
    engine = BatchedGames(job.config, width, seed=[seeds[deal_of[j]] for j in range(width)])
    game_of = np.arange(width)  # the index in ``games`` of each slot's game, -1 when idle
    rotation = np.array(rotation_of[:width], dtype=np.int64)
    keys = np.array(
        [_seat_keys(seeds[deal_of[j]], rotation_of[j], n) for j in range(width)], dtype=np.uint64
    )
    decisions = np.zeros(width, dtype=np.uint64)
    # Each slot's game's actions so far. The engine applies forced decisions itself
    # (auto_forced, as ``Game.play_forced`` does: ``odin_env.batched.compare_with_rules``), so
    # every action given to ``step`` is a decision that was not forced.
    moves = np.zeros((width, 256), dtype=np.int16)
    moved = np.zeros(width, dtype=np.int64)
    hands: list[list[tuple[int, ...]]] = [[] for _ in range(width)]
    first_leader = [0] * count
    first_leader[:width] = engine.hand_leaders.tolist()
    following, live, slots = width, width, np.arange(width)
    golden = np.uint64(GOLDEN)
    while live:
        seat = engine.seat
        # Row i's agent: the one that game i's rotation seats where its turn is.
        who = table[(seat - rotation) % n]
        row_keys = keys[slots, seat] + decisions * golden

        j = np.maximum(game_of, 0)  # each slot's game (idle slots' rows are not asked)
        games = (seat, deal_array[j], rotation_array[j])
        if live == width:
            actions = failures.act_batched(
                distinct, names, engine.obs, engine.mask, who, row_keys, job.limit, games
            )
        else:  # the list has run out: idle slots play any legal action, unseen
            actions = engine.first_legal
            rows = np.flatnonzero(game_of >= 0)
            actions[rows] = failures.act_batched(
                distinct,
                names,
                engine.obs[rows],
                engine.mask[rows],
                who[rows],
                row_keys[rows],
                job.limit,
                tuple(column[rows] for column in games),
            )
        playing = np.flatnonzero(game_of >= 0)
        if moved.max() >= moves.shape[1]:
            moves = np.concatenate([moves, np.zeros_like(moves)], axis=1)
        moves[playing, moved[playing]] = actions[playing]
        moved[playing] += 1
        engine.step(actions)
        decisions += np.uint64(1)
        for i in np.flatnonzero(engine.hand_end & (game_of >= 0)).tolist():
            hands[i].append(tuple(engine.penalties[i].tolist()))
        restart: list[int] = []
        for i in np.flatnonzero(engine.done).tolist():
            j = int(game_of[i])
            if j < 0:
                continue
            deal, turn = deal_of[j], rotation_of[j]
            records[j] = GameRecord(
                deal=deal,
                rotation=turn,
                seed=seeds[deal],
                agents=rotation_order(n, turn),
                first_leader=first_leader[j],
                hands=tuple(hands[i]),
                totals=tuple(engine.final_totals[i].tolist()),
                winners=tuple(np.flatnonzero(engine.winners[i]).tolist()),
                actions=tuple(moves[i, : moved[i]].tolist()),
            )
            hands[i] = []
            moved[i] = 0
            if following < count:
                game_of[i] = following
                rotation[i] = rotation_of[following]
                keys[i] = _seat_keys(seeds[deal_of[following]], rotation_of[following], n)
                decisions[i] = 0
                restart.append(i)
                following += 1
            else:
                game_of[i] = -1
                live -= 1
        if restart:
            engine.restart(restart, [seeds[deal_of[game_of[i]]] for i in restart])
            for i, leader in zip(restart, engine.hand_leaders[restart].tolist()):
                first_leader[game_of[i]] = leader


__all__ = ["batched_parts", "play_games_batched"]
