"""Who holds the other seats of a training game: opponents drawn per episode from a pool.

:class:`OpponentPool` serves both ways of collecting experience with the same kinds and the same
draw (:meth:`OpponentPool.draw_kind`):

- per episode, one kind from the pool: an agent spec of :func:`agents.make` (it plays every
  other seat), ``self`` (frozen snapshots of the learner, one drawn per opponent seat; while none
  exists the pool's other kinds stand in, or ``random`` when it has none) or ``learner`` (the
  learner holds every seat of that game: shared-parameter self-play on the batched engine);
- as the :class:`odin_env.single_agent.OpponentDraw` of a ``SingleAgentEnv`` (``pool(rng,
  seat)``, single agents), or through :meth:`OpponentPool.draw` for the batched collector
  (batched forms where they exist, the learner's seat drawn here).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from agents.batch import BatchAgent, as_batch_agent
from agents.registry import MODEL_KINDS, check_spec, has_batch_form, make, make_batch_agent

SELF = "self"
"""The kind of the learner's frozen snapshots."""
LEARNER = "learner"
"""The kind in which the learner holds every seat (batched engine only)."""
KINDS_HELP = "agent specs, 'self' (snapshots of the learner) or 'learner' (every seat)"


def check_kinds(kinds: Sequence[str]) -> list[str]:
    """The pool's kinds as a list; ``ValueError`` naming a bad one."""
    if isinstance(kinds, str):
        kinds = [kinds]
    kinds = [str(kind) for kind in kinds]
    if not kinds:
        raise ValueError(f"opponents must name at least one kind: {KINDS_HELP}")
    for kind in kinds:
        if kind not in (SELF, LEARNER):
            check_spec(kind)
            name, _, path = kind.partition(":")
            if name in MODEL_KINDS and path and not Path(path).is_file():
                # before the run's folder is made: a missing file is bad input, not a crash
                raise ValueError(f"opponents: no model file at {path} (agent {kind!r})")
    return kinds


class OpponentPool:
    """The opponent kinds of a run and their draws (see the module docstring).

    ``seat``: the learner's fixed seat, or ``None`` to draw it per episode (batched draws; a
    ``SingleAgentEnv`` draws its own). ``seed`` seeds the batched draws, the agents and the
    snapshots' sampling, so a seeded run is reproducible. ``batched``: build batched forms."""

    def __init__(
        self,
        kinds: Sequence[str],
        players: int,
        seat: int | None = None,
        seed: int | None = None,
        batched: bool = True,
    ):
        self.kinds = check_kinds(kinds)
        if seat is not None and not 0 <= seat < players:
            raise ValueError(
                f"seat must be None (drawn per episode) or 0-{players - 1}; got {seat}"
            )
        self.players, self.seat, self.batched = players, seat, batched
        self.rng = np.random.default_rng(seed)
        self.snapshots: list[Any] = []
        self._agents: dict[tuple[str, int], Any] = {}

    def set_snapshots(self, snapshots: Sequence[Any]) -> None:
        """Replace the ``self`` snapshots; each gets a sampling generator drawn from the pool's
        own, so seeded runs stay reproducible."""
        self.snapshots = list(snapshots)
        for snapshot in self.snapshots:
            snapshot.reset(0, int(self.rng.integers(2**63)))

    def draw_kind(self, rng: np.random.Generator) -> str:
        """One episode's kind (``self`` only once a snapshot exists)."""
        kinds = self.kinds
        if SELF in kinds and not self.snapshots:
            kinds = [kind for kind in kinds if kind != SELF] or ["random"]
        return kinds[int(rng.integers(len(kinds)))]

    def _agent(self, kind: str, seat: int) -> Any:
        """The agent of ``kind`` in ``seat``: one per seat for single agents (they may keep
        per-game state), one for all seats in batched form (it keeps none)."""
        key = (kind, 0 if self.batched else seat)
        if key not in self._agents:
            seed = int(self.rng.integers(2**63))
            if not self.batched:
                self._agents[key] = make(kind, seed)
            elif has_batch_form(kind):
                self._agents[key] = make_batch_agent(kind, seed)
            else:
                self._agents[key] = as_batch_agent(make(kind, seed))
        return self._agents[key]

    def table(self, kind: str, seat: int, rng: np.random.Generator) -> list[Any]:
        """Each seat's agent for an episode of ``kind`` (``None`` at the learner's seats)."""
        if kind == LEARNER:
            return [None] * self.players
        table: list[Any] = []
        for s in range(self.players):
            if s == seat:
                table.append(None)
            elif kind == SELF:
                table.append(self.snapshots[int(rng.integers(len(self.snapshots)))])
            else:
                table.append(self._agent(kind, s))
        return table

    def __call__(self, rng: np.random.Generator, seat: int) -> tuple[str, list[Any]]:
        """The :class:`odin_env.single_agent.OpponentDraw` of a ``SingleAgentEnv``."""
        kind = self.draw_kind(rng)
        return kind, self.table(kind, seat, rng)

    def draw(self) -> tuple[str, list[BatchAgent | None]]:
        """One batched episode's kind and each seat's agent, from the pool's own generator."""
        kind = self.draw_kind(self.rng)
        seat = int(self.rng.integers(self.players)) if self.seat is None else self.seat
        return kind, self.table(kind, seat, self.rng)


__all__ = ["KINDS_HELP", "LEARNER", "OpponentPool", "SELF", "check_kinds"]
