"""The numba kernels of ``greedy`` and ``shaper`` (:mod:`agents.heuristics`), and the hand
reading they share with ``planner``'s kernel (:mod:`agents.batched_planner`).

A kernel is the one implementation of its heuristic: ``kernel(obs, mask, bits, number, out)``
writes the action of every row of a batch (``obs`` ``(B, observation size)``, ``mask``
``(B, actions)``) into ``out``, and a single decision is a batch of one row. ``bits`` and
``number`` are :data:`odin_env.spec.PLAY_BITS` and :data:`odin_env.spec.PLAY_NUMBER`: the
cards and the number of every play action, the Goat's included (RULES G5).

A row reads what :func:`agents.hand.see` reads: the ``hand``, ``table``, ``take``, ``discard``
and ``known`` planes (``> 0.5``) as 54-bit card sets, with bit 54 for the Goat where the row
has a ``goat`` field (a Goat game's observation) that puts it there; the ``phase`` one-hot; the
mask's non-zero entries. In a game without the Goat no card set ever holds bit 54, so every
Goat rule below is idle and the kernels choose exactly as before the Goat existed
(``tests/test_batched_shaper.py`` holds them to the Python oracle of ``tests/oracle_heuristics``
decision by decision).

The Goat in the shared measures:

- :func:`_cover` (the fewest combos a hand splits into): the Goat joins any group of one colour
  for free (a colour line, or a single card), else it is a combo of its own;
- :func:`_weight` (the penalty a hand costs if someone else goes out): the Goat counts 5 (G4);
- :func:`_joins` (how many combos a card makes with a hand): the Goat makes one with every
  subset of one colour, and a held Goat adds one to each of the card's colour subsets.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.batch import check_batch
from odin_env.cards import GOAT, GOAT_PENALTY, NUM_CARDS, NUM_COLOURS, NUM_VALUES, VALUE_BITS
from odin_env.observation import GOAT_FIELD, GOAT_PLACES, LAYOUT, OBS_SIZE
from odin_env.spec import GOAT_TAKE, LEAD, NUM_ACTIONS, PASS, PLAY_BITS, PLAY_NUMBER, TAKE

_BITS = np.array(PLAY_BITS, dtype=np.int64)
_NUMBER = np.array(PLAY_NUMBER, dtype=np.int64)
_HAND = LAYOUT["hand"][0].start
_TABLE = LAYOUT["table"][0].start
_PHASE = LAYOUT["phase"][0].start
_GOAT_AT = GOAT_FIELD.start
HAND, TABLE, TAKE_PLACE, DISCARD, KNOWN = (
    GOAT_PLACES.index(place) for place in ("hand", "table", "take", "discard", "known_0")
)
"""Entries of the ``goat`` field (``observation.GOAT_PLACES``): ``KNOWN + k`` is slot ``k``."""
GOAT_CARD = np.int64(1) << GOAT
"""The Goat's bit in a card-set int."""
_RED = np.int64(VALUE_BITS)
_BIG = 1 << 60


@njit(cache=True, inline="always")
def _popcount(x):
    count = 0
    while x:
        x &= x - 1
        count += 1
    return count


@njit(cache=True, inline="always")
def _weight(hand):
    """The penalty ``hand`` costs at the end of a hand: a point a card, the Goat 5 (G4)."""
    return _popcount(hand) + (GOAT_PENALTY - 1) * ((hand >> GOAT) & 1)


@njit(cache=True, inline="always")
def _card_value(card):
    """A card's number: 1-9, the Goat's 0 (G1)."""
    return 0 if card == GOAT else card % NUM_VALUES + 1


@njit(cache=True)
def _cover(hand):
    """``agents.hand.cover``: the fewest combos that partition ``hand``: try every set of
    colours to use whole, group the rest by value. The Goat joins any colour used whole, or a
    value group of one card, for free; a hand with neither needs one combo more for it."""
    goat = (hand >> GOAT) & 1
    used = 0  # the colours the hand holds, a bit each
    for c in range(NUM_COLOURS):
        if (hand >> (c * NUM_VALUES)) & VALUE_BITS:
            used |= 1 << c
    m = _popcount(used)
    if m == 0:
        return goat
    best = m  # every colour whole
    grouped = used
    while grouped:  # every non-empty set of colours grouped by value, the others whole
        once, twice = np.int64(0), np.int64(0)  # values held in one colour, in two or more
        for c in range(NUM_COLOURS):
            if (grouped >> c) & 1:
                pattern = (hand >> (c * NUM_VALUES)) & VALUE_BITS
                twice |= once & pattern
                once |= pattern
        total = m - _popcount(grouped) + _popcount(once)
        if goat and grouped == used and once & ~twice == 0:  # no whole colour, no single
            total += 1
        if total < best:
            best = total
        grouped = (grouped - 1) & used
    return best


@njit(cache=True, inline="always")
def _joins(hand, card):
    """``agents.hand.joins``: how many combos of ``hand`` plus ``card`` contain ``card`` (R4,
    G2)."""
    if card == GOAT:
        joins = 1
        for c in range(NUM_COLOURS):
            joins += (1 << _popcount(hand & (_RED << (c * NUM_VALUES)))) - 1
        return joins
    colour, value = card // NUM_VALUES, card % NUM_VALUES
    same_colour = _popcount(hand & (_RED << (colour * NUM_VALUES)))
    same_value = 0
    for k in range(NUM_COLOURS):
        same_value += (hand >> (k * NUM_VALUES + value)) & 1
    joins = (1 << same_colour) + (1 << same_value) - 1
    if (hand >> GOAT) & 1:
        joins += 1 << same_colour
    return joins


@njit(cache=True)
def _best_take(hand, takes):
    """``shaper``'s take: ``(cover, weight, card)`` of the card of ``takes`` whose hand has the
    fewest combos, then the least penalty (the Goat's 5), then the most joins, then the highest
    value; the first card id on a tie."""
    best_key = _BIG
    best_cover, best_weight, best_card = 0, 0, -1
    for card in range(NUM_CARDS + 1):
        if (takes >> card) & 1:
            new = hand | (np.int64(1) << card)
            cover, weight = _cover(new), _weight(new)
            # one number: joins < 2**12, value <= 9, weight < 2**6
            key = ((cover * 64 + weight) * 4096 - _joins(hand, card)) * 16 - _card_value(card)
            if key < best_key:
                best_key, best_cover, best_weight, best_card = key, cover, weight, card
    return best_cover, best_weight, best_card


@njit(cache=True, inline="always")
def _plane(obs, i, start, place):
    """The card set of a 54-entry plane of row ``i`` starting at ``start`` (``> 0.5``), with
    the Goat's bit where the row's ``goat`` field has it at ``place``."""
    bits = np.int64(0)
    for c in range(NUM_CARDS):
        if obs[i, start + c] > 0.5:
            bits |= np.int64(1) << c
    if obs.shape[1] > OBS_SIZE and obs[i, _GOAT_AT + place] > 0.5:
        bits |= GOAT_CARD
    return bits


@njit(cache=True, inline="always")
def _takes(mask, i):
    """The card set of row ``i``'s legal takes (bit 54: taking the Goat)."""
    takes = np.int64(0)
    for c in range(NUM_CARDS):
        if mask[i, TAKE + c]:
            takes |= np.int64(1) << c
    if mask.shape[1] > NUM_ACTIONS and mask[i, GOAT_TAKE]:
        takes |= GOAT_CARD
    return takes


@njit(cache=True, inline="always")
def take_action(card):
    """The action that takes ``card`` (G5: the Goat's is its own)."""
    return GOAT_TAKE if card == GOAT else TAKE + card


@njit(cache=True, inline="always")
def _play(mask, i, j):
    """The ``j``-th play action of row ``i``'s action space (the Goat's plays come after
    ``TAKE``'s block, G5), and whether it is legal."""
    a = j if j < PASS else j + (NUM_ACTIONS - PASS)
    return a, mask[i, a] != 0


@njit(cache=True, inline="always")
def _plays(mask):
    """How many play actions the rows of ``mask`` have (3,579; 6,646 in a Goat game)."""
    return PASS + max(0, mask.shape[1] - NUM_ACTIONS - 1)


@njit(cache=True)
def greedy_kernel(obs, mask, bits, number, out):
    """``greedy`` for each row: taking, the card of the most joins, then the highest value (the
    Goat last of all); else the whole hand when it is a legal play, else the play of the most
    cards with the lowest number (first in action order on a tie); pass with no legal play."""
    for i in range(obs.shape[0]):
        hand = _plane(obs, i, _HAND, HAND)
        takes = _takes(mask, i)
        if takes:
            best_key, best_card = -2, -1
            for card in range(NUM_CARDS + 1):
                if (takes >> card) & 1:
                    key = -1 if card == GOAT else _joins(hand, card) * 16 + _card_value(card)
                    if key > best_key:
                        best_key, best_card = key, card
            out[i] = take_action(best_card)
            continue
        choice, whole, best_size, best_number = PASS, -1, 0, 0
        for j in range(_plays(mask)):
            a, legal = _play(mask, i, j)
            if not legal:
                continue
            if bits[a] == hand:
                whole = a
            size = _popcount(bits[a])
            if size > best_size or (size == best_size and number[a] < best_number):
                choice, best_size, best_number = a, size, number[a]
        out[i] = whole if whole >= 0 else choice


@njit(cache=True)
def shaper_kernel(obs, mask, bits, number, out):
    """``shaper`` for each row: taking, :func:`_best_take`; no legal play: pass; the whole hand
    when it is a legal play; leading, the single card minimising ``(cover(hand - card),
    weight(hand - card), -number)``; following, the play minimising ``(cover after the best
    take, weight after it, number)``. Ties go to the first option in action order."""
    for i in range(obs.shape[0]):
        hand, table = _plane(obs, i, _HAND, HAND), _plane(obs, i, _TABLE, TABLE)
        takes = _takes(mask, i)
        if takes:
            out[i] = take_action(_best_take(hand, takes)[2])
            continue
        leading = obs[i, _PHASE + LEAD] > 0.5
        best_key = _BIG
        best_key2 = _BIG
        choice = PASS
        whole = -1
        for j in range(_plays(mask)):
            a, legal = _play(mask, i, j)
            if not legal:
                continue
            played = bits[a]
            if played == hand:
                whole = a
            left = hand & ~played
            if leading:
                key = (_cover(left) * 64 + _weight(left)) * 1_000_000 - number[a]
                key2 = 0
            else:
                cover, weight, _ = _best_take(left, table)
                key = cover * 100 + weight
                key2 = number[a]
            if key < best_key or (key == best_key and key2 < best_key2):
                best_key, best_key2, choice = key, key2, a
        out[i] = whole if whole >= 0 else choice


class KernelAgent:
    """A deterministic heuristic whose one implementation is a numba ``kernel(obs, mask, bits,
    number, out)``: :meth:`act_batch` runs it on a batch, :meth:`act` on a batch of one row.
    It plays games with the Goat too; ``seed`` is accepted for the common signature."""

    name = "kernel"
    kernel = None

    def __init__(self, seed: int | None = None):
        self.seed = seed

    def reset(self, seat: int = 0, seed: int | None = None) -> None:
        """Nothing to reset: the heuristic keeps no state and draws nothing."""

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The heuristic's action for each row -> int64 ``(B,)`` (a fresh array)."""
        check_batch(obs, mask, goat=True)
        out = np.empty(obs.shape[0], dtype=np.int64)
        type(self).kernel(obs, mask, _BITS, _NUMBER, out)
        return out

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The heuristic's action for one observation and its legal mask."""
        obs = np.asarray(observation, dtype=np.float32)[None]
        mask = np.asarray(action_mask, dtype=np.int8)[None]
        return int(self.act_batch(obs, mask)[0])


__all__ = ["GOAT_CARD", "KernelAgent", "greedy_kernel", "shaper_kernel", "take_action"]
