"""The batched agent interface: one call picks an action for every game of a batch.

A batched agent sees, for each game, exactly what a single agent sees (:mod:`agents.base`): the
acting seat's observation row and its legal-action mask. It is fed by
:class:`odin_env.batched.BatchedGames`::

    engine = BatchedGames(config, batch=1024, seed=7)
    agent = BatchRandomAgent(seed=8)
    obs, mask, seat, rewards, done = engine.reset()
    for _ in range(steps):
        obs, mask, seat, rewards, done = engine.step(agent.act_batch(obs, mask))

``BatchRandomAgent`` is uniform over the legal actions; ``PerGameAgent`` lifts any single
:class:`agents.base.Agent` to the batched interface by asking it game by game (correct for every
agent, fast for none: native batched agents are the fast path). ``act_by_seat`` plays a table of
different agents, one per seat, asking each for the rows where its seat acts.
:func:`agents.registry.make_batch_agent` builds the batched form of a spec (``random``, the
heuristics of :mod:`agents.heuristics`, which are batched agents themselves, ``ppo``).

Keys: a batch's rows come from whichever games the caller batched together, so a stochastic
batched agent drawing from one generator gives a game different actions in a different batch.
An agent whose ``act_batch`` also takes ``keys`` (one ``uint64`` per row) draws each row's
randomness from its key alone (``keyed_uniforms``); a caller that keys each row by its game
and decision (``odin_lab.evaluation.tournament``) then gets the same games whatever the batch size.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from agents.base import Agent, is_goat_game, refuse_goat
from odin_env._pick_kernels import PICK_BLOCK, pick_uniform, pick_uniform_parallel
from odin_env.observation import GOAT_FIELD_SIZE, OBS_SIZE
from odin_env.seeding import keyed_uniforms
from odin_env.spec import NUM_ACTIONS, NUM_GOAT_ACTIONS


@runtime_checkable
class BatchAgent(Protocol):
    """Anything with a name that picks one legal action per row of a batch."""

    name: str

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """``obs`` float32 ``(B, OBS_SIZE)`` and ``mask`` int8 ``(B, 3634)`` -> int64 ``(B,)``."""
        ...


def check_batch(obs: np.ndarray, mask: np.ndarray, goat: bool = False) -> None:
    """``ValueError`` unless ``obs`` is ``(B, OBS_SIZE)`` and ``mask`` ``(B, 3634)``; with
    ``goat``, a Goat game's rows (``OBS_SIZE + 11`` and 6,702 entries) are accepted too, else
    refused in one line naming the setting."""
    if not goat:
        refuse_goat(mask, "the batched agents")
    goat_rows = goat and is_goat_game(mask)
    obs_size = OBS_SIZE + GOAT_FIELD_SIZE if goat_rows else OBS_SIZE
    actions = NUM_GOAT_ACTIONS if goat_rows else NUM_ACTIONS
    if obs.ndim != 2 or obs.shape[1] != obs_size:
        raise ValueError(f"obs must have shape (B, {obs_size}); got {obs.shape}")
    if mask.shape != (obs.shape[0], actions):
        raise ValueError(f"mask must have shape ({obs.shape[0]}, {actions}); got {mask.shape}")


class BatchRandomAgent:
    """Uniform over each row's legal actions; seeded by a numpy ``Generator``, or by the rows'
    ``keys`` when the caller gives them (see the module docstring).

    ``parallel``: share the rows among numba's threads (same actions either way).
    """

    def __init__(self, seed: int | None = None, parallel: bool = False):
        if not isinstance(parallel, (bool, np.bool_)):
            raise ValueError(f"parallel must be True or False; got {parallel!r}")
        self.name = "random"
        self.rng = np.random.default_rng(seed)
        self._pick = pick_uniform_parallel if parallel else pick_uniform
        self._out = np.zeros(0, dtype=np.int64)
        self._sums = np.zeros((0, NUM_ACTIONS // PICK_BLOCK + 1), dtype=np.int64)

    def reset(self, seat: int = 0, seed: int | None = None) -> None:
        """Reseed (``None``: keep the generator); ``seat`` is unused (one agent serves every
        row of a batch), taken for the one ``reset(seat, seed)`` signature of all agents."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act_batch(
        self, obs: np.ndarray, mask: np.ndarray, keys: np.ndarray | None = None
    ) -> np.ndarray:
        """One uniform legal action per row; ``ValueError`` if a row has no legal action.

        ``keys`` (``(B,)`` uint64): draw row ``i`` from ``keys[i]`` alone (``keyed_uniforms``)
        instead of the generator, which is then left untouched. The returned array is reused
        by the next call (copy it to keep it).
        """
        check_batch(obs, mask, goat=True)  # uniform over any game's legal actions
        batch = mask.shape[0]
        if keys is not None and np.shape(keys) != (batch,):
            raise ValueError(
                f"keys must hold one key per row, shape ({batch},); got {np.shape(keys)}"
            )
        uniforms = self.rng.random(batch) if keys is None else keyed_uniforms(keys)
        blocks = mask.shape[1] // PICK_BLOCK + 1  # the scratch the kernel writes, per row
        if self._out.shape[0] != batch or self._sums.shape[1] != blocks:
            self._out = np.zeros(batch, dtype=np.int64)
            self._sums = np.zeros((batch, blocks), dtype=np.int64)
        mask = np.ascontiguousarray(mask)
        if mask.dtype != np.int8:
            mask = mask.astype(np.int8)
        empty = self._pick(mask, uniforms, self._out, self._sums)
        if empty >= 0:
            raise ValueError(f"row {empty} of the mask has no legal action")
        return self._out


class PerGameAgent:
    """A single :class:`agents.base.Agent` asked once per row (the fallback for agents without
    a native batched form)."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self.name = agent.name

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The wrapped agent's action for each row, in row order: ``int64`` when every one is
        an integer, else as the agent gave them (never truncated: ``3.7`` is not 3; the caller
        that checks actions refuses them)."""
        check_batch(obs, mask, goat=True)  # the agent itself refuses a game it does not play
        chosen = [self.agent.act(obs[i], mask[i]) for i in range(obs.shape[0])]
        got = np.asarray(chosen) if chosen else np.zeros(0, dtype=np.int64)
        return got.astype(np.int64) if got.dtype.kind in "iu" else got


_TAKES_KEYS: dict[type, bool] = {}


def takes_keys(agent: BatchAgent) -> bool:
    """Whether ``agent.act_batch`` accepts ``keys`` (per-row random keys)."""
    kind = type(agent)
    if kind not in _TAKES_KEYS:
        _TAKES_KEYS[kind] = "keys" in inspect.signature(agent.act_batch).parameters
    return _TAKES_KEYS[kind]


def act_by_seat(
    agents: Sequence[BatchAgent],
    obs: np.ndarray,
    mask: np.ndarray,
    seat: np.ndarray,
    keys: np.ndarray | None = None,
) -> np.ndarray:
    """The actions of a table of batched agents, ``agents[s]`` playing seat ``s``: each agent
    is asked once, for the rows where its seat acts (``seat`` from ``BatchedGames``; any index
    into ``agents`` per row works, such as the agent each game seats there). ``keys``: one
    ``uint64`` per row, handed (their rows' part) to the agents that take keys."""
    check_batch(obs, mask, goat=True)  # each agent refuses a game it does not play
    if seat.shape != (obs.shape[0],) or (
        seat.size and not 0 <= seat.min() <= seat.max() < len(agents)
    ):
        raise ValueError(
            f"seat must hold one seat 0-{len(agents) - 1} per row (one agent per seat); got {seat}"
        )
    if keys is not None and np.shape(keys) != (obs.shape[0],):
        raise ValueError(f"keys must hold one key per row, shape ({obs.shape[0]},)")
    actions = np.zeros(obs.shape[0], dtype=np.int64)
    for s, agent in enumerate(agents):
        rows = np.flatnonzero(seat == s)
        if not rows.size:
            continue
        # One agent acting in every row is given the arrays themselves, not a copy.
        part = (obs, mask) if rows.size == obs.shape[0] else (obs[rows], mask[rows])
        if keys is not None and takes_keys(agent):
            actions[rows] = agent.act_batch(*part, keys=keys[rows])
        else:
            actions[rows] = agent.act_batch(*part)
    return actions


def as_batch_agent(agent: Agent | BatchAgent) -> BatchAgent:
    """``agent`` itself when it has ``act_batch``, else wrapped in :class:`PerGameAgent`."""
    if isinstance(agent, BatchAgent):
        return agent
    if isinstance(agent, Agent):
        return PerGameAgent(agent)
    raise ValueError(f"{agent!r} has neither act_batch(obs, mask) nor act(observation, mask)")


__all__ = [
    "BatchAgent", "BatchRandomAgent", "PerGameAgent", "act_by_seat", "as_batch_agent",
    "check_batch", "takes_keys",
]  # fmt: skip
