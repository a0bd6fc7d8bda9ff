"""Deep Monte Carlo's actors (:mod:`odin_lab.training.dmc`): epsilon-greedy play on the batched
engine, every learner decision kept until its episode ends and handed out with its Monte Carlo
return.

:class:`DMCCollector` plays ``B`` games of a :class:`odin_env.batched.BatchedGames` in lockstep.
At each engine step the rows whose acting seat is the learner's (every seat without a pool, else
the seats the :class:`odin_lab.training.pool.OpponentPool` draw gives it per episode) take an
epsilon-greedy action: uniformly random among the legal ones with chance ``epsilon``, else the
learner's ``greedy`` choice (all rows in one call); the opponents' rows are asked of their
agents, one call per agent. Rewards are credited as PPO's collector credits them: a decision
gets everything its seat was paid from that decision (included) until the seat's next decision
or the episode's end (a seat paid before its first decision of an episode has nothing to
credit). When an episode ends (with horizon ``hand`` or ``win``, when a hand ends), each seat's
decisions since the last such end get their returns (:func:`discounted_returns`; with ``win``,
every one of them the seat's chance to win the game from the totals the hand left,
:func:`agents.search.win_chance`: exact when the hand ended the game) and are ready;
:meth:`DMCCollector.collect` hands out the ready ones and keeps the others for later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from odin_env.batched import BatchedGames
from odin_env.observation import OBS_SIZE
from odin_env.scoring import win_chance
from odin_lab.training.collector import FinishedEpisode
from odin_lab.training.pool import LEARNER, OpponentPool

HORIZONS = ("episode", "hand", "win")
"""Where a decision's return stops (:class:`DMCCollector`'s ``horizon``): the episode's end, the
end of its hand, or the end of its hand valued by the seat's win chance."""


def check_game_loss(game_loss: object, horizon: str) -> None:
    """``ValueError`` unless ``game_loss`` is a finite number >= 0, and 0 with horizon ``win``
    (whose returns already value who wins)."""
    if (
        isinstance(game_loss, bool)
        or not isinstance(game_loss, (int, float))
        or not 0.0 <= game_loss < float("inf")
    ):
        raise ValueError(f"game_loss must be a number of penalty points >= 0; got {game_loss!r}")
    if game_loss and horizon == "win":
        raise ValueError(
            "game_loss adds to penalty returns; horizon win already values who wins: set one"
        )


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
    masks; ``rng``: the exploration draws; ``horizon`` (one of :data:`HORIZONS`): ``episode``,
    a decision's return stops at the episode's end; ``hand``, at the end of its hand (what later
    hands pay is not counted); ``win``, the return of each decision of a hand is its seat's win
    chance from the totals the hand left, not what it was paid. ``game_loss`` (penalty points,
    with ``hand`` or ``episode``): the hand that ends a game costs each seat that does not win it
    this much more (a seat sharing the win among k: ``game_loss * (1 - 1/k)``), so the return
    of a game's last hand says who won it, not only who was left holding cards; 0 (the
    default) pays the penalty alone. One collector for the whole run: episodes in progress
    carry over from one :meth:`collect` to the next."""

    def __init__(
        self,
        games: BatchedGames,
        pool: OpponentPool | None,
        greedy: Callable[[np.ndarray, np.ndarray], np.ndarray],
        rng: np.random.Generator,
        gamma: float,
        horizon: str = "episode",
        game_loss: float = 0.0,
    ):
        if horizon not in HORIZONS:
            raise ValueError(f"horizon must be one of {', '.join(HORIZONS)}; got {horizon!r}")
        check_game_loss(game_loss, horizon)
        if not games.auto_forced:
            raise ValueError("games must apply forced decisions (BatchedGames(auto_forced=True))")
        self.games, self.pool, self.greedy, self.rng, self.gamma = games, pool, greedy, rng, gamma
        self.by_hand, self.win = horizon in ("hand", "win"), horizon == "win"
        self.game_loss = float(game_loss)
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
            out[picked] = agent.act_batch(self.games.obs[picked], self.games.mask[picked])

    def _settle(self, game: int, values: np.ndarray | None = None) -> None:
        """The returns of ``game``'s open decision chains are known: every seat's decisions
        since the chain began get theirs and are ready (``values``: each seat's return for all of
        its decisions, instead of their discounted rewards)."""
        for seat in np.flatnonzero(self._open[game] >= 0).tolist():
            i = int(self._open[game, seat])
            chain = []
            while i >= 0:
                chain.append(i)
                i = int(self._prev[i])
            chain.reverse()
            if values is None:
                self._returns[chain] = discounted_returns(self._rewards[chain].tolist(), self.gamma)
            else:
                self._returns[chain] = values[seat]
            self._ready[chain] = True
            self._n_ready += len(chain)
        self._open[game] = -1

    def _close(self, game: int) -> None:
        """The episode of ``game`` ended (its chains are settled): record it, draw the next."""
        games = self.games
        self._finished.append(
            FinishedEpisode(
                game, int(self._episode[game]), games.final_totals[game].copy(),
                int(self._decisions[game]), self._kind[game], self._learns[game].copy(),
                games.winners[game].copy(),
            )
        )  # fmt: skip
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
        if self.game_loss and games.done.any():
            over = games.done[:, None] & owned
            winners = games.winners.astype(np.float64)
            share = winners / np.maximum(winners.sum(1, keepdims=True), 1.0)
            self._rewards[self._open[over]] -= self.game_loss * (1.0 - share[over])
        settled = (games.done | games.hand_end) if self.by_hand else games.done
        ended = np.flatnonzero(settled)
        values = [None] * ended.size
        if self.win and ended.size:
            # The totals the hand left: a game that ended shows them in final_totals, the
            # others carry them into the hand just dealt.
            totals = np.where(games.done[ended, None], games.final_totals[ended],
                              games.totals()[ended])  # fmt: skip
            values = win_chance(totals, games.config.threshold)
        for game, value in zip(ended.tolist(), values):
            self._settle(game, value)
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
            self._obs[taken], self._actions[taken], self._returns[taken], where[:, 0],
            where[:, 1], where[:, 2], where[:, 3], self._finished,
        )  # fmt: skip
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


__all__ = ["DMCCollector", "Finished", "discounted_returns"]
