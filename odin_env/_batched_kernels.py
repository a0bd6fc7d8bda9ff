"""Numba kernels of the batched engine's rules (:mod:`odin_env.batched`; the steps, deals and
observations that use them are in :mod:`odin_env._batched_steps`); private, no public API.

Every kernel works on the whole batch in place: one row per game of the state arrays that
:class:`odin_env.batched.BatchedGames` owns. The rules are those of :mod:`odin_env.rules`,
transcribed line for line (``_apply`` is ``Game.apply``, ``_end_hand`` is ``Game._end_hand``,
``_decide`` is ``Game._decide``, ``_show`` is ``observation.observe`` plus ``legal_mask``); the
differential test holds them to it decision by decision.

Card sets are 54-bit ints in ``int64`` (bit ``card id``), as in the rules engine. The game's
random draws (first leaders, shuffles) stay in Python with each game's own numpy ``Generator``,
so that the deals are the very ones ``rules.Game`` makes: a kernel only marks a game as waiting
for a deal (column ``DEAL``) and :func:`deal_games` applies the drawn deal.

The kernels index 2-D arrays element by element (``obs[i, j]``) rather than taking row views:
a view is a new array object with reference counting, which costs more than the work here.
``tables`` is the tuple built by ``batched._build_tables``, unpacked in the order of ``TABLES``.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import intrinsic

# Numba reads module globals as compile-time constants, so the engine's own names serve here.
from odin_env.cards import (
    GOAT,
    GOAT_PENALTY,
    MAX_HAND,
    NUM_CARDS,
    NUM_COLOURS,
    NUM_VALUES,
    VALUE_BITS,
)
from odin_env.rules import FIRST_PLAYER_RULES, FOLLOW, LEAD, TAKING
from odin_env.spec import GOAT_PLAY, GOAT_TAKE, PASS, TAKE

# Columns of the per-game int64 state array ``st`` (B, NUM_FIELDS).
TABLE = 0  # combo index on the table, -1 when a trick is to be led
OWNER = 1  # seat that played the combo on the table, -1 before any play
TAKE_FROM = 2  # card set of the beaten combo while its beater takes a card
DISCARD = 3  # card set discarded face up this hand
SET_ASIDE = 4  # card set not dealt this hand
PHASE = 5  # LEAD, FOLLOW, TAKING (OVER never shows: finished games are dealt again)
PASSES = 6  # passes in a row since the last play
HAND_LEADER = 7  # who led this hand's first trick
NLEGAL = 8  # number of legal actions, listed in ``legal[i, :NLEGAL]``
HANDS_PLAYED = 9  # hands finished in this game
DEAL = 10  # 0: playing; 1: waiting for the next hand's deal; 2: waiting for a new game's deal
DRAW = 11  # 1 when the next leader is drawn from the game's generator
NEXT_LEADER = 12  # the next leader when it is not drawn
NUM_FIELDS = 13

# Entries of the int64 config array ``cfg``.
C_PLAYERS = 0
C_THRESHOLD = 1
C_RULE = 2  # index in rules.FIRST_PLAYER_RULES: rotate, winner, random, fixed
C_HAND_EPISODE = 3  # 1 when one hand is the whole episode
C_WIN_REWARD = 4  # 1 for reward="win", 0 for "penalty"
C_AUTO_FORCED = 5
C_GOAT = 6  # 1 in a game with the Goat (RULES G1-G5)
NUM_CONFIG = 7
RULE_ROTATE, RULE_WINNER, RULE_RANDOM, RULE_FIXED = (
    FIRST_PLAYER_RULES.index(rule) for rule in ("rotate", "winner", "random", "fixed")
)

# Entries of the int64 observation-offset array ``off`` (starts of the views of LAYOUT).
O_HAND, O_TABLE, O_TAKE, O_DISCARD, O_KNOWN = 0, 1, 2, 3, 4
O_HAND_SIZE, O_PENALTY, O_TABLE_OWNER, O_PHASE, O_PASSES = 5, 6, 7, 8, 9
NUM_OFFSETS = 10

TABLES = (
    "bits",  # (6702,) card set of each play action (spec.PLAY_BITS; 0: not a play)
    "size",  # (6702,) cards in each play (spec.PLAY_SIZE)
    "beat_lo",  # (6702,) combos.BEAT_LO, and GOAT_BEAT_LO at the Goat's plays
    "colour_start",  # (6, 512, 12) see batched._subset_table
    "colour_idx",
    "value_start",  # (9, 64, 12)
    "value_idx",
    "colour_index",  # (6, 512) combo index of a one-colour pattern
    "value_index",  # (9, 64) combo index of a one-value pattern
    "unpack",  # (256, 4) uint64: the bits of a byte as 8 float32 0/1, viewed in pairs
    "spread",  # (512,) combos.SPREAD
    "number",  # (6702,) the number of each play (spec.PLAY_NUMBER)
    "goat_idx",  # the play of the Goat with colour_idx[k]'s cards (colour_start indexes it)
    "goat_colour_index",  # (6, 512) the play of the Goat with a one-colour pattern
)

PATTERN = VALUE_BITS  # the 9 value bits of one colour


@intrinsic
def _popcount(typingctx, bits):
    """The number of set bits of an integer: LLVM's ``ctpop``, one instruction."""

    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return bits(bits), codegen


@njit(cache=True, inline="always")
def _add_combos(hand, columns, size, lo, legal, i, n, tables):
    """Append to ``legal[i, n:]`` the ``size``-card combos inside ``hand`` with index >= ``lo``
    (``rules.hand_combos``); ``columns``: the hand's transpose (bits ``6v .. 6v+5`` hold the
    colours holding value ``v + 1``). Returns the new length."""
    c_start, c_idx, v_start, v_idx = tables[3], tables[4], tables[5], tables[6]
    for colour in range(NUM_COLOURS):
        p = (hand >> (NUM_VALUES * colour)) & PATTERN
        if p:
            for k in range(c_start[colour, p, size], c_start[colour, p, size + 1]):
                a = c_idx[k]
                if a >= lo:
                    legal[i, n] = a
                    n += 1
    if 2 <= size <= NUM_COLOURS:
        for value in range(NUM_VALUES):
            q = (columns >> (NUM_COLOURS * value)) & 63
            if q & (q - 1):
                for k in range(v_start[value, q, size], v_start[value, q, size + 1]):
                    a = v_idx[k]
                    if a >= lo:
                        legal[i, n] = a
                        n += 1
    return n


@njit(cache=True, inline="always")
def _whole_hand(hand, tables):
    """The combo index of the whole hand, or -1 when the hand is not one combo (R8)."""
    colour_index, value_index = tables[7], tables[8]
    colour_found = -1
    values = 0
    for colour in range(NUM_COLOURS):
        p = (hand >> (NUM_VALUES * colour)) & PATTERN
        if p:
            values |= p
            colour_found = colour if colour_found == -1 else -2
    if colour_found >= 0:
        return colour_index[colour_found, values]
    if values & (values - 1) == 0:
        value = 0
        while (values >> value) & 1 == 0:
            value += 1
        q = 0
        for colour in range(NUM_COLOURS):
            q |= ((hand >> (NUM_VALUES * colour + value)) & 1) << colour
        return value_index[value, q]
    return -1


@njit(cache=True)
def _add_goat_combos(hand, size, above, legal, i, n, tables):
    """Append to ``legal[i, n:]`` the plays of ``size`` cards with the Goat inside ``hand``
    (which holds it) whose number is above ``above`` (``rules.goat_combos``, G2). Returns the
    new length."""
    c_start, number, goat_idx = tables[3], tables[11], tables[12]
    if size == 1:
        if number[GOAT_PLAY] > above:
            legal[i, n] = GOAT_PLAY
            n += 1
        return n
    for colour in range(NUM_COLOURS):
        p = (hand >> (NUM_VALUES * colour)) & PATTERN
        if p:
            for k in range(c_start[colour, p, size - 1], c_start[colour, p, size]):
                a = goat_idx[k]
                if number[a] > above:
                    legal[i, n] = a
                    n += 1
    return n


@njit(cache=True)
def _lead_goat(hand, legal, i, n, tables):
    """``rules.lead_plays``' end for a hand with the Goat: the Goat alone, and the whole hand
    when the other cards share one colour."""
    legal[i, n] = GOAT_PLAY
    n += 1
    colour_found, pattern = -1, 0
    for colour in range(NUM_COLOURS):
        p = (hand >> (NUM_VALUES * colour)) & PATTERN
        if p:
            colour_found, pattern = (colour, p) if colour_found == -1 else (-2, 0)
    if colour_found >= 0:
        legal[i, n] = tables[13][colour_found, pattern]
        n += 1
    return n


@njit(cache=True, inline="always")
def _decide(i, st, cur, hands, legal, tables):
    """``Game._decide``: list the legal actions of game ``i``'s acting seat."""
    size_of, beat_lo, spread, number = tables[1], tables[2], tables[10], tables[11]
    phase = st[i, PHASE]
    hand = hands[i, cur[i]]
    goat = (hand >> GOAT) & 1
    n = 0
    if phase == LEAD:
        n = _add_combos(hand, 0, 1, 0, legal, i, 0, tables)
        if goat:
            n = _lead_goat(hand, legal, i, n, tables)
        elif hand & (hand - 1):
            whole = _whole_hand(hand, tables)
            if whole >= 0:
                legal[i, n] = whole
                n += 1
    elif phase == FOLLOW:
        table = st[i, TABLE]
        size = size_of[table]
        many = _popcount(hand) >= size  # else only passing is legal (a common forced decision)
        if many:
            columns = 0
            for colour in range(NUM_COLOURS):
                columns |= spread[(hand >> (NUM_VALUES * colour)) & PATTERN] << colour
            n = _add_combos(hand, columns, size, beat_lo[table], legal, i, 0, tables)
            if size < MAX_HAND:
                n = _add_combos(hand, columns, size + 1, 0, legal, i, n, tables)
        legal[i, n] = PASS
        n += 1
        if goat and many:
            n = _add_goat_combos(hand, size, number[table], legal, i, n, tables)
            if size < MAX_HAND:
                n = _add_goat_combos(hand, size + 1, -1, legal, i, n, tables)
    elif phase == TAKING:
        take_from = st[i, TAKE_FROM]
        for card in range(NUM_CARDS):
            if (take_from >> card) & 1:
                legal[i, n] = TAKE + card
                n += 1
        if (take_from >> GOAT) & 1:
            legal[i, n] = GOAT_TAKE
            n += 1
    st[i, NLEGAL] = n


@njit(cache=True, inline="always")
def _end_hand(
    i,
    emptied,
    cfg,
    st,
    hands,
    totals,
    rewards,
    done,
    hand_end,
    penalties,
    final_totals,
    winners,
    final_hands,
):
    """``Game._end_hand``: score the hand, then mark the game as waiting for a deal."""
    n = cfg[C_PLAYERS]
    high = 0
    for s in range(n):  # R13; G4: the Goat costs 5
        p = _popcount(hands[i, s]) + (GOAT_PENALTY - 1) * ((hands[i, s] >> GOAT) & 1)
        penalties[i, s] = p
        totals[i, s] += p
        high = max(high, totals[i, s])
        if cfg[C_WIN_REWARD] == 0:
            rewards[i, s] += -float(p)
    hand_end[i] = True
    st[i, HANDS_PLAYED] += 1
    rule = cfg[C_RULE]
    if cfg[C_HAND_EPISODE] == 1 or high >= cfg[C_THRESHOLD]:
        low = totals[i, 0]
        for s in range(1, n):
            low = min(low, totals[i, s])
        shared = 0
        for s in range(n):
            if totals[i, s] == low:
                shared += 1
        for s in range(n):
            final_totals[i, s] = totals[i, s]
            winners[i, s] = totals[i, s] == low
            if totals[i, s] == low and cfg[C_WIN_REWARD] == 1:
                rewards[i, s] += 1.0 / shared
        final_hands[i] = st[i, HANDS_PLAYED]
        done[i] = True
        st[i, DEAL] = 2
        st[i, DRAW] = 1 if rule != RULE_FIXED else 0
        st[i, NEXT_LEADER] = 0
    else:
        st[i, DEAL] = 1
        st[i, DRAW] = 1 if rule == RULE_RANDOM else 0
        if rule == RULE_ROTATE:
            st[i, NEXT_LEADER] = (st[i, HAND_LEADER] + 1) % n
        elif rule == RULE_WINNER:
            st[i, NEXT_LEADER] = emptied
        else:
            st[i, NEXT_LEADER] = 0


@njit(cache=True, inline="always")
def _apply(
    i,
    action,
    cfg,
    st,
    cur,
    hands,
    known,
    totals,
    legal,
    rewards,
    done,
    hand_end,
    penalties,
    final_totals,
    winners,
    final_hands,
    tables,
):
    """``Game.apply`` for a legal ``action`` of game ``i``."""
    bits = tables[0]
    n = cfg[C_PLAYERS]
    seat = cur[i]
    if st[i, PHASE] == TAKING:  # R10 (G5: the Goat's take is its own action)
        bit = np.int64(1) << (GOAT if action == GOAT_TAKE else action - TAKE)
        hands[i, seat] |= bit
        known[i, seat] |= bit
        st[i, DISCARD] |= st[i, TAKE_FROM] & ~bit
        st[i, TAKE_FROM] = 0
        st[i, PHASE] = FOLLOW
        cur[i] = (seat + 1) % n
    elif action == PASS:  # R9, R11
        st[i, PASSES] += 1
        if st[i, PASSES] == n - 1:
            st[i, DISCARD] |= bits[st[i, TABLE]]
            st[i, TABLE] = -1
            st[i, PASSES] = 0
            st[i, PHASE] = LEAD
            cur[i] = st[i, OWNER]
        else:
            cur[i] = (seat + 1) % n
    else:  # R8, R9
        played = bits[action]
        hand = hands[i, seat] & ~played
        hands[i, seat] = hand
        known[i, seat] &= ~played
        beaten = st[i, TABLE]
        st[i, TABLE] = action
        st[i, OWNER] = seat
        st[i, PASSES] = 0
        if hand == 0:  # R10 exception, R13
            if beaten >= 0:
                st[i, DISCARD] |= bits[beaten]
            _end_hand(
                i,
                seat,
                cfg,
                st,
                hands,
                totals,
                rewards,
                done,
                hand_end,
                penalties,
                final_totals,
                winners,
                final_hands,
            )
            return
        if beaten < 0:
            st[i, PHASE] = FOLLOW
            cur[i] = (seat + 1) % n
        else:
            st[i, TAKE_FROM] = bits[beaten]
            st[i, PHASE] = TAKING
    _decide(i, st, cur, hands, legal, tables)
