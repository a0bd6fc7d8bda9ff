"""The numba kernel of ``planner`` (:class:`agents.heuristics.Planner`), its one
implementation: a batch at once, or one decision as a batch of one row, at a few microseconds
a row (fast enough to be the playout policy of a search and a cheap training opponent).

It reads a row as :mod:`agents.batched_shaper` does (the Goat included) and scores: the hand's
value (``2 * cover + cards``, the Goat weighing :data:`GOAT_KEPT` cards, or
:data:`GOAT_THREATENED` once an opponent is near out), the finishing combo (the largest of a
smallest split of the hand without the Goat), the threats of opponents down to one or two cards
and the exposure of each play to them. In a game without the Goat it chooses exactly as the
Python oracle in ``tests/oracle_heuristics.py``, in the same order of floating-point operations
(``tests/test_batched_shaper.py``).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.batched_shaper import (
    DISCARD,
    GOAT_CARD,
    HAND,
    KNOWN,
    TABLE,
    TAKE_PLACE,
    _card_value,
    _cover,
    _joins,
    _plane,
    _play,
    _plays,
    _popcount,
    _takes,
    take_action,
)
from odin_env.cards import GOAT, NUM_CARDS, NUM_COLOURS, NUM_VALUES, VALUE_BITS
from odin_env.observation import LAYOUT, OBS_SIZE
from odin_env.spec import LEAD, PASS

_HAND = LAYOUT["hand"][0].start
_TABLE = LAYOUT["table"][0].start
_TAKE = LAYOUT["take"][0].start
_DISCARD = LAYOUT["discard"][0].start
_KNOWN = LAYOUT["known"][0].start
_SIZES = LAYOUT["hand_size"][0].start
_OWNER = LAYOUT["table_owner"][0].start
_PHASE = LAYOUT["phase"][0].start
_PLAYERS = LAYOUT["players"][0].start
_ALL = (1 << NUM_CARDS) - 1
_VALUE_LINE = sum(1 << (c * NUM_VALUES) for c in range(NUM_COLOURS))
"""The cards of the lowest value in every colour (shifted by ``v``: value ``v``'s)."""
COVER_WEIGHT = 2.0
"""Cost of one more combo to play, in penalty points."""
FINISHER_COST = 1.0
"""Cost of playing part of the finishing combo without going out."""
THREAT_COST = 2.0
"""Cost of leaving a table that a near-out opponent can go out over."""
OUT = -1e9
"""Value of an empty hand: better than anything else."""
GOAT_KEPT = 1
"""What the Goat weighs in a hand's value while no opponent is near out: one card, for it
joins any colour's combo (measured: counted at its 5 points, the planner leads it alone at once
and wastes the lead)."""
GOAT_THREATENED = 5
"""What it weighs when an opponent may go out next (one or two cards left): its penalty (G4)."""
PAIR_CHANCE = 0.25
"""Chance that two unknown cards form a combo (8 of 53 share the colour, 5 the value)."""


@njit(cache=True, inline="always")
def _value(hand, goat):
    """How bad ``hand`` is to hold (lower is better): ``2 * cover + cards``, the Goat counting
    ``goat`` cards."""
    if hand == 0:
        return OUT
    return COVER_WEIGHT * _cover(hand) + _popcount(hand) + (goat - 1) * ((hand >> GOAT) & 1)


@njit(cache=True)
def _after_take(hand, takes, goat):
    """The value of the hand after the best card of ``takes``, and that card (key ``(value,
    -joins, -card value)``, first card id on a tie)."""
    best_v, best_j, best_c, card_out = 0.0, 0, 0, -1
    for card in range(NUM_CARDS + 1):
        if (takes >> card) & 1:
            v = _value(hand | (np.int64(1) << card), goat)
            j = -_joins(hand, card)
            c = -_card_value(card)
            if (
                card_out < 0
                or v < best_v
                or (v == best_v and (j < best_j or (j == best_j and c < best_c)))
            ):
                best_v, best_j, best_c, card_out = v, j, c, card
    return best_v, card_out


@njit(cache=True, inline="always")
def _high_bit(bits):
    """The highest card id in a non-empty card set (``int.bit_length() - 1``; the Goat's 54)."""
    card = NUM_CARDS
    while not (bits >> card) & 1:
        card -= 1
    return card


@njit(cache=True)
def _finisher(hand):
    """``partition(hand)[0]`` of the hand without the Goat when it splits into two combos or
    more, else 0 (the Goat, which joins any colour, is never kept to finish with)."""
    hand &= ~GOAT_CARD
    target = _cover(hand)
    if target <= 1:
        return np.int64(0)
    m = 0
    for c in range(NUM_COLOURS):
        m += (hand >> (c * NUM_VALUES)) & VALUE_BITS != 0
    # A split's sizes, largest first, compared as partition compares them: as the histogram
    # sum(16 ** size) (fewer than 16 groups of a size), so no split is stored or sorted.
    best_score, best_first = np.int64(-1), np.int64(0)
    for used in range(1 << m):  # bit i: the i-th colour the hand holds is played whole
        count, score, rest = 0, np.int64(0), hand
        first, first_key = np.int64(0), -1  # the split's first group, largest (size, top)
        i = 0
        for c in range(NUM_COLOURS):
            line = np.int64(VALUE_BITS) << (c * NUM_VALUES)
            if hand & line == 0:
                continue
            if (used >> i) & 1:
                group = hand & line
                size = _popcount(group)
                count += 1
                score += np.int64(1) << (4 * size)
                key = size * 16 + _high_bit(group) - c * NUM_VALUES + 1
                if key > first_key:
                    first, first_key = group, key
                rest &= ~line
            i += 1
        values = np.int64(0)  # the values left, one value group each
        for c in range(NUM_COLOURS):
            values |= (rest >> (c * NUM_VALUES)) & VALUE_BITS
        if count + _popcount(values) != target:
            continue
        for v in range(NUM_VALUES):
            group = rest & (_VALUE_LINE << v)
            if group:
                size = _popcount(group)
                count += 1
                score += np.int64(1) << (4 * size)
                key = size * 16 + v + 1
                if key > first_key:
                    first, first_key = group, key
        if score > best_score:
            best_score, best_first = score, first
    return best_first


@njit(cache=True, inline="always")
def _is_combo(bits):
    """Whether ``bits`` is a combo (R4, G2: the Goat joins one colour, never one number)."""
    goat = (bits >> GOAT) & 1
    bits &= ~GOAT_CARD
    if bits == 0:
        return goat == 1
    for c in range(NUM_COLOURS):
        if bits & ~(np.int64(VALUE_BITS) << (c * NUM_VALUES)) == 0:
            return True
    for v in range(NUM_VALUES):
        line = np.int64(0)
        for c in range(NUM_COLOURS):
            line |= np.int64(1) << (c * NUM_VALUES + v)
        if not goat and bits & ~line == 0:
            return True
    return False


@njit(cache=True, inline="always")
def _small_number(bits):
    """The combo number of one or two cards (R5; the Goat's digit is 0)."""
    hi, lo = 0, 0
    for card in range(NUM_CARDS + 1):
        if (bits >> card) & 1:
            v = _card_value(card)
            if v > hi:
                hi, lo = v, hi
            else:
                lo = max(lo, v)
    return hi if _popcount(bits) == 1 else hi * 10 + lo


@njit(cache=True)
def _exposed(combo, size, number, t_slot, t_cards, t_chance, count, known, unseen):
    """``Planner.exposed``: expected threats that could go out over ``combo``."""
    risk = 0.0
    for t in range(count):
        cards = t_cards[t]
        if cards == size + 1:
            risk += t_chance[t]
        elif cards == size:
            kn = known[t_slot[t]]
            if _popcount(kn) == size:
                share = 1.0 if _is_combo(kn) and _small_number(kn) > number else 0.0
            else:
                top = number // 10 ** (size - 1)
                pool = unseen | kn
                total, above = 0, 0
                for card in range(NUM_CARDS + 1):
                    if (pool >> card) & 1:
                        total += 1
                        above += _card_value(card) > top
                share = 0.0 if total == 0 else above / total
            risk += t_chance[t] * share
    return risk


@njit(cache=True)
def planner_kernel(obs, mask, bits, number, out):
    """``planner`` for each row of ``obs`` and ``mask`` into ``out`` ``(B,)``."""
    known = np.zeros(NUM_COLOURS, dtype=np.int64)
    t_slot = np.zeros(NUM_COLOURS, dtype=np.int64)
    t_cards = np.zeros(NUM_COLOURS, dtype=np.int64)
    t_chance = np.zeros(NUM_COLOURS, dtype=np.float64)
    every_card = _ALL | GOAT_CARD if obs.shape[1] > OBS_SIZE else _ALL
    legal_plays = np.empty(_plays(mask), dtype=np.int64)  # a row's, listed once
    for i in range(obs.shape[0]):
        hand = _plane(obs, i, _HAND, HAND)
        takes = _takes(mask, i)
        plays = 0
        if not takes:
            whole = -1
            for j in range(_plays(mask)):
                a, legal = _play(mask, i, j)
                if legal:
                    legal_plays[plays] = a
                    plays += 1
                    if bits[a] == hand:
                        whole = a
            if plays == 0:
                out[i] = PASS
                continue
            if whole >= 0:
                out[i] = whole
                continue
        players = 2
        for k in range(5):
            if obs[i, _PLAYERS + k] > 0.5:
                players = k + 2
        table = _plane(obs, i, _TABLE, TABLE)
        placed = hand | table | _plane(obs, i, _TAKE, TAKE_PLACE)
        placed |= _plane(obs, i, _DISCARD, DISCARD)
        for k in range(players):
            known[k] = _plane(obs, i, _KNOWN + NUM_CARDS * k, KNOWN + k)
            if k >= 1:
                placed |= known[k]
        unseen = ~placed & every_card
        pool = _popcount(unseen)
        count = 0
        for k in range(1, players):
            size = int(round(obs[i, _SIZES + k] * 9.0))
            chance = 0.0
            if size == 1:
                chance = 1.0
            elif size == 2:
                kn = known[k]
                if _popcount(kn) == 2:
                    chance = 1.0 if _is_combo(kn) else 0.0
                elif kn:
                    card = _high_bit(kn)
                    if card == GOAT:  # the Goat makes a combo with any other card (G2)
                        mates = unseen
                    else:
                        colour = np.int64(VALUE_BITS) << ((card // NUM_VALUES) * NUM_VALUES)
                        mates = colour | GOAT_CARD
                        for c in range(NUM_COLOURS):
                            mates |= np.int64(1) << (c * NUM_VALUES + card % NUM_VALUES)
                    chance = _popcount(unseen & mates) / max(pool, 1)
                else:
                    chance = PAIR_CHANCE
            if (size == 1 or size == 2) and chance > 0:
                t_slot[count], t_cards[count], t_chance[count] = k, size, chance
                count += 1
        goat = GOAT_THREATENED if count else GOAT_KEPT
        if takes:
            out[i] = take_action(_after_take(hand, takes, goat)[1])
            continue
        finisher = _finisher(hand)
        leading = obs[i, _PHASE + LEAD] > 0.5
        best_s, best_t, choice = 0.0, 0, -1
        if not leading:
            owner = -1
            for k in range(players):
                if obs[i, _OWNER + k] > 0.5:
                    owner = k
                    break
            best_s = _value(hand, goat)
            for t in range(count):
                if t_slot[t] == owner:
                    best_s += THREAT_COST * t_chance[t]
            best_t, choice = 1, PASS
        for j in range(plays):
            a = legal_plays[j]
            played = bits[a]
            left = hand & ~played
            score = _value(left, goat) if leading else _after_take(left, table, goat)[0]
            if played & finisher:
                score += FINISHER_COST
            if count:
                score += THREAT_COST * _exposed(
                    a, _popcount(played), number[a], t_slot, t_cards, t_chance, count, known, unseen
                )
            if leading:
                tie = -_card_value(_high_bit(played))
                if choice < 0 or score < best_s or (score == best_s and tie < best_t):
                    best_s, best_t, choice = score, tie, a
            elif score < best_s or (score == best_s and best_t > 0):
                best_s, best_t, choice = score, 0, a  # a play beats a pass of equal score
        out[i] = choice


__all__ = ["COVER_WEIGHT", "FINISHER_COST", "OUT", "PAIR_CHANCE", "THREAT_COST", "planner_kernel"]
