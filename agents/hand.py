"""Hand reading for the heuristic agents: what one seat sees, and how a hand splits into combos.

Everything here works from the observation (read through :func:`odin_env.observation.views`)
and the :mod:`odin_env.combos` tables; nothing touches a :class:`odin_env.rules.Game`.

The central measure is :func:`cover`, the fewest combos a hand splits into. A combo is a set of
cards on one colour line or one value line (RULES R4), and every subset of a line is a combo, so
the fewest combos that partition a hand equals the fewest lines that cover it: a minimum vertex
cover of the bipartite graph colours x values whose edges are the cards. We find it by trying
every set of colours to use whole; the remaining cards are then grouped by value.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from odin_env.cards import GOAT, GOAT_BIT, NUM_CARDS, NUM_COLOURS, NUM_VALUES, VALUE_BITS
from odin_env.combos import is_combo
from odin_env.observation import card_sets, hand_sizes, players_of, views
from odin_env.spec import GOAT_PLAY, GOAT_TAKE, NUM_ACTIONS, PASS, TAKE

COLOUR_LINE = tuple(VALUE_BITS << (c // NUM_VALUES * NUM_VALUES) for c in range(NUM_CARDS))
"""``COLOUR_LINE[card]``: the card-set int of every card of that card's colour."""
VALUE_LINE = tuple(
    sum(1 << (k * NUM_VALUES + c % NUM_VALUES) for k in range(NUM_COLOURS))
    for c in range(NUM_CARDS)
)
"""``VALUE_LINE[card]``: the card-set int of every card of that card's value."""
VALUE_OF = tuple(c % NUM_VALUES + 1 for c in range(NUM_CARDS))
_POP9 = tuple(bin(p).count("1") for p in range(1 << NUM_VALUES))


@lru_cache(maxsize=1 << 18)
def cover(hand: int) -> int:
    """The fewest combos the card set ``hand`` splits into (0 for an empty hand)."""
    patterns = [p for c in range(NUM_COLOURS) if (p := hand >> (c * NUM_VALUES) & VALUE_BITS)]
    # values_left[s]: the values still to cover when the colours in subset s are used whole.
    # Built incrementally over subsets of the colours *not* used whole.
    m = len(patterns)
    full = (1 << m) - 1
    ors = [0] * (1 << m)
    best = m
    for kept in range(1, 1 << m):
        low = kept & -kept
        ors[kept] = ors[kept ^ low] | patterns[low.bit_length() - 1]
    for kept in range(1 << m):
        used = (full ^ kept).bit_count()
        total = used + _POP9[ors[kept]]
        if total < best:
            best = total
    return best


@lru_cache(maxsize=1 << 16)
def partition(hand: int) -> tuple[int, ...]:
    """A split of ``hand`` into :func:`cover` many combos (card-set ints), largest first.

    Among the smallest splits it prefers the one whose largest combo is biggest, so the
    planner's finishing combo is as strong as the hand allows."""
    colours = [c for c in range(NUM_COLOURS) if hand >> (c * NUM_VALUES) & VALUE_BITS]
    target = cover(hand)
    best: tuple[int, ...] | None = None
    for used in range(1 << len(colours)):
        groups = []
        rest = hand
        for i, c in enumerate(colours):
            if used >> i & 1:
                line = VALUE_BITS << (c * NUM_VALUES)
                groups.append(hand & line)
                rest &= ~line
        if len(groups) > target:
            continue
        for v in range(NUM_VALUES):
            group = rest & VALUE_LINE[v]
            if group:
                groups.append(group)
        if len(groups) != target:
            continue
        groups.sort(key=lambda g: (-g.bit_count(), -_top_value(g)))
        key = tuple(g.bit_count() for g in groups)
        if best is None or key > tuple(g.bit_count() for g in best):
            best = tuple(groups)
    return best if best is not None else ()


def _top_value(bits: int) -> int:
    top = 0
    while bits:
        low = bits & -bits
        top = max(top, VALUE_OF[low.bit_length() - 1])
        bits ^= low
    return top


def joins(hand: int, card: int) -> int:
    """How many combos of ``hand`` plus ``card`` contain ``card`` (R4): its colour subsets plus
    its value subsets of two or more cards."""
    same_colour = (hand & COLOUR_LINE[card]).bit_count()
    same_value = (hand & VALUE_LINE[card]).bit_count()
    return (1 << same_colour) + (1 << same_value) - 1


@dataclass
class Seen:
    """What the acting seat sees, decoded from one observation (slots are seat-relative)."""

    hand: int
    """The acting seat's cards."""
    table: int
    """The combo to beat (0 when leading); while taking, the combo just played."""
    take: int
    """While taking: the beaten combo's cards."""
    discard: int
    known: list[int]
    """``known[k]``: cards slot ``k`` is publicly known to hold (slot 0 is the observer)."""
    sizes: list[int]
    """Cards in hand per slot."""
    penalties: list[float]
    """Penalty totals per slot, as a fraction of the threshold."""
    owner: int
    """Slot that played the combo on the table; -1 when none."""
    phase: int
    players: int
    plays: np.ndarray
    """Legal play actions (combo indices; with the Goat, its plays too), ascending."""
    takes: list[int]
    """Cards that may be taken (the Goat as its id, 54)."""
    can_pass: bool
    goat: bool = False
    """A game with the Goat (RULES G1-G5): the card sets hold its bit 54 where it is seen."""

    @property
    def unseen(self) -> int:
        """Cards the observer cannot place: in opponents' hands (unknown part) or set aside."""
        placed = self.hand | self.table | self.take | self.discard
        for k in self.known[1:]:
            placed |= k
        return ~placed & ((1 << NUM_CARDS) - 1 | (GOAT_BIT if self.goat else 0))


def see(observation: np.ndarray, action_mask: np.ndarray) -> Seen:
    """Decode the observation and legal mask into a :class:`Seen` (a Goat game's too: its
    ``goat`` field puts the Goat's bit in the card sets where the seat sees it)."""
    v = views(observation)
    legal = np.asarray(action_mask).view(np.bool_).nonzero()[0]
    plays = legal[(legal < PASS) | ((legal >= GOAT_PLAY) & (legal < GOAT_TAKE))]
    takes = [int(a) - TAKE for a in legal[(legal >= TAKE) & (legal < NUM_ACTIONS)]]
    if legal.size and legal[-1] == GOAT_TAKE:
        takes.append(GOAT)
    players = players_of(v)
    owner_row = v["table_owner"]
    owner = int(np.argmax(owner_row)) if owner_row.any() else -1
    sizes = hand_sizes(v)[:players].tolist()
    sets = card_sets(observation)
    goat = "goat" in v
    if goat:  # hand, table, take, discard, then each slot's known cards (GOAT_PLACES)
        for place in np.flatnonzero(v["goat"][: len(sets)] > 0.5):
            sets[place] |= GOAT_BIT
    hand, table, take, discard, *known = sets
    return Seen(
        hand=hand,
        table=table,
        take=take,
        discard=discard,
        known=known[:players],
        sizes=sizes,
        penalties=v["penalty"][:players].tolist(),
        owner=owner,
        phase=int(np.argmax(v["phase"])),
        players=players,
        plays=plays,
        takes=takes,
        can_pass=bool(action_mask[PASS]),
        goat=goat,
    )


__all__ = [
    "COLOUR_LINE",
    "VALUE_LINE",
    "Seen",
    "cover",
    "is_combo",
    "joins",
    "partition",
    "see",
]
