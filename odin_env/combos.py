"""The 3,579 combos (RULES R4-R7) as import-time tables in one canonical order.

A combo is one or more cards sharing one colour or one value; its *number* is its values sorted
high to low read as a decimal (R5). Canonical order: by number of cards, then by number, then by
sorted card ids. In that order the combos that beat combo ``i`` (R7: same size and higher
number, or exactly one card more) are the contiguous index range ``BEAT_LO[i] .. BEAT_HI[i]-1``.

Tables (index = combo index = play action):
``COMBO_CARDS`` tuple of sorted card-id tuples; ``COMBO_BITS`` card-set ints;
``COMBO_SIZE``, ``COMBO_NUMBER``, ``BEAT_LO``, ``BEAT_HI`` int arrays; ``COMBO_MASKS`` a
``(3579, 54)`` uint8 table.

The 3,067 combos that hold the Goat (RULES G2; games with ``Config.goat``) are a second table in
the same canonical order, ``GOAT_COMBO_*``: the Goat alone, then the Goat with one or more cards
of one colour, which it joins as a 0 digit. They are not in the range order above: a Goat
combo's place among the others is its strength, ``(size, number)`` (:func:`strength`).
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import combinations

import numpy as np

from odin_env.cards import (
    GOAT,
    MAX_HAND,
    NUM_CARDS,
    NUM_COLOURS,
    NUM_VALUES,
    VALUE_BITS,
    cards_of,
)


def combo_number(cards: Iterable[int]) -> int:
    """R5: the values sorted high to low, read as a decimal number (G2: the Goat's is 0)."""
    number = 0
    for v in sorted((0 if c == GOAT else c % NUM_VALUES + 1 for c in cards), reverse=True):
        number = number * 10 + v
    return number


def _generate() -> list[tuple[int, ...]]:
    found = set()
    for colour in range(NUM_COLOURS):
        row = [colour * NUM_VALUES + v for v in range(NUM_VALUES)]
        for k in range(1, NUM_VALUES + 1):
            found.update(combinations(row, k))
    for value in range(NUM_VALUES):
        column = [c * NUM_VALUES + value for c in range(NUM_COLOURS)]
        for k in range(2, NUM_COLOURS + 1):
            found.update(combinations(column, k))
    return sorted(found, key=lambda cards: (len(cards), combo_number(cards), cards))


COMBO_CARDS: tuple[tuple[int, ...], ...] = tuple(_generate())
NUM_COMBOS = len(COMBO_CARDS)
COMBO_BITS: tuple[int, ...] = tuple(sum(1 << c for c in cards) for cards in COMBO_CARDS)
COMBO_SIZE = np.array([len(cards) for cards in COMBO_CARDS], dtype=np.int64)
COMBO_NUMBER = np.array([combo_number(cards) for cards in COMBO_CARDS], dtype=np.int64)
COMBO_MASKS = np.zeros((NUM_COMBOS, NUM_CARDS), dtype=np.uint8)
for _i, _cards in enumerate(COMBO_CARDS):
    COMBO_MASKS[_i, list(_cards)] = 1
COMBO_MASKS.flags.writeable = False

_INDEX_OF_BITS = {bits: i for i, bits in enumerate(COMBO_BITS)}


def _generate_goat() -> list[tuple[int, ...]]:
    """G2: the Goat alone, and the Goat with every non-empty set of one colour's cards."""
    found = [(GOAT,)]
    for colour in range(NUM_COLOURS):
        row = [colour * NUM_VALUES + v for v in range(NUM_VALUES)]
        for k in range(1, NUM_VALUES + 1):
            found += [(*cards, GOAT) for cards in combinations(row, k)]
    return sorted(found, key=lambda cards: (len(cards), combo_number(cards), cards))


GOAT_COMBO_CARDS: tuple[tuple[int, ...], ...] = tuple(_generate_goat())
NUM_GOAT_COMBOS = len(GOAT_COMBO_CARDS)
GOAT_COMBO_BITS: tuple[int, ...] = tuple(sum(1 << c for c in cards) for cards in GOAT_COMBO_CARDS)
GOAT_COMBO_SIZE = np.array([len(cards) for cards in GOAT_COMBO_CARDS], dtype=np.int64)
GOAT_COMBO_NUMBER = np.array([combo_number(c) for c in GOAT_COMBO_CARDS], dtype=np.int64)
_GOAT_INDEX_OF_BITS = {bits: i for i, bits in enumerate(GOAT_COMBO_BITS)}
SIZE_START = np.searchsorted(COMBO_SIZE, np.arange(MAX_HAND + 2))
"""``SIZE_START[s]``: the first index of a combo of ``s`` cards; ``SIZE_START[10]`` = 3,579."""
SINGLE: tuple[int, ...] = tuple(_INDEX_OF_BITS[1 << c] for c in range(NUM_CARDS))
"""``SINGLE[card]``: the combo index of that card played alone."""


def strength(size: int, number: int) -> int:
    """A combo's place in R7's order as one int: by size, then number (a Goat combo's number
    has up to 10 digits)."""
    return size * 10**11 + number


# R7 as index ranges: same size with a higher number starts at the first combo of that size whose
# number is higher; one card more ends where combos of size+1 end.
_key = strength(COMBO_SIZE, COMBO_NUMBER)
BEAT_LO = np.searchsorted(_key, _key, side="right").astype(np.int64)
BEAT_HI = SIZE_START[np.minimum(COMBO_SIZE + 2, MAX_HAND + 1)].astype(np.int64)
GOAT_BEAT_LO = np.searchsorted(_key, strength(GOAT_COMBO_SIZE, GOAT_COMBO_NUMBER), side="right")
"""``GOAT_BEAT_LO[g]``: the first index of the coloured combos that beat Goat combo ``g`` with
its size (those of one card more are all of size + 1)."""
del _key


def combo_index(cards: Iterable[int]) -> int:
    """The index of the combo made of exactly these card ids; ``ValueError`` if not a combo."""
    bits = 0
    for c in cards:
        bits |= 1 << int(c)
    return combo_index_of_bits(bits)


def combo_index_of_bits(bits: int) -> int:
    """The index of the combo whose card-set int is ``bits``; ``ValueError`` if not a combo."""
    try:
        return _INDEX_OF_BITS[bits]
    except KeyError:
        raise ValueError(
            f"cards {cards_of(bits)} are not a combo: a combo shares one colour or one value"
        ) from None


def goat_combo_index_of_bits(bits: int) -> int:
    """The index in ``GOAT_COMBO_*`` of the Goat combo whose card-set int is ``bits``;
    ``ValueError`` if it is not one (G2)."""
    try:
        return _GOAT_INDEX_OF_BITS[bits]
    except KeyError:
        raise ValueError(
            f"cards {cards_of(bits)} are not a combo: the Goat joins cards of one colour only"
        ) from None


def same_colour(bits: int) -> bool:
    """Whether every card of ``bits`` (coloured cards, at least one) has one colour."""
    return any(bits & ~(VALUE_BITS << (c * NUM_VALUES)) == 0 for c in range(NUM_COLOURS))


def is_combo(bits: int) -> bool:
    """Whether the cards of ``bits`` are one combo (R4; with the Goat, G2)."""
    return bits in _INDEX_OF_BITS or bits in _GOAT_INDEX_OF_BITS


def beats(new: int, old: int) -> bool:
    """R7: does combo index ``new`` beat combo index ``old``?"""
    return bool(BEAT_LO[old] <= new < BEAT_HI[old])


def _subset_tables() -> tuple[list, list]:
    """Per-colour and per-value tables of the combos inside a card pattern, split by size.

    ``BY_COLOUR[c][p][s]``: sorted combo indices of the ``s``-card subsets of the values in the
    9-bit pattern ``p`` of colour ``c``. ``BY_VALUE[v][q][s]``: the same for the colours in the
    6-bit pattern ``q`` of value ``v`` (sizes 2+ only: singles are counted by colour).
    """
    by_colour = []
    for colour in range(NUM_COLOURS):
        per_pattern = []
        for p in range(1 << NUM_VALUES):
            sizes: list[list[int]] = [[] for _ in range(MAX_HAND + 2)]
            row = [colour * NUM_VALUES + v for v in range(NUM_VALUES) if p >> v & 1]
            for k in range(1, len(row) + 1):
                for sub in combinations(row, k):
                    sizes[k].append(_INDEX_OF_BITS[sum(1 << c for c in sub)])
            per_pattern.append(tuple(tuple(sorted(s)) for s in sizes))
        by_colour.append(per_pattern)
    by_value = []
    for value in range(NUM_VALUES):
        per_pattern = []
        for q in range(1 << NUM_COLOURS):
            sizes = [[] for _ in range(MAX_HAND + 2)]
            column = [c * NUM_VALUES + value for c in range(NUM_COLOURS) if q >> c & 1]
            for k in range(2, len(column) + 1):
                for sub in combinations(column, k):
                    sizes[k].append(_INDEX_OF_BITS[sum(1 << c for c in sub)])
            per_pattern.append(tuple(tuple(sorted(s)) for s in sizes))
        by_value.append(per_pattern)
    return by_colour, by_value


BY_COLOUR, BY_VALUE = _subset_tables()

# SPREAD[p] moves bit v of a colour's 9-bit pattern to bit 6*v, so OR-ing
# SPREAD[p_c] << c over colours gives each value's 6-bit colour pattern at bits 6v..6v+5.
SPREAD = tuple(
    sum(1 << (NUM_COLOURS * v) for v in range(NUM_VALUES) if p >> v & 1)
    for p in range(1 << NUM_VALUES)
)


def value_patterns(hand: int) -> int:
    """Transpose a card-set int: bits ``6v .. 6v+5`` hold the colours holding value ``v+1``."""
    t = 0
    for colour in range(NUM_COLOURS):
        p = hand >> (colour * NUM_VALUES) & VALUE_BITS
        if p:
            t |= SPREAD[p] << colour
    return t
