"""The actors of the Q-network learners (:mod:`odin_lab.training.dmc`,
:mod:`odin_lab.training.exit`): epsilon-greedy play on the batched engine, every learner decision
kept until its return is known and handed out with it, at one table size or several in turn.

:class:`DMCCollector` plays ``B`` games of a :class:`odin_env.batched.BatchedGames` in lockstep.
At each engine step the rows whose acting seat is the learner's (every seat without a pool, else
the seats the :class:`odin_lab.training.pool.OpponentPool` draw gives it per episode) take an
epsilon-greedy action: uniformly random among the legal ones with chance ``epsilon``, else the
learner's ``greedy`` choice (all rows in one call); the opponents' rows are asked of their
agents, one call per agent. Rewards are credited as PPO's collector credits them: a decision
gets everything its seat was paid from that decision (included) until the seat's next decision
or the episode's end (a seat paid before its first decision of an episode has nothing to
credit). When an episode ends (with horizon ``hand``, when a hand ends), each seat's decisions
since the last such end get their returns (:func:`discounted_returns`) and are ready;
:meth:`DMCCollector.collect` hands out the ready ones and keeps the others for later.
:class:`TableActors` holds a collector per table size a learner plays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from odin_env.batched import BatchedGames
from odin_env.observation import OBS_SIZE
from odin_env.rules import Config
from odin_env.seeding import spawn_seed
from odin_lab.evaluation.failures import opponent_actions
from odin_lab.training.collector import FinishedEpisode
from odin_lab.training.config import TrainConfig
from odin_lab.training.learner import GAMES_STREAM, POOL_STREAM
from odin_lab.training.pool import LEARNER, OpponentPool

HORIZONS = ("hand", "episode")
"""Where a decision's return stops (:class:`DMCCollector`'s ``horizon``): the end of its hand,
or the episode's end."""
EXPLORE, TABLES = 1, 4
"""Sub-streams of the games stream (``spawn_seed(seed, GAMES_STREAM, steps, KEY)``): the actors'
exploration draws, and the games and pools of a table size after the first (``steps, TABLES,
k``; also of the pool stream). The learners' own: :mod:`odin_lab.training.qnet` (2, 3),
:mod:`odin_lab.training.dmc` (5), :mod:`odin_lab.training.exit` (4, as ``steps, 4``)."""


def discounted_returns(rewards: list[float], gamma: float) -> list[float]:
    """The return of each of one seat's decisions of an episode, in order:
    ``G_t = r_t + gamma * G_{t+1}``, ``G`` after the last decision 0."""
    out, total = [0.0] * len(rewards), 0.0
    for t in range(len(rewards) - 1, -1, -1):
        total = rewards[t] + gamma * total
        out[t] = total
    return out


@dataclass
class Finished:
    """Learner decisions whose episodes ended, with their returns (what an update trains on)."""

    obs: np.ndarray
    """``(N, OBS_SIZE)`` float32: the acting seat's observation."""
    actions: np.ndarray
    """``(N,)`` int64: the action taken."""
    returns: np.ndarray
    """``(N,)`` float32: the seat's return from that decision (:func:`discounted_returns`)."""
    game: np.ndarray
    """``(N,)`` int64: the game slot."""
    seat: np.ndarray
    """``(N,)`` int64: the acting seat."""
    episode: np.ndarray
    """``(N,)`` int64: the episode's number in its slot (:attr:`FinishedEpisode.episode`)."""
    hand: np.ndarray
    """``(N,)`` int64: the hand's number in its episode (0, 1, ...)."""
    episodes: list[FinishedEpisode]
    """The episodes that ended while collecting."""

    def __len__(self) -> int:
        return len(self.actions)


class DMCCollector:
    """Epsilon-greedy actors on ``games`` (the learner in every seat, or in the seats ``pool``
    gives it per episode, its opponents in the others); keeps each learner decision until its
    episode ends and its return is known (see the module docstring).

    ``greedy(obs, mask) -> actions``: the learner's argmax-Q choice for rows of observations and
    masks; ``rng``: the exploration draws; ``horizon`` (one of :data:`HORIZONS`): ``hand``, a
    decision's return stops at the end of its hand (what later hands pay is not counted);
    ``episode``, at the episode's end. One collector for the whole run: episodes in progress
    carry over from one :meth:`collect` to the next."""

    def __init__(
        self,
        games: BatchedGames,
        pool: OpponentPool | None,
        greedy: Callable[[np.ndarray, np.ndarray], np.ndarray],
        rng: np.random.Generator,
        gamma: float,
        horizon: str = "episode",
    ):
        if horizon not in HORIZONS:
            raise ValueError(f"horizon must be one of {', '.join(HORIZONS)}; got {horizon!r}")
        if not games.auto_forced:
            raise ValueError("games must apply forced decisions (BatchedGames(auto_forced=True))")
        self.games, self.pool, self.greedy, self.rng, self.gamma = games, pool, greedy, rng, gamma
        self.by_hand = horizon == "hand"
        batch, players = games.batch, games.config.players
        # The decisions of episodes in progress (and finished ones not yet handed out), one row
        # each; `prev` links a decision to its seat's previous one in the episode (-1: none).
        capacity = 4 * batch * players
        self._obs = np.empty((capacity, OBS_SIZE), dtype=np.float32)
        self._actions = np.empty(capacity, dtype=np.int64)
        self._rewards = np.zeros(capacity, dtype=np.float64)
        self._prev = np.empty(capacity, dtype=np.int64)
        self._returns = np.zeros(capacity, dtype=np.float32)
        self._ready = np.zeros(capacity, dtype=np.bool_)
        self._where = np.zeros((capacity, 4), dtype=np.int64)  # game, seat, episode, hand
        self._size = 0
        self._n_ready = 0  # decisions of finished episodes not yet handed out
        self._open = np.full((batch, players), -1, dtype=np.int64)  # each seat's latest
        self._episode = np.zeros(batch, dtype=np.int64)
        self._decisions = np.zeros(batch, dtype=np.int64)
        self._hand = np.zeros(batch, dtype=np.int64)
        self._kind = [LEARNER] * batch
        self._table = np.full((batch, players), None, dtype=object)
        self._learns = np.ones((batch, players), dtype=np.bool_)
        self._finished: list[FinishedEpisode] = []
        if pool is not None:
            if pool.players != players:
                raise ValueError(f"the pool seats {pool.players} players, the games {players}")
            for i in range(batch):
                self._draw(i)

    def _draw(self, game: int) -> None:
        kind, table = self.pool.draw()
        self._kind[game] = kind
        self._table[game] = table
        self._learns[game] = [agent is None for agent in table]

    def _grow(self, extra: int) -> None:
        need = self._size + extra
        if need <= len(self._actions):
            return
        capacity = max(need, 2 * len(self._actions))
        for name in ("_obs", "_actions", "_rewards", "_prev", "_returns", "_ready", "_where"):
            old = getattr(self, name)
            new = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            new[: self._size] = old[: self._size]
            setattr(self, name, new)

    def _choose(self, obs: np.ndarray, mask: np.ndarray, epsilon: float) -> np.ndarray:
        """Epsilon-greedy actions for the learner's rows."""
        explore = self.rng.random(len(obs)) < epsilon
        actions = np.empty(len(obs), dtype=np.int64)
        for row in np.flatnonzero(explore).tolist():
            legal = np.flatnonzero(mask[row])
            actions[row] = legal[self.rng.integers(len(legal))]
        exploit = ~explore
        if exploit.any():
            actions[exploit] = self.greedy(obs[exploit], mask[exploit])
        return actions

    def _opponent_actions(self, rows: np.ndarray, seats: np.ndarray, out: np.ndarray) -> None:
        """``out[rows]``: the actions of the opponents seated there, one call per agent."""
        groups: dict[int, tuple[Any, list[int]]] = {}
        for row, agent in zip(rows.tolist(), self._table[rows, seats[rows]].tolist()):
            groups.setdefault(id(agent), (agent, []))[1].append(row)
        for agent, members in groups.values():
            picked = np.asarray(members)
            out[picked] = opponent_actions(agent, self.games.obs[picked], self.games.mask[picked])

    def _settle(self, game: int) -> None:
        """The returns of ``game``'s open decision chains are known: every seat's decisions
        since the chain began get theirs and are ready."""
        for seat in np.flatnonzero(self._open[game] >= 0).tolist():
            i = int(self._open[game, seat])
            chain = []
            while i >= 0:
                chain.append(i)
                i = int(self._prev[i])
            chain.reverse()
            self._returns[chain] = discounted_returns(self._rewards[chain].tolist(), self.gamma)
            self._ready[chain] = True
            self._n_ready += len(chain)
        self._open[game] = -1

    def _close(self, game: int) -> None:
        """The episode of ``game`` ended (its chains are settled): record it, draw the next."""
        games = self.games
        self._finished.append(
            FinishedEpisode(
                game,
                int(self._episode[game]),
                games.final_totals[game].copy(),
                int(self._decisions[game]),
                self._kind[game],
                self._learns[game].copy(),
                games.winners[game].copy(),
            )
        )
        self._episode[game] += 1
        self._decisions[game] = self._hand[game] = 0
        if self.pool is not None:
            self._draw(game)

    def step(self, epsilon: float) -> None:
        """One engine step of every game."""
        games = self.games
        slots = np.arange(games.batch)
        seats = games.seat
        learns = self._learns[slots, seats]
        mine = slots[learns]
        acts = np.empty(games.batch, dtype=np.int64)
        if mine.size < games.batch:
            self._opponent_actions(slots[~learns], seats, acts)
        if mine.size:
            self._grow(mine.size)
            rows = self._size + np.arange(mine.size)
            self._size += mine.size
            obs, mask = games.obs[mine], games.mask[mine]
            acts[mine] = self._choose(obs, mask, epsilon)
            self._obs[rows] = obs
            self._actions[rows] = acts[mine]
            self._rewards[rows] = 0.0
            self._ready[rows] = False
            self._prev[rows] = self._open[mine, seats[mine]]
            self._open[mine, seats[mine]] = rows
            self._where[rows] = np.stack(
                [mine, seats[mine], self._episode[mine], self._hand[mine]], axis=1
            )
            self._decisions[mine] += 1
        games.step(acts)
        owned = self._open >= 0
        # Each (game, seat) has one latest decision, so the scatter-add has no repeats; a seat
        # paid before its first decision of the episode has nothing to credit.
        self._rewards[self._open[owned]] += games.rewards[owned]
        settled = (games.done | games.hand_end) if self.by_hand else games.done
        for game in np.flatnonzero(settled).tolist():
            self._settle(game)
        self._hand[games.hand_end] += 1
        for game in np.flatnonzero(games.done).tolist():
            self._close(game)

    def collect(self, n_decisions: int, epsilon: float) -> Finished:
        """Step until at least ``n_decisions`` learner decisions belong to finished episodes;
        hand them all out (in the order they were taken) and forget them."""
        while self._n_ready < n_decisions:
            self.step(epsilon)
        size = self._size
        ready = self._ready[:size]
        taken = np.flatnonzero(ready)
        where = self._where[taken]
        out = Finished(
            self._obs[taken],
            self._actions[taken],
            self._returns[taken],
            where[:, 0],
            where[:, 1],
            where[:, 2],
            where[:, 3],
            self._finished,
        )
        self._finished = []
        # Keep the decisions of episodes in progress, renumbered (a seat's previous decision is
        # in the same episode, so it is kept too).
        kept = np.flatnonzero(~ready)
        position = np.full(size, -1, dtype=np.int64)
        position[kept] = np.arange(len(kept))
        prev = self._prev[kept]
        for name in ("_obs", "_actions", "_rewards", "_where"):
            array = getattr(self, name)
            array[: len(kept)] = array[kept]
        self._prev[: len(kept)] = np.where(prev >= 0, position[np.maximum(prev, 0)], -1)
        self._ready[: len(kept)] = False
        self._n_ready = 0
        self._size = len(kept)
        owned = self._open >= 0
        self._open[owned] = position[self._open[owned]]
        return out


def table_game(game: Config, players: int) -> Config:
    """The run's game at a table of ``players``: R3's colours for that size (4 at 2 players,
    else 6) when the run's game has its own size's, else the run's colours."""
    own_default = replace(game, colours=None).colours == game.colours
    return replace(game, players=players, colours=None if own_default else game.colours)


def table_sizes(other_tables: list[int], run: TrainConfig) -> list[int]:
    """The table sizes a learner plays, in turn: the game's, then ``other_tables``."""
    return [run.game.players, *(n for n in other_tables if n != run.game.players)]


def check_tables(tables: list[int], run: TrainConfig) -> None:
    """``ValueError`` unless the table sizes ``tables`` (each one the game allows: declared with
    the setting) are distinct, seat the learner's fixed ``seat`` (if any) and deal the run's
    colours."""
    if len(set(tables)) != len(tables):
        raise ValueError(f"other_tables names a size twice; got {list(tables)}")
    if tables and run.seat is not None and run.seat >= min(tables):
        raise ValueError(
            f"seat {run.seat} does not exist at a table of {min(tables)} (other_tables); "
            "leave seat unset or choose a lower one"
        )
    for players in tables:
        try:
            table_game(run.game, players)
        except ValueError as error:
            raise ValueError(f"{error} (other_tables {players}); or leave colours unset") from None


class TableActors:
    """A learner's actors at each table size it plays (:func:`table_sizes`): a
    :class:`DMCCollector` per size, on games and an opponent pool of its own, seeded from the
    run's seed and ``steps`` (the first size as a run of that size alone), all sharing one
    exploration stream; the sizes take one update each in turn."""

    def __init__(
        self,
        config: TrainConfig,
        other_tables: list[int],
        steps: int,
        greedy: Callable[[np.ndarray, np.ndarray], np.ndarray],
        gamma: float,
        horizon: str,
    ):
        rng = np.random.default_rng(spawn_seed(config.seed, GAMES_STREAM, steps, EXPLORE))
        self.pools: list[OpponentPool] = []
        self.collectors: list[DMCCollector] = []
        for k, players in enumerate(table_sizes(other_tables, config)):
            key = (steps,) if k == 0 else (steps, TABLES, k)
            pool = None
            if config.opponents != [LEARNER]:
                seed = spawn_seed(config.seed, POOL_STREAM, *key)
                pool = OpponentPool(config.opponents, players, config.seat, seed)
                self.pools.append(pool)
            game = table_game(config.game, players)
            games = BatchedGames(
                game, config.selfplay_batch, seed=spawn_seed(config.seed, GAMES_STREAM, *key)
            )
            self.collectors.append(DMCCollector(games, pool, greedy, rng, gamma, horizon))

    def turn(self, update: int) -> DMCCollector:
        """The collector of update number ``update`` (counted from the run's start)."""
        return self.collectors[update % len(self.collectors)]

    def set_snapshots(self, snapshots: list[Any]) -> None:
        """The ``self`` opponents of every pool."""
        for pool in self.pools:
            pool.set_snapshots(snapshots)


__all__ = [
    "EXPLORE", "HORIZONS", "TABLES", "DMCCollector", "Finished", "TableActors", "check_tables",
    "discounted_returns", "table_game", "table_sizes",
]  # fmt: skip
