"""A slow, obviously-correct reading of RULES.md, written without looking at the engine's tables.

Everything here works on plain Python sets of ``(colour, value)`` pairs and card ids and reads
the rules literally: a combo is a non-empty set of cards sharing one colour or one value (R4);
its number is its values sorted high to low read as decimal digits (R5); B beats A when it has
the same size and a higher number or exactly one card more (R7). Legal actions are found by
enumerating every subset of the acting hand (at most 2**9 of them) and keeping those the rules
allow (R8-R10). The engine must agree with this module; it must never be used by the engine.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache
from itertools import combinations

NUM_COLOURS = 6
NUM_VALUES = 9
NUM_CARDS = NUM_COLOURS * NUM_VALUES


def card(colour: int, value: int) -> int:
    """R1: the id of the card ``(colour, value)``, value 1-9."""
    return colour * NUM_VALUES + (value - 1)


def colour_value(card_id: int) -> tuple[int, int]:
    """R1: the ``(colour, value)`` of a card id."""
    return card_id // NUM_VALUES, card_id % NUM_VALUES + 1


def is_combo(cards: frozenset[int] | set[int] | tuple[int, ...]) -> bool:
    """R4: one or more cards that all share one colour or all share one value."""
    pairs = [colour_value(c) for c in cards]
    if not pairs:
        return False
    return len({c for c, _ in pairs}) == 1 or len({v for _, v in pairs}) == 1


def number(cards: frozenset[int] | set[int] | tuple[int, ...]) -> int:
    """R5: the values sorted high to low, read as a decimal number."""
    digits = sorted((colour_value(c)[1] for c in cards), reverse=True)
    return int("".join(str(d) for d in digits))


@cache
def _number_of_set(cards: frozenset[int]) -> int:
    return number(cards)


def beats(new: frozenset[int], old: frozenset[int]) -> bool:
    """R7: same size and a strictly higher number, or exactly one card more."""
    if len(new) == len(old):
        return _number_of_set(new) > _number_of_set(old)
    return len(new) == len(old) + 1


def all_combos(colours: int = NUM_COLOURS) -> list[tuple[int, ...]]:
    """Every combo of the deck with ``colours`` colours, by brute force, in canonical order.

    Every same-colour set is a 9-bit pattern of values, every same-value set a pattern of colours;
    each candidate is re-checked with :func:`is_combo` and the duplicates (single cards, found
    both ways) fall out of the set. Canonical order (DESIGN.md): size, then number, then ids.
    """
    found: set[tuple[int, ...]] = set()
    for colour in range(colours):
        for pattern in range(1, 1 << NUM_VALUES):
            cards = tuple(card(colour, v + 1) for v in range(NUM_VALUES) if pattern >> v & 1)
            found.add(cards)
    for value in range(1, NUM_VALUES + 1):
        for pattern in range(1, 1 << colours):
            cards = tuple(card(c, value) for c in range(colours) if pattern >> c & 1)
            found.add(cards)
    assert all(is_combo(cards) for cards in found)
    return sorted(found, key=lambda cards: (len(cards), number(cards), cards))


ORACLE_COMBOS = all_combos()
ORACLE_INDEX = {frozenset(cards): i for i, cards in enumerate(ORACLE_COMBOS)}
PASS = len(ORACLE_COMBOS)
TAKE = PASS + 1


def subsets(hand: frozenset[int]):
    """Every non-empty subset of ``hand`` (a hand never holds more than 9 cards)."""
    cards = sorted(hand)
    for k in range(1, len(cards) + 1):
        for sub in combinations(cards, k):
            yield frozenset(sub)


@dataclass(frozen=True)
class Position:
    """The public table plus every hand, as plain sets; ``phase`` is lead, follow or take."""

    players: int
    hands: tuple[frozenset[int], ...]
    current: int
    phase: str
    table: frozenset[int] = frozenset()
    owner: int = -1
    take_from: frozenset[int] = frozenset()
    passes: int = 0
    discard: frozenset[int] = frozenset()


def legal_actions(pos: Position) -> set[int]:
    """R8-R10 read literally, over every subset of the acting hand."""
    hand = pos.hands[pos.current]
    if pos.phase == "lead":  # R8: one card, or the whole hand when it is one combo; no pass
        return {
            ORACLE_INDEX[s] for s in subsets(hand) if is_combo(s) and (len(s) == 1 or s == hand)
        }
    if pos.phase == "follow":  # R9: any combo in hand that beats the table, or pass
        plays = {ORACLE_INDEX[s] for s in subsets(hand) if is_combo(s) and beats(s, pos.table)}
        return plays | {PASS}
    if pos.phase == "take":  # R10: exactly one card of the beaten combo
        return {TAKE + c for c in pos.take_from}
    return set()


def step(pos: Position, action: int, *, legal=None, played=None, taken_card=None) -> Position | str:
    """The position after ``action`` within a hand, or ``"hand over"`` when a hand empties (R13).

    Written straight from R8-R11 so that the engine's transitions can be checked one by one.
    ``legal``, ``played`` (an action's cards) and ``taken_card`` (a take action's card) read
    the actions; by default, those of a game without the Goat (:mod:`oracle_goat` passes its
    own).
    """
    legal = legal or legal_actions
    assert action in legal(pos), (action, pos)
    n, seat = pos.players, pos.current
    nxt = (seat + 1) % n  # R16: clockwise is the next seat index
    if pos.phase == "take":
        taken = taken_card(action) if taken_card else action - TAKE
        hands = list(pos.hands)
        hands[seat] = hands[seat] | {taken}
        discard = pos.discard | (pos.take_from - {taken})
        return replace(
            pos,
            hands=tuple(hands),
            take_from=frozenset(),
            discard=discard,
            phase="follow",
            current=nxt,
        )
    if action == PASS:
        passes = pos.passes + 1
        if passes == n - 1:  # R11: every other player passed in a row
            return replace(
                pos,
                table=frozenset(),
                discard=pos.discard | pos.table,
                passes=0,
                phase="lead",
                current=pos.owner,
            )
        return replace(pos, passes=passes, current=nxt)
    played = played(action) if played else frozenset(ORACLE_COMBOS[action])
    hands = list(pos.hands)
    hands[seat] = hands[seat] - played
    if not hands[seat]:
        return "hand over"
    if pos.phase == "lead":
        return replace(
            pos,
            hands=tuple(hands),
            table=played,
            owner=seat,
            passes=0,
            phase="follow",
            current=nxt,
        )
    return replace(
        pos,
        hands=tuple(hands),
        table=played,
        owner=seat,
        passes=0,
        phase="take",
        take_from=pos.table,
    )


COLOUR_LETTERS = "RYGBPO"
"""Red, yellow, green, blue, purple, orange: colours 0-5 (R1)."""


def ids(text: str) -> list[int]:
    """Card ids from names such as ``"R8 B3"`` (colour letter, then value)."""
    return [card(COLOUR_LETTERS.index(name[0]), int(name[1:])) for name in text.split()]


def set_of(bits: int) -> frozenset[int]:
    """The card ids in a card-set int (bit 54 is the Goat's, in a Goat game: G1)."""
    return frozenset(c for c in range(NUM_CARDS + 1) if bits >> c & 1)


_PHASES = {0: "lead", 1: "follow", 2: "take", 3: "over"}


def position_of(game) -> Position:
    """Read an engine ``Game`` into an oracle :class:`Position` (public fields only)."""
    places = game.where()
    return Position(
        players=game.config.players,
        hands=tuple(set_of(h) for h in game.hands),
        current=game.current,
        phase=_PHASES[game.phase],
        table=set_of(places["table"]),
        owner=game.owner if game.owner is not None else -1,
        take_from=set_of(places["take"]),
        passes=game.passes,
        discard=set_of(places["discard"]),
    )
