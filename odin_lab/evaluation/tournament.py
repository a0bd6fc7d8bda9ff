"""Tournaments: agents play seeded deals from every seat, in parallel, reproducibly.

A tournament is a list of agent specs (one per seat, see :func:`agents.make`), a game
:class:`~odin_env.rules.Config`, a number of deals and a seed. Deal ``d`` is dealt by a generator
seeded from ``SeedSequence(seed, spawn_key=(d,))``, so any one game can be replayed on its own.
With ``rotate=True`` every deal is played once per seat rotation: in rotation ``r`` seat ``s``
holds agent ``(s - r) mod n``, so every agent plays every deal from every seat. The cards dealt
do not depend on the play, so all rotations of a deal see the same hands.

Two engines play the same games. ``single`` plays one :class:`~odin_env.rules.Game` at a time
(no RL wrapper): forced decisions are applied by ``play_forced``; every real decision asks the
acting seat's agent with ``observe(game, seat)`` and the legal mask; an agent with ``reset`` is
reseeded per game with ``agent_seed``. ``batched`` plays up to ``batch`` games at once in
:class:`~odin_env.batched.BatchedGames` (game ``(d, r)`` in a slot is exactly
``Game(config, seed=deal_seed(seed, d))``; a slot whose game ends is given the next game of
the list), and asks each agent once per step for the rows where it acts (``act_batch``). It
needs every agent in a batched form (:func:`agents.registry.make_batch_agent`: every agent
but ``search``); ``auto``, the default, picks it exactly then. A deterministic agent plays
the same games on both engines. A stochastic one draws differently on each, but the batched random
agent draws each decision from a key made of the deal seed, rotation, seat and decision number,
so that on either engine the games do not depend on the batch size or the worker count.

Results are returned in ``(deal, rotation)`` order, whatever the engine and the number of
worker processes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import closing

import numpy as np
from tqdm import tqdm

from agents.batch import BatchAgent
from agents.registry import absolute_spec, has_batch_form
from odin_env.batched import announce_compilation
from odin_env.observation import observation_size, observe
from odin_env.rules import Config, Game
from odin_lab.evaluation import failures, players
from odin_lab.evaluation.batched_tournament import batched_parts, play_games_batched
from odin_lab.evaluation.deals import (
    GameRecord,
    Job,
    PlayerFailed,
    TournamentInterrupted,
    agent_seed,
    deal_seed,
    rotation_order,
    seat_name,
)
from odin_lab.evaluation.failures import AgentFailed
from odin_lab.evaluation.limits import MAX_GAMES
from odin_lab.evaluation.warm import compile_side_by_side
from odin_lab.evaluation.workers import Workers

TOURNAMENT_ENGINES = ("auto", "single", "batched")
"""``play_tournament``'s engines: ``auto`` is ``batched`` when every agent has a batched form."""

BATCH = 1024
"""Default number of games a batched tournament plays at once (per worker)."""


def play_game(
    game: Game,
    seat_agents: Sequence,
    actions: list[int] | None = None,
    names: Sequence[str] | None = None,
    where: tuple[int, int] = (0, 0),
    limit: float | None = None,
) -> Game:
    """Play ``game`` to its end with ``seat_agents[s]`` in seat ``s``; return it. ``actions``:
    when given, the action of every decision that was not forced is appended to it, in order.
    An agent that fails (see :mod:`odin_lab.evaluation.failures`; ``limit``: the decision
    limit, by default the process's) raises :class:`AgentFailed` naming it (``names[s]``, by
    default its ``name``), its seat and the game ``where`` (deal, rotation)."""
    obs = np.empty(observation_size(game.config), dtype=np.float32)
    limit = failures.decision_limit() if limit is None else limit
    while True:
        game.play_forced()
        if game.is_over:
            return game
        seat = game.current
        agent = seat_agents[seat]
        who = names[seat] if names else getattr(agent, "name", type(agent).__name__)
        place = (who, seat, *where)
        view = observe(game, seat, out=obs)
        chosen = failures.ask(limit, place, agent.act, view, game.legal_mask())
        try:
            action = failures.as_action(chosen)
            game.apply(action)
        except ValueError as error:  # say whose move it was: often one's own agent
            raise failures.failed(place, f"chose {chosen!r:.60}: {error}") from None
        if actions is not None:
            actions.append(action)


_worker_agents: list = []


def _init_worker(specs: Sequence[str], batched: bool = False) -> None:
    # A batched agent serves rows of many games at once, so it keeps no per-game state: one
    # instance per distinct spec serves all its seats, in one call per step. The batched
    # random agent draws from per-row keys, never from its seed (0).
    global _worker_agents
    _worker_agents = players.seat_agents(specs, batched)


def _play_deal(
    job: Job, deal: int, agents: Sequence, watch: Callable[[Game], None] | None = None
) -> list[GameRecord]:
    seed = deal_seed(job.seed, deal)
    n = job.config.players
    records = []
    for rotation in range(job.rotations):
        order = rotation_order(n, rotation)
        seat_agents = [agents[i] for i in order]
        names = [seat_name(job, agents, i) for i in order]
        for seat, agent in enumerate(seat_agents):
            reset = getattr(agent, "reset", None)
            if reset is not None:
                place = (names[seat], seat, deal, rotation)
                seeded = agent_seed(job.seed, deal, rotation, seat)
                failures.ask(job.limit, place, reset, seat, seeded, doing="in reset")
        game = Game(job.config, seed=seed)
        first_leader = game.hand_leader
        if watch is not None:
            watch(game)
        actions: list[int] = []
        play_game(game, seat_agents, actions, names, (deal, rotation), job.limit)
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
                actions=tuple(actions),
            )
        )
    return records


def _work(args: tuple[Job, range]) -> list[GameRecord]:
    job, part = args
    if job.batch:
        return play_games_batched(job, part, _worker_agents)
    out: list[GameRecord] = []
    for deal in part:
        try:
            out += _play_deal(job, deal, _worker_agents)
        except AgentFailed as failure:  # the deals this task finished are kept too
            raise AgentFailed(failure.line, failure.details, out) from None
    return out


def _limit() -> float:
    return failures.decision_limit()


def _check_engine(engine: str, batch: int) -> None:
    if engine not in TOURNAMENT_ENGINES:
        raise ValueError(f"engine must be one of {', '.join(TOURNAMENT_ENGINES)}; got {engine!r}")
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1; got {batch!r}")


def play_deals(
    agents: Sequence,
    config: Config,
    deals: int | range,
    seed: int = 0,
    *,
    rotate: bool = True,
    engine: str = "auto",
    batch: int = BATCH,
    watch: Callable[[Game], None] | None = None,
) -> list[GameRecord]:
    """The games of :func:`play_tournament` with agent objects (one per seat), in this process.

    ``deals``: a count, or a range of deal indices (game ``(d, r)`` is the same one in any
    range that holds ``d``). The batched engine needs every agent to have ``act_batch``; an
    agent appearing in several seats is asked once per step for all of them. ``watch``: called
    with each game (a ``rules.Game``, then played in place) before its first decision, for a
    measurement that needs the true state (a search that sees every hand, as an upper bound);
    no agent is given it. The single engine only."""
    _check_engine(engine, batch)
    if watch is not None and engine == "batched":
        raise ValueError("watch needs the single engine (engine='single' or 'auto'), not 'batched'")
    if len(agents) != config.players:
        raise ValueError(
            f"got {len(agents)} agents for {config.players} players: give one agent per seat"
        )
    deals = range(deals) if isinstance(deals, (int, np.integer)) else deals
    if not isinstance(deals, range) or deals.step != 1 or deals.start < 0 or not len(deals):
        raise ValueError(f"deals must be a count >= 1 or a non-empty range(lo, hi); got {deals}")
    names = [getattr(agent, "name", repr(agent)) for agent in agents]
    batchable = [isinstance(a, BatchAgent) for a in agents]
    batched = watch is None and players.use_batched(engine, names, batchable, "engine")
    rotations = config.players if rotate else 1
    job = Job((), config, int(seed), rotations, int(batch) if batched else 0, _limit())
    if batched:
        games = range(deals.start * rotations, deals.stop * rotations)
        return play_games_batched(job, games, agents)
    return [record for deal in deals for record in _play_deal(job, deal, agents, watch)]


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
    engine: str = "auto",
    batch: int = BATCH,
    start: int = 0,
    ray: str | None = None,
    on_deals: Callable[[list[GameRecord]], None] | None = None,
) -> list[GameRecord]:
    """Play ``deals`` seeded deals (each once per seat rotation when ``rotate``); return every
    game in ``(deal, rotation)`` order. ``specs`` holds one agent spec per seat.

    ``engine``: one of ``TOURNAMENT_ENGINES`` (see the module docstring); ``batch``: games
    played at once by the batched engine (per worker); ``chunk``: deals per task of the single
    engine. Neither changes the games. ``start``: play only deals ``start .. deals - 1`` (the
    rest of an interrupted tournament). Ctrl-C raises :class:`TournamentInterrupted` holding the
    games of the deals finished so far. ``ray``: play the chunks as Ray tasks on the cluster at
    this address (``"local"``: a Ray instance of ``workers`` CPUs started for this process; see
    :func:`odin_lab.evaluation.distributed.connect`), the same games in the same order; a chunk
    whose worker dies is played again. ``on_deals``: called with the games so far (from
    ``start``, in order; the growing list itself) each time more arrive, to save them as they
    come (:class:`odin_lab.evaluation.resume.Saver`)."""
    _check_engine(engine, batch)
    if len(specs) != config.players:
        raise ValueError(
            f"got {len(specs)} agents for {config.players} players: give one agent per seat"
        )
    if not 1 <= deals <= MAX_GAMES:  # the chunk list below has one entry per few deals
        raise ValueError(f"deals must be 1-{MAX_GAMES:,} (limits.MAX_GAMES); got {deals}")
    if not 0 <= start < deals:
        raise ValueError(f"start must be a deal 0-{deals - 1}; got {start}")
    if workers < 1:
        raise ValueError(f"workers must be >= 1; got {workers}")
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1; got {chunk}")
    batched = players.use_batched(engine, specs, [has_batch_form(spec) for spec in specs], "engine")
    spread = workers
    if ray is not None:
        from odin_lab.evaluation import distributed

        # The cluster's CPUs size the chunks; several per CPU balance the load and make a
        # chunk re-run after a lost worker cheap.
        workers = distributed.connect(ray, workers)
        spread = 4 * workers
    rotations = config.players if rotate else 1
    # Workers rebuild the agents from the specs, maybe in another folder (Ray): a file agent's
    # relative path is made absolute here, where it was given.
    specs = tuple(absolute_spec(spec) for spec in specs)
    job = Job(specs, config, int(seed), rotations, int(batch) if batched else 0, _limit())
    if batched:
        # Game g is deal g // rotations, rotation g % rotations.
        chunks = batched_parts(start * rotations, deals * rotations, job.batch, max(16, spread))
        if announce_compilation():  # before the progress bar, not in its line
            compile_side_by_side(config, specs)  # the engine here, the agents' kernels aside
    else:
        chunks = [range(lo, min(lo + chunk, deals)) for lo in range(start, deals, chunk)]
    bar = tqdm(total=(deals - start) * rotations, unit="game", disable=not progress, leave=False)
    records: list[GameRecord] = []
    try:
        parts = _parts(job, chunks, workers, ray, bar)
        # closing: stop the workers or tasks still running as soon as the loop is left.
        with bar, closing(parts):
            for part in parts:
                records += part
                if on_deals is not None:
                    on_deals(records)
    except (KeyboardInterrupt, AgentFailed) as stop:
        if isinstance(stop, AgentFailed):
            # The failed task's finished games, when they follow on from the games so far (a
            # batched part may begin or end inside a deal).
            following = start * rotations + len(records)
            first = stop.done[:1]
            if first and (first[0].deal, first[0].rotation) == divmod(following, rotations):
                records = records + stop.done
        done = len(records) // rotations  # whole deals only: every rotation of each
        kept = records[: done * rotations]
        if isinstance(stop, AgentFailed):
            raise PlayerFailed(kept, start + done, stop) from None
        raise TournamentInterrupted(kept, start + done) from None
    return records


def _parts(
    job: Job, chunks: list[range], workers: int, ray: str | None, bar: tqdm
) -> Iterator[list[GameRecord]]:
    """The chunks' games in chunk order, from local processes or Ray tasks; ``bar`` counts the
    games as they arrive."""
    if ray is None:
        for part in _map(job, chunks, workers):
            bar.update(len(part))
            yield part
        return
    from odin_lab.evaluation.distributed import map_ordered

    def count(part: list[GameRecord]) -> None:
        bar.update(len(part))

    tasks = [(job, part) for part in chunks]
    try:
        yield from map_ordered(_work_anywhere, tasks, on_result=count, window=2 * workers + 2)
    except AgentFailed as failure:
        # Ray raises its own wrapper of the worker's error (an AgentFailed too, whose str() is
        # Ray's traceback): the worker's own line, details and finished games instead.
        raise AgentFailed(failure.line, failure.details, failure.done) from None


_worker_built: tuple | None = None
"""What this process's ``_worker_agents`` were built for (a Ray worker serves many jobs)."""


def _work_anywhere(args: tuple[Job, range]) -> list[GameRecord]:
    """:func:`_work` in any process: the agents are built on the first chunk of a job (a Ray
    worker has no pool initializer) and kept for the next chunks."""
    global _worker_built
    job = args[0]
    key = (job.specs, job.batch > 0)
    if _worker_built != key:
        _init_worker(*key)
        _worker_built = key
    return _work(args)


def _map(job: Job, chunks: list[range], workers: int) -> Iterator[list[GameRecord]]:
    init = (job.specs, job.batch > 0)
    _init_worker(*init)
    if workers == 1 or len(chunks) == 1:
        for part in chunks:
            yield _work((job, part))
        return
    with Workers(workers, initializer=_init_worker, initargs=init) as pool:
        # This process plays the first part while the workers start: it compiles the numba
        # kernels once, and the workers load them from numba's disk cache, instead of every
        # worker compiling the same kernels at once (and announcing it) on shared cores.
        yield _work((job, chunks[0]))
        yield from pool.imap(_work, [(job, part) for part in chunks[1:]])
