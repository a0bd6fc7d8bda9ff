"""The Grumpy Goat's rules (RULES G1-G5) read literally, beside :mod:`oracle` and as slow and
plain: card sets are Python sets, legal actions are found over every subset of the acting hand,
and the combo test is Board Game Arena's (``doCardsMakeSet``): the cards' colours, the Goat's
left out, are one, or their numbers, the Goat's 0 counted, are one. Written without the engine's
tables; the engine must agree with it and never use it.
"""

from __future__ import annotations

from itertools import combinations

import oracle
from oracle import NUM_COLOURS, NUM_VALUES, Position, card

GOAT = 54
"""G1: the Goat's id, after the 54 coloured cards."""
FIRST_GOAT_ACTION = 3634
"""G5: the Goat's plays follow the 3,634 actions of a game without it."""


def colour_number(card_id: int) -> tuple[int | None, int]:
    """G1: the Goat has no colour and the number 0."""
    return (None, 0) if card_id == GOAT else oracle.colour_value(card_id)


def is_combo(cards) -> bool:
    """G2: one colour (the Goat's left out) or one number (the Goat's 0 counted)."""
    pairs = [colour_number(c) for c in cards]
    colours = {c for c, _ in pairs if c is not None}
    numbers = {v for _, v in pairs}
    return bool(pairs) and (len(colours) == 1 or len(numbers) == 1)


def number(cards) -> int:
    """R5 with the Goat's 0 as a digit."""
    return int("".join(str(v) for v in sorted((colour_number(c)[1] for c in cards), reverse=True)))


def beats(new: frozenset[int], old: frozenset[int]) -> bool:
    """R7: the same size and a higher number, or exactly one card more."""
    if len(new) == len(old):
        return number(new) > number(old)
    return len(new) == len(old) + 1


def goat_combos() -> list[tuple[int, ...]]:
    """G2: every combo that holds the Goat, in canonical order (size, number, ids). A combo's
    coloured cards share a colour, or every card shares a number, which with the Goat's 0 is
    the Goat alone: so each candidate is a subset of one colour's cards plus the Goat, or of one
    value's cards plus the Goat, and :func:`is_combo` decides."""
    found: set[tuple[int, ...]] = set()
    for colour in range(NUM_COLOURS):
        row = [card(colour, v) for v in range(1, NUM_VALUES + 1)]
        for k in range(0, NUM_VALUES + 1):
            found.update((*sub, GOAT) for sub in combinations(row, k))
    for value in range(1, NUM_VALUES + 1):
        column = [card(c, value) for c in range(NUM_COLOURS)]
        for k in range(2, NUM_COLOURS + 1):
            found.update((*sub, GOAT) for sub in combinations(column, k))
    kept = [cards for cards in found if is_combo(cards)]
    return sorted(kept, key=lambda cards: (len(cards), number(cards), cards))


GOAT_COMBOS = goat_combos()
INDEX = {**oracle.ORACLE_INDEX}
INDEX.update({frozenset(c): FIRST_GOAT_ACTION + i for i, c in enumerate(GOAT_COMBOS)})
CARDS_OF = {i: frozenset(c) for c, i in INDEX.items()}
TAKE_GOAT = FIRST_GOAT_ACTION + len(GOAT_COMBOS)


def take_action(card_id: int) -> int:
    """G5: taking the Goat is the last action; another card is R10's ``TAKE + id``."""
    return TAKE_GOAT if card_id == GOAT else oracle.TAKE + card_id


def legal_actions(pos: Position) -> set[int]:
    """R8-R10 with G2's combos, over every subset of the acting hand."""
    hand = pos.hands[pos.current]
    subsets = [s for s in oracle.subsets(hand) if is_combo(s)]
    if pos.phase == "lead":
        return {INDEX[s] for s in subsets if len(s) == 1 or s == hand}
    if pos.phase == "follow":
        return {INDEX[s] for s in subsets if beats(s, pos.table)} | {oracle.PASS}
    if pos.phase == "take":
        return {take_action(c) for c in pos.take_from}
    return set()


def step(pos: Position, action: int) -> Position | str:
    """The position after ``action`` within a hand, or ``"hand over"``: :func:`oracle.step`
    (R8-R11) with the Goat's actions."""
    return oracle.step(
        pos,
        action,
        legal=legal_actions,
        played=CARDS_OF.__getitem__,
        taken_card=lambda a: GOAT if a == TAKE_GOAT else a - oracle.TAKE,
    )


def penalty(hand: frozenset[int]) -> int:
    """G4: a card left in a hand costs 1, the Goat 5."""
    return len(hand) + (4 if GOAT in hand else 0)


position_of = oracle.position_of
set_of = oracle.set_of
