"""``shaper`` (:class:`agents.heuristics.Shaper`) for a whole batch at once, in a numba kernel.

Row for row it returns exactly the action ``Shaper().act`` returns for that row's observation
and mask (``tests/test_batched_shaper.py`` checks it decision by decision on the batched
engine): it is cheap enough to be the playout policy of a search (about a microsecond a row).
It reads what :func:`agents.hand.see` reads: the ``hand`` and ``table`` planes (``> 0.5``), the
``phase`` one-hot, and the mask's non-zero entries; every score is ``Shaper``'s:

- taking: the card minimising ``(cover(hand + card), -joins(hand, card), -value)``;
- no legal play: pass; the whole hand when it is a legal play;
- leading: the single card minimising ``(cover(hand - card), -number)``;
- following: the play minimising ``(cover after the best take, cards after it, number)``.

Ties go to the first option in ascending order, as ``min`` keeps it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.batch import check_batch
from odin_env.cards import NUM_CARDS, NUM_COLOURS, NUM_VALUES, VALUE_BITS
from odin_env.combos import COMBO_BITS, COMBO_NUMBER
from odin_env.observation import LAYOUT
from odin_env.rules import LEAD, PASS, TAKE

_BITS = np.array(COMBO_BITS, dtype=np.int64)
_NUMBER = COMBO_NUMBER.astype(np.int64)
_HAND = LAYOUT["hand"][0].start
_TABLE = LAYOUT["table"][0].start
_PHASE = LAYOUT["phase"][0].start
_BIG = 1 << 40


@njit(cache=True, inline="always")
def _popcount(x):
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


@njit(cache=True)
def _cover(hand):
    """``agents.hand.cover``: the fewest combos (lines of one colour or one value) that
    partition ``hand``: try every set of colours to use whole, group the rest by value."""
    patterns = np.zeros(NUM_COLOURS, dtype=np.int64)
    m = 0
    for c in range(NUM_COLOURS):
        p = (hand >> (c * NUM_VALUES)) & VALUE_BITS
        if p:
            patterns[m] = p
            m += 1
    ors = np.zeros(1 << NUM_COLOURS, dtype=np.int64)
    best = m
    for kept in range(1, 1 << m):
        low = kept & -kept
        bit = 0
        while (1 << bit) != low:
            bit += 1
        ors[kept] = ors[kept ^ low] | patterns[bit]
        total = (m - _popcount(kept)) + _popcount(ors[kept])
        if total < best:
            best = total
    return best


@njit(cache=True, inline="always")
def _joins(hand, card):
    colour, value = card // NUM_VALUES, card % NUM_VALUES
    same_colour = _popcount(hand & (VALUE_BITS << (colour * NUM_VALUES)))
    same_value = 0
    for k in range(NUM_COLOURS):
        same_value += (hand >> (k * NUM_VALUES + value)) & 1
    return (1 << same_colour) + (1 << same_value) - 1


@njit(cache=True)
def _best_take(hand, takes):
    """``Shaper.after_take``: ``(cover, card)`` of the best card of ``takes`` to add."""
    best_key = _BIG
    best_cover, best_card = 0, -1
    for card in range(NUM_CARDS):
        if (takes >> card) & 1:
            new = hand | (np.int64(1) << card)
            cover = _cover(new)
            # (cover, -joins, -value) as one number: joins <= 2**9 + 2**6, value <= 9
            key = (cover * 1024 - _joins(hand, card)) * 16 - (card % NUM_VALUES + 1)
            if key < best_key:
                best_key, best_cover, best_card = key, cover, card
    return best_cover, best_card


@njit(cache=True, inline="always")
def _plane(obs, i, start):
    """The card set of a 54-entry plane of row ``i`` starting at ``start`` (``> 0.5``)."""
    bits = np.int64(0)
    for c in range(NUM_CARDS):
        if obs[i, start + c] > 0.5:
            bits |= np.int64(1) << c
    return bits


@njit(cache=True, inline="always")
def _takes(mask, i):
    """The card set of row ``i``'s legal takes."""
    takes = np.int64(0)
    for c in range(NUM_CARDS):
        if mask[i, TAKE + c]:
            takes |= np.int64(1) << c
    return takes


@njit(cache=True)
def shaper_kernel(obs, mask, bits, number, out):
    """``Shaper().act`` for each row of ``obs`` ``(B, OBS_SIZE)`` and ``mask`` ``(B, 3634)``
    into ``out`` ``(B,)``."""
    for i in range(obs.shape[0]):
        hand, table = _plane(obs, i, _HAND), _plane(obs, i, _TABLE)
        takes = _takes(mask, i)
        if takes:
            out[i] = TAKE + _best_take(hand, takes)[1]
            continue
        leading = obs[i, _PHASE + LEAD] > 0.5
        best_key = _BIG
        best_key2 = _BIG
        choice = PASS
        whole = -1
        for a in range(PASS):
            if not mask[i, a]:
                continue
            played = bits[a]
            if played == hand:
                whole = a
            left = hand & ~played
            if leading:
                key = _cover(left) * 1_000_000 - number[a]
                key2 = 0
            else:
                cover, _ = _best_take(left, table)
                key = cover * 100 + _popcount(left) + 1
                key2 = number[a]
            if key < best_key or (key == best_key and key2 < best_key2):
                best_key, best_key2, choice = key, key2, a
        out[i] = whole if whole >= 0 else choice


class KernelAgent:
    """A deterministic heuristic whose batched form is one numba ``kernel(obs, mask, bits,
    number, out)``; ``seed`` is accepted for the common signature."""

    name = "kernel"
    kernel = None

    def __init__(self, seed: int | None = None):
        self.seed = seed

    def reset(self, seat: int = 0, seed: int | None = None) -> None:
        """Nothing to reset: the heuristic keeps no state and draws nothing."""

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The heuristic's action for each row -> int64 ``(B,)`` (a fresh array)."""
        check_batch(obs, mask)
        out = np.empty(obs.shape[0], dtype=np.int64)
        type(self).kernel(obs, mask, _BITS, _NUMBER, out)
        return out


class BatchShaperAgent(KernelAgent):
    """``shaper`` for a whole batch (:func:`shaper_kernel`)."""

    name = "shaper"
    kernel = shaper_kernel


__all__ = ["BatchShaperAgent", "KernelAgent", "shaper_kernel"]
