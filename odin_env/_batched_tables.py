"""The lookup tables of the batched engine's kernels (:mod:`odin_env._batched_kernels`); private.

:func:`tables` builds them once, in the order of ``_batched_kernels.TABLES``. Every per-action
table has an entry for each of a Goat game's 6,702 actions (RULES G5: the Goat's plays come
after the takes), so one set of tables serves games with and without the Goat.
"""

from __future__ import annotations

import numpy as np

from odin_env.cards import GOAT_BIT, MAX_HAND, NUM_COLOURS, NUM_VALUES
from odin_env.combos import (
    BEAT_LO,
    BY_COLOUR,
    BY_VALUE,
    COMBO_BITS,
    GOAT_BEAT_LO,
    SPREAD,
    combo_index_of_bits,
    goat_combo_index_of_bits,
)
from odin_env.spec import GOAT_PLAY, NUM_COMBOS, PASS, PLAY_BITS, PLAY_NUMBER, PLAY_SIZE, TAKE


def _subset_table(per_group: list, patterns: int) -> tuple[np.ndarray, np.ndarray]:
    """Flatten ``combos.BY_COLOUR`` or ``BY_VALUE`` into a start table and one index array:
    the combos of size ``s`` in pattern ``p`` of group ``g`` are
    ``idx[start[g, p, s] : start[g, p, s + 1]]``."""
    sizes = MAX_HAND + 2
    start = np.zeros((len(per_group), patterns, sizes + 1), dtype=np.int64)
    flat: list[int] = []
    for g, table in enumerate(per_group):
        for p in range(patterns):
            for s in range(sizes):
                start[g, p, s] = len(flat)
                flat.extend(table[p][s])
            start[g, p, sizes] = len(flat)
    return start, np.array(flat, dtype=np.int64)


def _with_the_goat(combo: int) -> int:
    """The play (action) of the Goat with the cards of one-colour ``combo`` (G2)."""
    return GOAT_PLAY + goat_combo_index_of_bits(COMBO_BITS[combo] | GOAT_BIT)


def _whole_hand_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Combo index of each one-colour pattern (``[colour, 9-bit values]``) and each one-value
    pattern (``[value, 6-bit colours]``), -1 for the empty pattern; and the play of the Goat
    with each one-colour pattern (the Goat alone for the empty one)."""
    by_colour = np.full((NUM_COLOURS, 1 << NUM_VALUES), -1, dtype=np.int64)
    goat = np.full((NUM_COLOURS, 1 << NUM_VALUES), GOAT_PLAY, dtype=np.int64)
    for c in range(NUM_COLOURS):
        for p in range(1, 1 << NUM_VALUES):
            by_colour[c, p] = combo_index_of_bits(p << (c * NUM_VALUES))
            goat[c, p] = _with_the_goat(int(by_colour[c, p]))
    by_value = np.full((NUM_VALUES, 1 << NUM_COLOURS), -1, dtype=np.int64)
    for v in range(NUM_VALUES):
        for q in range(1, 1 << NUM_COLOURS):
            bits = sum(1 << (c * NUM_VALUES + v) for c in range(NUM_COLOURS) if q >> c & 1)
            by_value[v, q] = combo_index_of_bits(bits)
    return by_colour, by_value, goat


def _build() -> tuple[np.ndarray, ...]:
    colour_start, colour_idx = _subset_table(BY_COLOUR, 1 << NUM_VALUES)
    value_start, value_idx = _subset_table(BY_VALUE, 1 << NUM_COLOURS)
    colour_index, value_index, goat_colour_index = _whole_hand_tables()
    # The Goat with every one-colour subset: the same start table as the colours' own, mapped.
    goat_idx = np.array([_with_the_goat(int(c)) for c in colour_idx], dtype=np.int64)
    # The kernels know PASS and TAKE as the number of combos and one more.
    assert PASS == NUM_COMBOS and TAKE == NUM_COMBOS + 1
    beat_lo = np.zeros(len(PLAY_BITS), dtype=np.int64)
    beat_lo[:NUM_COMBOS] = BEAT_LO
    beat_lo[GOAT_PLAY : GOAT_PLAY + len(GOAT_BEAT_LO)] = GOAT_BEAT_LO
    return (
        np.array(PLAY_BITS, dtype=np.int64),
        np.array(PLAY_SIZE, dtype=np.int64),
        beat_lo,
        colour_start,
        colour_idx,
        value_start,
        value_idx,
        colour_index,
        value_index,
        # byte -> its 8 bits as float32 0/1, seen as 4 uint64, to write 8 cards in 4 stores
        np.unpackbits(np.arange(256, dtype=np.uint8)[:, None], axis=1, bitorder="little")
        .astype(np.float32)
        .view(np.uint64),
        np.array(SPREAD, dtype=np.int64),
        np.array(PLAY_NUMBER, dtype=np.int64),
        goat_idx,
        goat_colour_index,
    )


_TABLES: tuple[np.ndarray, ...] | None = None


def tables() -> tuple[np.ndarray, ...]:
    """The kernels' tables (built on first use: importing the engine stays cheap)."""
    global _TABLES
    if _TABLES is None:
        _TABLES = _build()
    return _TABLES


__all__ = ["tables"]
