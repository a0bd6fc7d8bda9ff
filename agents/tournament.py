"""Tournaments: agents play seeded deals from every seat, in parallel, reproducibly.

A tournament is a list of agent specs (one per seat, see :func:`agents.make`), a game
:class:`~odin_env.rules.Config`, a number of deals and a seed. Deal ``d`` is dealt by a generator
seeded from ``SeedSequence(seed, spawn_key=(d,))``, so any one game can be replayed on its own.
With ``rotate=True`` every deal is played once per seat rotation: in rotation ``r`` seat ``s``
holds agent ``(s - r) mod n``, so every agent plays every deal from every seat. The cards dealt
do not depend on the play, so all rotations of a deal see the same hands.

Games are played directly on :class:`~odin_env.rules.Game` (no RL wrapper): forced decisions are
applied by ``play_forced``; every real decision asks the acting seat's agent with
``observe(game, seat)`` and the legal mask. Results are returned in ``(deal, rotation)`` order,
whatever the number of worker processes.
"""

from __future__ import annotations

import multiprocessing as mp
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass

import numpy as np
from tqdm import tqdm

from agents.base import make
from odin_env.observation import OBS_SIZE, observe
from odin_env.rules import Config, Game


@dataclass(frozen=True)
class GameRecord:
    """One finished game. Seats are absolute; ``agents[s]`` is the index (into the tournament's
    agent list) of the agent in seat ``s``."""

    deal: int
    rotation: int
    seed: int
    agents: tuple[int, ...]
    first_leader: int
    hands: tuple[tuple[int, ...], ...]
    """Per finished hand, the penalty of each seat."""
    totals: tuple[int, ...]
    winners: tuple[int, ...]
    """Seats on the lowest total (several on a draw)."""

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}


def deal_seed(seed: int, deal: int) -> int:
    """The seed of deal ``deal`` of a tournament seeded ``seed`` (a 63-bit int)."""
    state = np.random.SeedSequence(seed, spawn_key=(deal,)).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


def agent_seed(seed: int, deal: int, rotation: int, seat: int) -> int:
    """The seed an agent gets for one game (so stochastic agents replay identically)."""
    state = np.random.SeedSequence(seed, spawn_key=(deal, rotation, seat, 1)).generate_state(1)
    return int(state[0])


def play_game(game: Game, seat_agents: Sequence) -> Game:
    """Play ``game`` to its end with ``seat_agents[s]`` in seat ``s``; return it."""
    obs = np.empty(OBS_SIZE, dtype=np.float32)
    while True:
        game.play_forced()
        if game.is_over:
            return game
        seat = game.current
        game.apply(seat_agents[seat].act(observe(game, seat, out=obs), game.legal_mask()))


def rotation_order(players: int, rotation: int) -> tuple[int, ...]:
    """Which agent sits in each seat in a rotation: seat ``s`` holds agent ``(s - r) % n``."""
    return tuple((s - rotation) % players for s in range(players))


@dataclass(frozen=True)
class _Job:
    specs: tuple[str, ...]
    config: Config
    seed: int
    rotations: int


_worker_agents: list = []


def _init_worker(specs: Sequence[str]) -> None:
    global _worker_agents
    _worker_agents = [make(spec) for spec in specs]


def _play_deal(job: _Job, deal: int, agents: Sequence) -> list[GameRecord]:
    seed = deal_seed(job.seed, deal)
    n = job.config.players
    records = []
    for rotation in range(job.rotations):
        order = rotation_order(n, rotation)
        seat_agents = [agents[i] for i in order]
        for seat, agent in enumerate(seat_agents):
            reset = getattr(agent, "reset", None)
            if reset is not None:
                reset(seat, agent_seed(job.seed, deal, rotation, seat))
        game = Game(job.config, seed=seed)
        first_leader = game.hand_leader
        play_game(game, seat_agents)
        records.append(
            GameRecord(
                deal=deal,
                rotation=rotation,
                seed=seed,
                agents=order,
                first_leader=first_leader,
                hands=tuple(game.history),
                totals=tuple(game.totals),
                winners=game.winners,
            )
        )
    return records


def _work(args: tuple[_Job, range]) -> list[GameRecord]:
    job, deals = args
    out = []
    for deal in deals:
        out += _play_deal(job, deal, _worker_agents)
    return out


def play_tournament(
    specs: Sequence[str],
    config: Config,
    deals: int,
    seed: int = 0,
    *,
    rotate: bool = True,
    workers: int = 1,
    progress: bool = True,
    chunk: int = 8,
) -> list[GameRecord]:
    """Play ``deals`` seeded deals (each once per seat rotation when ``rotate``); return every
    game in ``(deal, rotation)`` order. ``specs`` holds one agent spec per seat."""
    if len(specs) != config.players:
        raise ValueError(
            f"got {len(specs)} agents for {config.players} players: give one agent per seat"
        )
    if deals < 1:
        raise ValueError(f"deals must be >= 1; got {deals}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1; got {workers}")
    for spec in specs:  # fail here, with a clear message, rather than inside a worker
        make(spec)
    job = _Job(tuple(specs), config, int(seed), config.players if rotate else 1)
    chunks = [range(lo, min(lo + chunk, deals)) for lo in range(0, deals, chunk)]
    bar = tqdm(total=deals * job.rotations, unit="game", disable=not progress, leave=False)
    records: list[GameRecord] = []
    with bar:
        for part in _map(job, chunks, workers):
            records += part
            bar.update(len(part))
    return records


def _map(job: _Job, chunks: list[range], workers: int) -> Iterator[list[GameRecord]]:
    if workers == 1 or len(chunks) == 1:
        _init_worker(job.specs)
        for deals in chunks:
            yield _work((job, deals))
        return
    # spawn, not fork: torch (PPO agents) is not fork-safe, and spawn behaves alike everywhere.
    context = mp.get_context("spawn")
    with context.Pool(workers, initializer=_init_worker, initargs=(job.specs,)) as pool:
        yield from pool.imap(_work, [(job, deals) for deals in chunks])
