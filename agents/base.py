"""The one agent interface of the lab, and the uniform random agent.

An agent sees what a player at the table sees: the observation vector of
:mod:`odin_env.observation` (read through ``observation.views``) and the legal-action mask.
It never sees the game's hidden state. Every agent may also have ``reset(seat, seed=None)``,
called before each game with the seat it plays and a seed for its randomness.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

from odin_env.spec import NUM_GOAT_ACTIONS


@runtime_checkable
class Agent(Protocol):
    """Anything with a name that picks a legal action from an observation and a mask."""

    name: str

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...


def legal_actions(action_mask: np.ndarray) -> np.ndarray:
    """The indices of the legal actions, ascending."""
    # nonzero on a bool view is several times faster than on int8 for a 3,634-entry mask.
    return np.asarray(action_mask).view(np.bool_).nonzero()[0]


def legal_pairs(action_masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(rows, actions)`` of every legal entry of a batch of masks ``(n, actions)``, in
    ``np.nonzero``'s order (by row, then action)."""
    masks = np.asarray(action_masks)
    flat = masks.reshape(-1)
    # A 2-D nonzero is ~17x slower than a 1-D one on a batch of 3,634-entry masks (4.7 against
    # 0.27 ms for 512 rows): the row and action are recovered from the flat index instead.
    flat = flat.view(np.bool_) if flat.dtype.itemsize == 1 else flat != 0
    return np.divmod(np.flatnonzero(flat), masks.shape[-1])


def argmax_by_row(rows: np.ndarray, actions: np.ndarray, scores: np.ndarray) -> np.ndarray:
    """Each row's action of highest score (ties: the lowest action index), for pairs listed
    as :func:`legal_pairs` lists them (rows ascending from 0, each with at least one pair, and
    each row's actions ascending)."""
    starts = np.flatnonzero(np.r_[True, rows[1:] != rows[:-1]])
    best = np.maximum.reduceat(scores, starts)
    top = np.flatnonzero(scores == best[rows])
    first = top[np.r_[True, rows[top][1:] != rows[top][:-1]]]
    return actions[first].astype(np.int64)


def is_goat_game(action_mask: np.ndarray) -> bool:
    """Whether ``action_mask`` (one or a batch) is a Goat game's: 6,702 actions (RULES G5)."""
    return np.shape(action_mask)[-1] == NUM_GOAT_ACTIONS


def refuse_goat(action_mask: np.ndarray, who: str) -> None:
    """``ValueError`` (one line, naming the setting) when ``action_mask`` is a Goat game's
    (:func:`is_goat_game`), which ``who`` does not play yet: never a silent wrong game."""
    if is_goat_game(action_mask):
        raise ValueError(
            f"goat: {who} does not play the Goat yet (RULES G1-G5); play it with goat=False"
        )


class RandomAgent:
    """Uniform over the legal actions (of any game: with the Goat too)."""

    def __init__(self, seed: int | None = None):
        self.name = "random"
        self.rng = np.random.default_rng(seed)

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Reseed (``None``: keep the generator)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_actions(action_mask)
        if legal.size == 0:
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        return int(legal[self.rng.integers(legal.size)])


__all__ = ["Agent", "RandomAgent", "argmax_by_row", "legal_actions", "legal_pairs", "refuse_goat"]
