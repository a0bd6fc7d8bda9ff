"""The combo table (RULES R4-R7) against the brute-force generator of :mod:`oracle`."""

from __future__ import annotations

import numpy as np
import oracle
import pytest

from odin_env import combos


def test_r6_table_has_3579_combos_equal_to_brute_force_in_canonical_order() -> None:
    assert len(oracle.ORACLE_COMBOS) == 3579 == combos.NUM_COMBOS
    assert list(combos.COMBO_CARDS) == oracle.ORACLE_COMBOS


def test_r6_four_colours_give_2143_combos() -> None:
    four = oracle.all_combos(colours=4)
    assert len(four) == 2143 == 4 * 511 + 9 * 11
    in_table = [cards for cards in combos.COMBO_CARDS if max(cards) < 4 * 9]
    assert in_table == four


def test_r4_every_table_entry_is_a_combo_and_every_combo_is_in_the_table() -> None:
    assert all(oracle.is_combo(cards) for cards in combos.COMBO_CARDS)
    # Mixed sets (neither one colour nor one value) are never combos.
    for text in ("R8 B3", "R1 R2 B2", "Y9 G9 G8", "R1 Y2"):
        cards = oracle.ids(text)
        assert not oracle.is_combo(cards)
        assert not combos.is_combo(sum(1 << c for c in cards))
        with pytest.raises(ValueError, match="not a combo"):
            combos.combo_index(cards)


def test_r5_numbers_sizes_bits_and_masks_match_the_cards() -> None:
    for i, cards in enumerate(combos.COMBO_CARDS):
        assert combos.COMBO_NUMBER[i] == oracle.number(cards)
        assert combos.COMBO_SIZE[i] == len(cards)
        assert combos.COMBO_BITS[i] == sum(1 << c for c in cards)
        assert sorted(np.flatnonzero(combos.COMBO_MASKS[i]).tolist()) == list(cards)


@pytest.mark.parametrize(
    ("text", "expected"),
    [("R8 B8", 88), ("R8 R3", 83), ("G5 G2 G8", 852), ("R4 Y4 O4", 444), ("P1", 1)],
)
def test_r5_combo_number_examples(text: str, expected: int) -> None:
    cards = oracle.ids(text)
    assert combos.combo_number(cards) == expected
    assert combos.COMBO_NUMBER[combos.combo_index(cards)] == expected


def test_combo_index_round_trips_in_any_card_order() -> None:
    rng = np.random.default_rng(0)
    for i, cards in enumerate(combos.COMBO_CARDS):
        shuffled = rng.permutation(np.array(cards)).tolist()
        assert combos.combo_index(shuffled) == i
        assert combos.combo_index_of_bits(combos.COMBO_BITS[i]) == i
    assert tuple(combos.combo_index([c]) for c in range(54)) == combos.SINGLE


def test_r7_beat_ranges_equal_brute_force_beats() -> None:
    """The contiguous ``BEAT_LO .. BEAT_HI`` ranges hold exactly the combos that beat (R7)."""
    table = [frozenset(cards) for cards in combos.COMBO_CARDS]
    by_size: dict[int, list[int]] = {}
    for i, cards in enumerate(table):
        by_size.setdefault(len(cards), []).append(i)
    for old, old_cards in enumerate(table):
        # Only sizes s and s+1 can beat a combo of size s; every other size is checked not to.
        expected = [
            new
            for size in (len(old_cards), len(old_cards) + 1)
            for new in by_size.get(size, [])
            if oracle.beats(table[new], old_cards)
        ]
        got = list(range(combos.BEAT_LO[old], combos.BEAT_HI[old]))
        assert got == expected, combos.COMBO_CARDS[old]


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        ("B8 B3", "R8 R3", False),  # R7: an equal number of the same size does not beat
        ("B8 B4", "R8 R3", True),
        ("R1 Y1", "O9 P9", False),
        ("R1 R2 R3", "O9 P9", True),  # one card more beats whatever its number
        ("R1 R2 R3 R4", "O9 P9", False),  # two cards more never beats
        ("G9", "G8 G7", False),  # fewer cards never beats
        ("R2", "Y1", True),
        ("R1", "Y1", False),
    ],
)
def test_r7_beats_examples(new: str, old: str, expected: bool) -> None:
    new_i, old_i = combos.combo_index(oracle.ids(new)), combos.combo_index(oracle.ids(old))
    assert combos.beats(new_i, old_i) is expected
    assert oracle.beats(frozenset(oracle.ids(new)), frozenset(oracle.ids(old))) is expected
