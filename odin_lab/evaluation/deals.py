"""A tournament's games: the record of one (:class:`GameRecord`), the seeds of its deals and of
its agents, who sits where in each rotation, and what stops a tournament before its end
(:class:`TournamentInterrupted`: Ctrl-C; :class:`PlayerFailed`: an agent failed). The
tournament itself is :mod:`odin_lab.evaluation.tournament`, which re-exports these."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from odin_env.seeding import spawn_seed
from odin_lab.evaluation.failures import AgentFailed


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
    "PlayerFailed",
    "TournamentInterrupted",
    "agent_seed",
    "deal_seed",
    "rotation_order",
]
