"""What a seat cannot see, read off the batched engine: for a training critic that reads the full
state (PerfectDou's "perfect-training, imperfect-execution"). No player may read it; the
environments never show it.

:func:`hidden` gives, for the seat to act in each of some games, the hands of the seats 1 to 5
places after it (zeros past the table's size), then the cards set aside this hand (in play, in no
hand, not on the table, not discarded): six 54-bit card sets in card-id order, as float32.
"""

from __future__ import annotations

import numpy as np

from odin_env.batched import BatchedGames
from odin_env.cards import NUM_CARDS, NUM_VALUES
from odin_env.observation import LAYOUT
from odin_env.rules import MAX_PLAYERS

HIDDEN_SIZE = MAX_PLAYERS * NUM_CARDS
"""Width of :func:`hidden`: five other seats' hands and the cards set aside."""


def hidden(games: BatchedGames, rows: np.ndarray) -> np.ndarray:
    """``(len(rows), HIDDEN_SIZE)`` float32: what the seat to act in each game of ``rows``
    cannot see (see the module docstring)."""
    rows = np.asarray(rows, dtype=np.int64)
    n, others = games.config.players, np.arange(1, MAX_PLAYERS)
    hands = games._hands  # the engine's own state: every seat's hand as a card-set int
    slots = (games.seat[rows][:, None] + others[None, :]) % n
    theirs = np.where(others[None, :] < n, hands[rows[:, None], slots], 0)
    shown = np.zeros(len(rows), dtype=np.int64)
    for plane in ("table", "discard"):
        bits = games.obs[rows][:, LAYOUT[plane][0]] > 0
        shown |= (bits.astype(np.int64) << np.arange(NUM_CARDS)).sum(1)
    deck = (1 << (games.config.colours * NUM_VALUES)) - 1  # the colours in play (R3)
    aside = deck & ~shown & ~np.bitwise_or.reduce(hands[rows, :n], axis=1)
    sets = np.concatenate([theirs, aside[:, None]], axis=1)
    bits = (sets[:, :, None] >> np.arange(NUM_CARDS)) & 1
    return bits.reshape(len(rows), HIDDEN_SIZE).astype(np.float32)


__all__ = ["HIDDEN_SIZE", "hidden"]
