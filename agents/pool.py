"""Who holds the seats of a batched training game: the learner, and opponents drawn per episode.

:class:`OpponentPool` is the batched engine's counterpart of the opponents of
:class:`odin_env.single_agent.SingleAgentEnv`, with the same kinds and the same draws: per episode
of each game, one kind from the pool and (unless fixed) the learner's seat.

- an agent spec of :func:`agents.base.make` plays every other seat, in its batched form when it
  has one (``random``, ``greedy``, ``ppo``, ``ppo:PATH``; the others are asked game by game);
- ``self``: frozen snapshots of the learner, one drawn per opponent seat (while none exists, the
  pool's other kinds stand in, or ``random`` when it has none);
- ``learner``: the learner holds every seat of that game (shared-parameter self-play).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from agents.batched import (
    BatchAgent,
    BatchRandomAgent,
    as_batch_agent,
    has_batch_form,
    make_batch_agent,
)
from odin_env.single_agent import SELF

LEARNER = "learner"


def opponent_agent(spec: str, seed: int | None = None) -> BatchAgent:
    """The batched form of ``spec`` when it has one, else the agent asked game by game."""
    from agents.base import make

    if has_batch_form(spec):
        return make_batch_agent(spec, seed)
    return as_batch_agent(make(spec, seed))


class OpponentPool:
    """The opponent kinds of a batched run and their draws (see the module docstring).

    ``seat``: the learner's fixed seat, or ``None`` to draw it per episode. ``seed`` seeds every
    draw and the stochastic opponents, so a seeded run is reproducible."""

    def __init__(
        self,
        kinds: Sequence[str],
        players: int,
        seat: int | None = None,
        seed: int | None = None,
    ):
        if isinstance(kinds, str):
            kinds = [kinds]
        if not kinds:
            raise ValueError("opponents must name at least one kind: an agent spec, self, learner")
        if seat is not None and not 0 <= seat < players:
            raise ValueError(
                f"seat must be None (drawn per episode) or 0-{players - 1}; got {seat}"
            )
        self.kinds = [str(kind) for kind in kinds]
        self.players = players
        self.seat = seat
        self.rng = np.random.default_rng(seed)
        self.agents: dict[str, BatchAgent] = {
            kind: opponent_agent(kind, int(self.rng.integers(2**63)))
            for kind in dict.fromkeys(self.kinds)
            if kind not in (SELF, LEARNER)
        }
        self.snapshots: list[Any] = []

    def set_snapshots(self, snapshots: Sequence[Any]) -> None:
        """Replace the ``self`` snapshots; each gets a sampling generator drawn from the pool's
        own, so seeded runs stay reproducible."""
        self.snapshots = list(snapshots)
        for snapshot in self.snapshots:
            snapshot.reset(0, int(self.rng.integers(2**63)))

    def draw(self) -> tuple[str, list[BatchAgent | None]]:
        """One episode's kind and the agent of each seat (``None`` for the learner's seats)."""
        kinds = self.kinds
        if SELF in kinds and not self.snapshots:
            kinds = [kind for kind in kinds if kind != SELF]
            if not kinds:
                kinds = ["random"]
                self.agents.setdefault("random", BatchRandomAgent(int(self.rng.integers(2**63))))
        kind = kinds[int(self.rng.integers(len(kinds)))]
        if kind == LEARNER:
            return kind, [None] * self.players
        seat = int(self.rng.integers(self.players)) if self.seat is None else self.seat
        table: list[BatchAgent | None] = []
        for s in range(self.players):
            if s == seat:
                table.append(None)
            elif kind == SELF:
                table.append(self.snapshots[int(self.rng.integers(len(self.snapshots)))])
            else:
                table.append(self.agents[kind])
        return kind, table


__all__ = ["LEARNER", "OpponentPool", "SELF", "opponent_agent"]
