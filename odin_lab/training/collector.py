"""Rollouts on the batched engine: shared-parameter self-play (every seat of every game is the
learner), or the learner against opponents drawn from a pool
(:class:`odin_lab.training.pool.OpponentPool`).

A VecEnv cannot express this (one VecEnv slot is one agent, and here the seat that acts changes
from step to step, in lockstep over all games), so :class:`SelfPlayCollector` is its own rollout
collector for sb3-contrib's ``MaskablePPO``. Each engine step takes the pending decision of all B
games of a :class:`odin_env.batched.BatchedGames` (row ``i`` belongs to seat ``seat[i]`` of game
``i``), runs the policy once on the rows of the learner's seats (actions, values and
log-probabilities under the mask) and each opponent agent once on the rows of its seats, steps
the engine, and files each learner decision in the trajectory of its (game, seat). Against
opponents this is the single-seat training of :class:`odin_env.single_agent.SingleAgentEnv`
(same pool kinds and draws, the learner paid its own rewards), without a process per env and
with the batched opponents (``random``, ``greedy``, PPO snapshots) asked once per step.

Rewards: a decision's reward is everything its seat was paid from that decision (included) until
that seat's next decision, or until the episode's end. An episode's end closes the trajectory of
*every* seat of that game as terminal, not only the seat that acted last: the other seats' last
decisions receive the final penalties (or win shares) and ``terminal``. A seat paid before its
first decision of an episode (a hand ended before it ever had a choice) has no decision to credit;
that reward is counted in :attr:`Rollout.dropped_reward` (it does not happen with ``episode="game"``
in practice, and rarely with ``episode="hand"``).

Rollout boundaries: games run on from one rollout to the next (a 4-player game lasts a few hundred
decisions, longer than a rollout is per game). At the end of a rollout each seat's latest decision
is still *open*: its reward is incomplete and its successor unknown. Open decisions are not
trained on in that rollout; they are carried to the next one, where they close (their action,
value and log-probability are those of the policy that chose them, one update older: standard
PPO importance weighting handles it). The last closed decision before an open one bootstraps from
the open decision's value and its GAE chain stops there, as SB3 truncates at a rollout's end. So
every decision is trained on exactly once; a rollout keeps ``carried in + collected - carried
out`` decisions (at most ``B x players`` differ from the collected count).

Advantages: GAE(``model.gamma``, ``model.gae_lambda``) per (game, seat) trajectory (:func:`gae`);
returns = advantages + values, as SB3 computes them.
:func:`odin_lab.training.update.train_on_rollout` runs PPO's usual update on the kept decisions.

Randomness: the engine's deals come from its seed, the action draws from torch's generator;
:func:`odin_lab.training.selfplay.train_selfplay` seeds both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch as th

from agents.ppo import prior_actions
from agents.registry import make_batch_agent
from odin_env.batched import BatchedGames
from odin_env.full_state import HIDDEN_SIZE, hidden
from odin_env.observation import OBS_SIZE
from odin_env.rules import NUM_ACTIONS
from odin_lab.evaluation.failures import opponent_actions
from odin_lab.training.pool import LEARNER, OpponentPool

DEFAULT_BATCH = 256
"""Games in lockstep: large enough that one policy call serves many decisions, small enough that
a rollout of ~4,096 decisions still takes 16 steps of each game."""


def gae(
    rewards: np.ndarray,
    values: np.ndarray,
    next_values: np.ndarray,
    terminal: np.ndarray,
    next_index: np.ndarray,
    gamma: float,
    gae_lambda: float,
) -> tuple[np.ndarray, np.ndarray]:
    """GAE(gamma, lambda) advantages and returns of decisions stored as linked trajectories.

    Row ``r`` is one decision: its reward, its value ``V(s_r)``, the value of its seat's next
    observation ``next_values[r]`` (ignored when ``terminal[r]``), and ``next_index[r]``: the row
    of the same seat's next decision, whose advantage continues the chain, or -1 when the chain
    ends (terminal, or the next decision lies outside these rows: then the return is truncated and
    bootstrapped with ``next_values[r]``). Rows must be ordered so that ``next_index[r] > r``.

    ``delta_r = reward_r + gamma * next_value_r * (1 - terminal_r) - value_r`` and
    ``A_r = delta_r + gamma * lambda * (1 - terminal_r) * A_{next_index[r]}``; returns ``(A, A +
    values)`` as float32 arrays.
    """
    n = len(rewards)
    arrays = (rewards, values, next_values, terminal, next_index)
    if any(np.shape(a) != (n,) for a in arrays):
        raise ValueError(
            "rewards, values, next_values, terminal and next_index must be 1-D arrays of one "
            f"length; got shapes {[np.shape(a) for a in arrays]}"
        )
    index = np.asarray(next_index, dtype=np.int64)
    later = (index == -1) | (index > np.arange(n))
    if not (later.all() and (index < n).all()):
        bad = int(np.flatnonzero(~later | (index >= n))[0])
        raise ValueError(
            f"next_index[{bad}] = {int(index[bad])}: it must be -1 or a later row (< {n})"
        )
    if not (0.0 <= gamma <= 1.0 and 0.0 <= gae_lambda <= 1.0):
        raise ValueError(f"gamma and gae_lambda must be in [0, 1]; got {gamma}, {gae_lambda}")
    live = 1.0 - np.asarray(terminal, dtype=np.float64)
    values = np.asarray(values, dtype=np.float64)
    delta = np.asarray(rewards, np.float64) + gamma * live * np.asarray(next_values) - values
    carry = (gamma * gae_lambda * live).tolist()
    # A plain loop: rows are few thousand per rollout and the chain runs across arbitrary rows.
    adv = [0.0] * n
    for r, (d, c, nxt) in enumerate(zip(delta.tolist()[::-1], carry[::-1], index.tolist()[::-1])):
        row = n - 1 - r
        adv[row] = d + (c * adv[nxt] if nxt >= 0 else 0.0)
    advantages = np.array(adv, dtype=np.float64)
    return advantages.astype(np.float32), (advantages + values).astype(np.float32)


@dataclass
class FinishedEpisode:
    """An episode that ended during a rollout."""

    game: int
    """Its game slot in the batch."""
    episode: int
    """Its number among that slot's episodes (0, 1, ...), as in :attr:`Rollout.episode`."""
    totals: np.ndarray
    """Each seat's penalty total."""
    decisions: int
    """Decisions the learner took in it (every seat's, in self-play)."""
    kind: str = "learner"
    """Who held the other seats: an opponent kind of the pool, or ``learner`` (self-play)."""
    learners: np.ndarray | None = None
    """``(players,)`` bool: the seats the learner held."""
    winners: np.ndarray | None = None
    """``(players,)`` bool: the seats on the lowest total (ties share the win)."""

    def learner_results(self) -> list[tuple[float, float]]:
        """``(win share, penalty total)`` of each seat the learner held."""
        share = 1.0 / max(int(self.winners.sum()), 1)
        return [
            (share if self.winners[s] else 0.0, float(self.totals[s]))
            for s in np.flatnonzero(self.learners).tolist()
        ]


@dataclass
class Rollout:
    """The decisions of one rollout that PPO trains on (the closed ones), one row each, in the
    order they were taken (carried-in decisions first)."""

    obs: np.ndarray
    """``(N, OBS_SIZE)`` float32: the acting seat's observation (and the prior's action, for a
    prior policy: ``(N, OBS_SIZE + 1)``)."""
    masks: np.ndarray
    """``(N, 3634)`` int8: its legal actions."""
    actions: np.ndarray
    """``(N,)`` int64: the action taken."""
    values: np.ndarray
    """``(N,)`` float32: the critic's value when it was taken."""
    log_probs: np.ndarray
    """``(N,)`` float32: the log-probability of the action under the acting policy."""
    rewards: np.ndarray
    """``(N,)`` float32: what the seat was paid until its next decision or the episode's end."""
    terminal: np.ndarray
    """``(N,)`` bool: the episode ended before the seat's next decision."""
    next_values: np.ndarray
    """``(N,)`` float32: value of the seat's next decision (0 when terminal)."""
    next_index: np.ndarray
    """``(N,)`` int64: row of the seat's next decision here, -1 when none (see :func:`gae`)."""
    advantages: np.ndarray
    """``(N,)`` float32: GAE advantages."""
    returns: np.ndarray
    """``(N,)`` float32: advantages + values (the critic's target)."""
    game: np.ndarray
    """``(N,)`` int64: the game slot."""
    seat: np.ndarray
    """``(N,)`` int64: the acting seat."""
    episode: np.ndarray
    """``(N,)`` int64: the episode number within its game slot."""
    episodes: list[FinishedEpisode] = field(default_factory=list)
    """Episodes that ended during the rollout."""
    collected: int = 0
    """Learner decisions taken during this rollout (engine steps x batch in self-play)."""
    carried: int = 0
    """Open decisions left for the next rollout."""
    dropped_reward: float = 0.0
    """Sum of |reward| paid to seats that had no decision in the episode yet (not credited)."""

    def __len__(self) -> int:
        return len(self.actions)


class SelfPlayCollector:
    """Collects rollouts of ``model``'s policy on ``games``: in every seat (self-play), or in the
    seats an :class:`odin_lab.training.pool.OpponentPool` gives it, the opponents playing the
    others.

    The collector owns the games and the open decisions carried between rollouts (see the module
    docstring); use one collector for the whole run. ``model``: a ``MaskablePPO`` whose
    observation space is ``Box(OBS_SIZE)`` and action space ``Discrete(3634)``. ``pool``:
    ``None`` for pure self-play; otherwise each episode of each game draws its opponent kind and
    learner seat from it, the opponents' decisions are taken by their agents in the same engine
    step and only the learner's decisions are collected.
    """

    def __init__(self, model: Any, games: BatchedGames, pool: OpponentPool | None = None):
        space = model.observation_space
        prior = getattr(model.policy, "prior", None)
        self._full = getattr(model.policy, "critic", "observation") == "full"
        width = OBS_SIZE + (prior is not None) + (HIDDEN_SIZE if self._full else 0)
        if getattr(space, "shape", None) != (width,) or model.action_space.n != NUM_ACTIONS:
            raise ValueError(
                f"the model must read ({width},) observations and score {NUM_ACTIONS} actions; "
                f"got {getattr(space, 'shape', None)} and {getattr(model.action_space, 'n', None)}"
            )
        if not games.auto_forced:
            raise ValueError("games must apply forced decisions (BatchedGames(auto_forced=True))")
        if pool is not None and pool.players != games.config.players:
            raise ValueError(
                f"the pool seats {pool.players} players, the games {games.config.players}"
            )
        self.model = model
        self.games = games
        self.pool = pool
        self.width = width
        # A prior policy reads its heuristic's choice beside the game observation.
        self._prior = None if prior is None else make_batch_agent(prior)
        batch, players = games.batch, games.config.players
        # Row of each (game, seat)'s open decision in the carried arrays, -1 when none.
        self._open = np.full((batch, players), -1, dtype=np.int64)
        self._carry: dict[str, np.ndarray] = {}
        self._episode = np.zeros(batch, dtype=np.int64)
        self._episode_decisions = np.zeros(batch, dtype=np.int64)
        # Per game: the episode's opponent kind and each seat's agent (None: the learner).
        self._kind = [LEARNER] * batch
        self._table = np.full((batch, players), None, dtype=object)
        self._learns = np.ones((batch, players), dtype=np.bool_)
        if pool is not None:
            for i in range(batch):
                self._draw(i)

    @property
    def batch(self) -> int:
        """Games played in lockstep (a rollout's size is a multiple of it)."""
        return self.games.batch

    def _draw(self, game: int) -> None:
        kind, table = self.pool.draw()
        self._kind[game] = kind
        self._table[game] = table
        self._learns[game] = [agent is None for agent in table]

    def _opponent_actions(self, rows: np.ndarray, seats: np.ndarray, out: np.ndarray) -> None:
        """Fill ``out[rows]`` with the actions of the opponents seated there, one call per agent."""
        games = self.games
        groups: dict[int, tuple[Any, list[int]]] = {}
        for row, agent in zip(rows.tolist(), self._table[rows, seats[rows]].tolist()):
            groups.setdefault(id(agent), (agent, []))[1].append(row)
        for agent, members in groups.values():
            picked = np.asarray(members)
            out[picked] = opponent_actions(agent, games.obs[picked], games.mask[picked])

    def collect(self, n_decisions: int) -> Rollout:
        """Play engine steps until the learner took at least ``n_decisions`` decisions (with
        pure self-play: ``n_decisions // B`` steps; ``n_decisions`` a positive multiple of the
        batch) and return the decisions closed by then, with advantages and returns."""
        games, batch = self.games, self.games.batch
        if (
            isinstance(n_decisions, bool)
            or not isinstance(n_decisions, (int, np.integer))
            or n_decisions < batch
            or n_decisions % batch
        ):
            raise ValueError(
                f"n_decisions must be a positive multiple of the batch ({batch}); got {n_decisions}"
            )
        carried = len(self._carry.get("actions", ()))
        size = carried + int(n_decisions) + batch
        store = {
            "obs": np.empty((size, self.width), dtype=np.float32),
            "masks": np.empty((size, NUM_ACTIONS), dtype=np.int8),
            "actions": np.empty(size, dtype=np.int64),
            "values": np.empty(size, dtype=np.float32),
            "log_probs": np.empty(size, dtype=np.float32),
            "rewards": np.zeros(size, dtype=np.float64),
            "game": np.empty(size, dtype=np.int64),
            "seat": np.empty(size, dtype=np.int64),
            "episode": np.empty(size, dtype=np.int64),
        }
        for name, values in self._carry.items():
            store[name][:carried] = values
        terminal = np.zeros(size, dtype=np.bool_)
        successor = np.full(size, -1, dtype=np.int64)
        open_rows = self._open
        finished: list[FinishedEpisode] = []
        dropped = 0.0
        slots = np.arange(batch)
        acts = np.empty(batch, dtype=np.int64)
        policy = self.model.policy
        policy.set_training_mode(False)
        filled = carried
        while filled - carried < n_decisions:
            seats = games.seat
            learns = self._learns[slots, seats]
            mine = slots[learns]
            if mine.size < batch:
                self._opponent_actions(slots[~learns], seats, acts)
            if mine.size:
                rows = filled + np.arange(mine.size)
                filled += mine.size
                mine_seats = seats[mine]
                previous = open_rows[mine, mine_seats]
                linked = previous >= 0
                successor[previous[linked]] = rows[linked]
                open_rows[mine, mine_seats] = rows
                obs, mask = games.obs[mine], games.mask[mine]
                if self._prior is not None:
                    chosen = prior_actions(self._prior, obs, mask)
                    obs = np.concatenate([obs, chosen[:, None].astype(np.float32)], axis=1)
                if self._full:
                    # The critic's input only: the actor's extractor drops these columns.
                    obs = np.concatenate([obs, hidden(games, mine)], axis=1)
                store["obs"][rows] = obs
                store["masks"][rows] = mask
                store["game"][rows] = mine
                store["seat"][rows] = mine_seats
                store["episode"][rows] = self._episode[mine]
                with th.no_grad():
                    actions, values, log_probs = policy.forward(
                        th.as_tensor(obs), action_masks=th.as_tensor(mask)
                    )
                acts[mine] = actions.numpy()
                store["actions"][rows] = acts[mine]
                store["values"][rows] = values.numpy().reshape(-1)
                store["log_probs"][rows] = log_probs.numpy().reshape(-1)
                self._episode_decisions[mine] += 1
            games.step(acts)
            paid = games.rewards
            owned = open_rows >= 0
            # Each (game, seat) has at most one open row, so the scatter-add has no repeats.
            store["rewards"][open_rows[owned]] += paid[owned]
            dropped += float(np.abs(paid[~owned & self._learns]).sum())
            if games.done.any():
                for i in np.flatnonzero(games.done).tolist():
                    ended = open_rows[i][open_rows[i] >= 0]
                    terminal[ended] = True
                    open_rows[i] = -1
                    finished.append(
                        FinishedEpisode(
                            i,
                            int(self._episode[i]),
                            games.final_totals[i].copy(),
                            int(self._episode_decisions[i]),
                            self._kind[i],
                            self._learns[i].copy(),
                            games.winners[i].copy(),
                        )
                    )
                    self._episode[i] += 1
                    self._episode_decisions[i] = 0
                    if self.pool is not None:
                        self._draw(i)
        store = {name: values[:filled] for name, values in store.items()}
        terminal, successor = terminal[:filled], successor[:filled]
        pending = open_rows[open_rows >= 0]
        keep = np.ones(filled, dtype=np.bool_)
        keep[pending] = False
        # Carry the open decisions to the front of the next rollout.
        self._carry = {name: values[pending].copy() for name, values in store.items()}
        moved = np.full(filled, -1, dtype=np.int64)
        moved[pending] = np.arange(len(pending))
        open_rows[open_rows >= 0] = moved[open_rows[open_rows >= 0]]
        return self._finish(store, terminal, successor, keep, finished, filled - carried, dropped)

    def _finish(
        self,
        store: dict[str, np.ndarray],
        terminal: np.ndarray,
        successor: np.ndarray,
        keep: np.ndarray,
        finished: list[FinishedEpisode],
        collected: int,
        dropped: float,
    ) -> Rollout:
        """Advantages over the kept rows; an open successor bootstraps and ends the chain."""
        values = store["values"]
        has_next = successor >= 0
        next_values = np.zeros(len(values), dtype=np.float32)
        next_values[has_next] = values[successor[has_next]]
        position = np.full(len(values), -1, dtype=np.int64)
        position[keep] = np.arange(int(keep.sum()))
        # -1 when terminal, and when the successor is open (position -1): the chain stops there.
        next_index = np.where(has_next, position[np.maximum(successor, 0)], -1)[keep]
        kept = {name: array[keep] for name, array in store.items()}
        kept["rewards"] = kept["rewards"].astype(np.float32)
        advantages, returns = gae(
            kept["rewards"],
            kept["values"],
            next_values[keep],
            terminal[keep],
            next_index,
            self.model.gamma,
            self.model.gae_lambda,
        )
        return Rollout(
            **kept,
            terminal=terminal[keep],
            next_values=next_values[keep],
            next_index=next_index,
            advantages=advantages,
            returns=returns,
            episodes=finished,
            collected=collected,
            carried=len(self._carry["actions"]),
            dropped_reward=dropped,
        )


__all__ = ["DEFAULT_BATCH", "FinishedEpisode", "Rollout", "SelfPlayCollector", "gae"]
