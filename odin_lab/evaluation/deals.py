"""A tournament's games: the record of one (:class:`GameRecord`), the seeds of its deals and of
its agents, who sits where in each rotation, and what stops a tournament before its end
(:class:`TournamentInterrupted`: Ctrl-C; :class:`PlayerFailed`: an agent failed). The
tournament itself is :mod:`odin_lab.evaluation.tournament`, which re-exports these."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

from odin_env.rules import Config
from odin_env.seeding import spawn_seed
from odin_lab.evaluation.failures import DECISION_LIMIT_S, AgentFailed


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
    """Seats on the lowest total (several on a draw); empty only for an unfinished game (a play
    session that was interrupted, see :mod:`odin_lab.evaluation.records`)."""
    actions: tuple[int, ...] = ()
    """The action of every decision that was not forced, in play order (the forced ones are
    exactly those ``Game.play_forced`` applies): with ``seed`` they rebuild the whole game
    (:func:`odin_lab.evaluation.records.replay`). Empty in records written before version 2."""

    def to_dict(self) -> dict:
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_dict(cls, data: dict) -> GameRecord:
        """The record of :meth:`to_dict`'s output (lists back to tuples)."""
        return cls(
            deal=int(data["deal"]),
            rotation=int(data["rotation"]),
            seed=int(data["seed"]),
            agents=tuple(data["agents"]),
            first_leader=int(data["first_leader"]),
            hands=tuple(tuple(h) for h in data["hands"]),
            totals=tuple(data["totals"]),
            winners=tuple(data["winners"]),
            actions=tuple(data.get("actions", ())),
        )


@dataclass(frozen=True)
class Job:
    """One tournament's work, as its worker processes get it: the agents' specs (empty when
    the agents are objects of this process), the game, the seed, the rotations per deal, the
    engine's batch and the decision limit."""

    specs: tuple[str, ...]
    config: Config
    seed: int
    rotations: int
    batch: int = 0
    """Games played at once; 0 for the single engine."""
    limit: float = DECISION_LIMIT_S
    """The decision limit (seconds; 0: none), carried to the workers."""


def seat_name(job: Job, agents: Sequence, index: int) -> str:
    """What a failure calls agent ``index``: its spec, else its ``name``."""
    agent = agents[index]
    return job.specs[index] if job.specs else getattr(agent, "name", type(agent).__name__)


class TournamentInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`play_tournament`: ``records`` holds every game of the deals that
    finished, a prefix of the tournament in ``(deal, rotation)`` order (``deals_done`` deals)."""

    def __init__(self, records: list[GameRecord], deals_done: int):
        super().__init__(f"interrupted after {deals_done} deals")
        self.records, self.deals_done = records, deals_done


class PlayerFailed(TournamentInterrupted):
    """An agent failed (:class:`~odin_lab.evaluation.failures.AgentFailed`, in ``failure``):
    the deals finished before are kept as after Ctrl-C."""

    def __init__(self, records: list[GameRecord], deals_done: int, failure: AgentFailed):
        super().__init__(records, deals_done)
        self.failure = failure


def deal_seed(seed: int, deal: int) -> int:
    """The seed of deal ``deal`` of a tournament seeded ``seed`` (a 63-bit int)."""
    return spawn_seed(seed, deal)


def agent_seed(seed: int, deal: int, rotation: int, seat: int) -> int:
    """The seed an agent gets for one game (so stochastic agents replay identically)."""
    return spawn_seed(seed, deal, rotation, seat, 1)


def rotation_order(players: int, rotation: int) -> tuple[int, ...]:
    """Which agent sits in each seat in a rotation: seat ``s`` holds agent ``(s - r) % n``."""
    return tuple((s - rotation) % players for s in range(players))


__all__ = [
    "GameRecord",
    "Job",
    "PlayerFailed",
    "TournamentInterrupted",
    "agent_seed",
    "deal_seed",
    "rotation_order",
    "seat_name",
]
