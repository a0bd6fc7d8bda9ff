"""Cards, card sets and decks (RULES R1-R3).

A card is ``(colour, value)`` with colour 0-5 and value 1-9; its id is
``colour * 9 + value - 1``. The engine keeps card sets as 54-bit Python ints (bit ``id`` set when
the card is in the set) because set algebra on ints is the cheapest thing Python does; the public
form of a card set is a ``(6, 9)`` 0/1 mask indexed ``[colour, value - 1]``.

The Grumpy Goat (games with ``Config.goat``; RULES G1) is one more card, of no colour and the
number 0: id :data:`GOAT` (54), bit 54 of a card-set int, named ``Goat``. The ``(6, 9)`` masks
hold the coloured cards only; where the Goat is, is said apart.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

NUM_COLOURS = 6
NUM_VALUES = 9
NUM_CARDS = NUM_COLOURS * NUM_VALUES
MAX_HAND = 9
COLOUR_NAMES = ("red", "yellow", "green", "blue", "purple", "orange")
COLOUR_LETTERS = "RYGBPO"
VALUE_BITS = (1 << NUM_VALUES) - 1
"""The 9 bits of one colour in a card-set int."""
GOAT = NUM_CARDS
"""The Grumpy Goat's card id (G1): after the 54 coloured cards."""
GOAT_BIT = 1 << GOAT
"""The Goat's bit in a card-set int."""
GOAT_NAME = "Goat"
"""The Goat's name in card lists (``R3 Goat B3``); :func:`parse_card` takes it in any case."""
GOAT_PENALTY = 5
"""What the Goat costs when it is left in a hand at the hand's end (G4), instead of 1."""


def card_id(colour: int, value: int) -> int:
    """The id of the card of ``colour`` (0-5) and ``value`` (1-9)."""
    if not (0 <= colour < NUM_COLOURS and 1 <= value <= NUM_VALUES):
        raise ValueError(f"no card ({colour}, {value}): colour must be 0-5 and value 1-9")
    return colour * NUM_VALUES + value - 1


def colour_of(card: int) -> int:
    return card // NUM_VALUES


def value_of(card: int) -> int:
    return card % NUM_VALUES + 1


def card_name(card: int) -> str:
    """Short name: colour letter then value, e.g. ``R8``; the Goat is ``Goat``."""
    if card == GOAT:
        return GOAT_NAME
    return f"{COLOUR_LETTERS[colour_of(card)]}{value_of(card)}"


def parse_card(name: str) -> int:
    """Inverse of :func:`card_name` (``"R8"`` -> red 8, ``"goat"`` -> :data:`GOAT`)."""
    if name.lower() == GOAT_NAME.lower():
        return GOAT
    letter, value = name[:1].upper(), name[1:]
    if letter not in COLOUR_LETTERS or not value.isdigit():
        raise ValueError(f"bad card name {name!r}: expected a letter of {COLOUR_LETTERS} and 1-9")
    return card_id(COLOUR_LETTERS.index(letter), int(value))


def bits_of(cards: Iterable[int]) -> int:
    """The card-set int of some card ids."""
    bits = 0
    for c in cards:
        bits |= 1 << c
    return bits


def cards_of(bits: int) -> list[int]:
    """The card ids in a card-set int, ascending."""
    out = []
    while bits:
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def mask_of(bits: int) -> np.ndarray:
    """The ``(6, 9)`` uint8 mask of a card-set int's coloured cards (not the Goat)."""
    raw = np.frombuffer(bits.to_bytes(8, "little"), dtype=np.uint8)
    return np.unpackbits(raw, bitorder="little")[:NUM_CARDS].reshape(NUM_COLOURS, NUM_VALUES)


def bits_of_mask(mask: np.ndarray) -> int:
    """The card-set int of a ``(6, 9)`` (or flat 54) 0/1 mask."""
    flat = np.asarray(mask).reshape(-1)
    if flat.size != NUM_CARDS:
        raise ValueError(f"a card mask has {NUM_CARDS} entries (6x9), got {flat.size}")
    packed = np.packbits(flat.astype(bool), bitorder="little")
    return int.from_bytes(packed.tobytes(), "little")


def deck_bits(colours: int, goat: bool = False) -> int:
    """The card-set int of the deck with colours ``0 .. colours-1`` in play (RULES R3), and the
    Goat with ``goat`` (G1)."""
    return (1 << (colours * NUM_VALUES)) - 1 | (GOAT_BIT if goat else 0)


def names(bits: int) -> str:
    """Readable card list, e.g. ``"R3 R8 B3"``."""
    return " ".join(card_name(c) for c in cards_of(bits)) or "-"
