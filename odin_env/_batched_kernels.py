"""Numba kernels of the batched engine (:mod:`odin_env.batched`); private, no public API.

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
from numba import njit, prange
from numba.extending import intrinsic

# Numba reads module globals as compile-time constants, so the engine's own names serve here.
from odin_env.cards import MAX_HAND, NUM_CARDS, NUM_COLOURS, NUM_VALUES, VALUE_BITS
from odin_env.rules import FIRST_PLAYER_RULES, FOLLOW, LEAD, TAKING

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
NUM_CONFIG = 6
RULE_ROTATE, RULE_WINNER, RULE_RANDOM, RULE_FIXED = (
    FIRST_PLAYER_RULES.index(rule) for rule in ("rotate", "winner", "random", "fixed")
)

# Entries of the int64 observation-offset array ``off`` (starts of the views of LAYOUT).
O_HAND, O_TABLE, O_TAKE, O_DISCARD, O_KNOWN = 0, 1, 2, 3, 4
O_HAND_SIZE, O_PENALTY, O_TABLE_OWNER, O_PHASE, O_PASSES = 5, 6, 7, 8, 9
NUM_OFFSETS = 10

TABLES = (
    "bits",  # (3579,) card set of each combo
    "size",  # (3579,) cards in each combo
    "beat_lo",  # (3579,) combos.BEAT_LO
    "colour_start",  # (6, 512, 12) see batched._subset_table
    "colour_idx",
    "value_start",  # (9, 64, 12)
    "value_idx",
    "colour_index",  # (6, 512) combo index of a one-colour pattern
    "value_index",  # (9, 64) combo index of a one-value pattern
    "unpack",  # (256, 4) uint64: the bits of a byte as 8 float32 0/1, viewed in pairs
    "spread",  # (512,) combos.SPREAD
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
    _, _, _, c_start, c_idx, v_start, v_idx, _, _, _, _ = tables
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
    _, _, _, _, _, _, _, colour_index, value_index, _, _ = tables
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


@njit(cache=True, inline="always")
def _decide(i, st, cur, hands, legal, tables):
    """``Game._decide``: list the legal actions of game ``i``'s acting seat."""
    bits, size_of, beat_lo, _, _, _, _, _, _, _, spread = tables
    play_count = bits.shape[0]  # PASS; TAKE is one more
    phase = st[i, PHASE]
    hand = hands[i, cur[i]]
    n = 0
    if phase == LEAD:
        n = _add_combos(hand, 0, 1, 0, legal, i, 0, tables)
        if hand & (hand - 1):
            whole = _whole_hand(hand, tables)
            if whole >= 0:
                legal[i, n] = whole
                n += 1
    elif phase == FOLLOW:
        table = st[i, TABLE]
        size = size_of[table]
        if _popcount(hand) >= size:  # else only passing is legal (a common forced decision)
            columns = 0
            for colour in range(NUM_COLOURS):
                columns |= spread[(hand >> (NUM_VALUES * colour)) & PATTERN] << colour
            n = _add_combos(hand, columns, size, beat_lo[table], legal, i, 0, tables)
            if size < MAX_HAND:
                n = _add_combos(hand, columns, size + 1, 0, legal, i, n, tables)
        legal[i, n] = play_count
        n += 1
    elif phase == TAKING:
        take_from = st[i, TAKE_FROM]
        for card in range(NUM_CARDS):
            if (take_from >> card) & 1:
                legal[i, n] = play_count + 1 + card
                n += 1
    st[i, NLEGAL] = n


@njit(cache=True, inline="always")
def _end_hand(i, emptied, cfg, st, hands, totals, rewards, done, hand_end, penalties,
              final_totals, winners, final_hands):  # fmt: skip
    """``Game._end_hand``: score the hand, then mark the game as waiting for a deal."""
    n = cfg[C_PLAYERS]
    high = 0
    for s in range(n):
        p = _popcount(hands[i, s])
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
def _apply(i, action, cfg, st, cur, hands, known, totals, legal, rewards, done, hand_end,
           penalties, final_totals, winners, final_hands, tables):  # fmt: skip
    """``Game.apply`` for a legal ``action`` of game ``i``."""
    bits = tables[0]
    play_count = bits.shape[0]
    n = cfg[C_PLAYERS]
    seat = cur[i]
    if st[i, PHASE] == TAKING:  # R10
        bit = np.int64(1) << (action - play_count - 1)
        hands[i, seat] |= bit
        known[i, seat] |= bit
        st[i, DISCARD] |= st[i, TAKE_FROM] & ~bit
        st[i, TAKE_FROM] = 0
        st[i, PHASE] = FOLLOW
        cur[i] = (seat + 1) % n
    elif action == play_count:  # PASS: R9, R11
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
            _end_hand(i, seat, cfg, st, hands, totals, rewards, done, hand_end, penalties,
                      final_totals, winners, final_hands)  # fmt: skip
            return
        if beaten < 0:
            st[i, PHASE] = FOLLOW
            cur[i] = (seat + 1) % n
        else:
            st[i, TAKE_FROM] = bits[beaten]
            st[i, PHASE] = TAKING
    _decide(i, st, cur, hands, legal, tables)


@njit(cache=True, inline="always")
def _write_bits(obs64, i, plane, start, cards, shown, unpack):
    """Write the 54 bits of a card set as 0/1 floats at ``obs[i, start:]``.

    ``obs64`` is the observation array seen as pairs of float32 (``uint64``; every plane starts
    at an even index) and ``unpack[x]`` the 8 floats of byte ``x`` as 4 such pairs. Only the
    bytes that differ from ``shown[i, plane]``, the set written there last, are written, so that
    unchanged (mostly empty) planes cost no memory traffic.
    """
    diff = cards ^ shown[i, plane]
    if diff == 0:
        return
    shown[i, plane] = cards
    first = start // 2
    for byte in range(NUM_CARDS // 8 + 1):
        if (diff >> (8 * byte)) & 255:
            x = (cards >> (8 * byte)) & 255
            for j in range(min(4, (NUM_CARDS - 8 * byte) // 2)):
                obs64[i, first + 4 * byte + j] = unpack[x, j]


@njit(cache=True, inline="always")
def _show(i, cfg, off, st, cur, hands, known, totals, legal, mask, obs, obs64, shown, tables):
    """Set game ``i``'s mask entries and write its acting seat's observation (``observe``).

    Only the entries a game can change are written: the planes and fields of empty seats and the
    config fields were written once by the engine and stay as they are.
    """
    bits, unpack = tables[0], tables[9]
    for k in range(st[i, NLEGAL]):
        mask[i, legal[i, k]] = 1
    n = cfg[C_PLAYERS]
    seat = cur[i]
    table = st[i, TABLE]
    phase = st[i, PHASE]
    _write_bits(obs64, i, 0, off[O_HAND], hands[i, seat], shown, unpack)
    _write_bits(obs64, i, 1, off[O_TABLE], bits[table] if table >= 0 else 0, shown, unpack)
    _write_bits(obs64, i, 2, off[O_TAKE], st[i, TAKE_FROM], shown, unpack)
    _write_bits(obs64, i, 3, off[O_DISCARD], st[i, DISCARD], shown, unpack)
    owner = st[i, OWNER] if phase != LEAD else -1
    threshold = cfg[C_THRESHOLD]
    cap = threshold + MAX_HAND - 1  # observation.penalty_cap: games never pass it
    for k in range(n):
        s = (seat + k) % n
        _write_bits(obs64, i, 4 + k, off[O_KNOWN] + NUM_CARDS * k, known[i, s], shown, unpack)
        obs[i, off[O_HAND_SIZE] + k] = _popcount(hands[i, s]) / 9.0
        obs[i, off[O_PENALTY] + k] = min(totals[i, s], cap) / threshold
        obs[i, off[O_TABLE_OWNER] + k] = 1.0 if s == owner else 0.0
    for k in range(3):
        obs[i, off[O_PHASE] + k] = 1.0 if k == phase else 0.0
    obs[i, off[O_PASSES]] = st[i, PASSES] / (n - 1)


@njit(cache=True)
def find_illegal(actions, st, legal):
    """The first game whose action is not legal, or -1: checked before anything changes."""
    for i in range(actions.shape[0]):
        a = actions[i]
        ok = False
        for k in range(st[i, NLEGAL]):
            if legal[i, k] == a:
                ok = True
                break
        if not ok:
            return i
    return -1


@njit(cache=True, inline="always")
def _step_one(i, action, cfg, off, st, cur, hands, known, totals, legal, mask, obs, obs64, shown,
              rewards, done, hand_end, penalties, final_totals, winners, final_hands,
              tables):  # fmt: skip
    """Game ``i``'s step: its (already checked) action then, with auto_forced, the one-option
    decisions after it; shows the next decision, or returns True when a deal is due first.
    ``_clear_outs`` has cleared the per-step outputs."""
    for k in range(st[i, NLEGAL]):
        mask[i, legal[i, k]] = 0
    while True:
        _apply(i, action, cfg, st, cur, hands, known, totals, legal, rewards, done, hand_end,
               penalties, final_totals, winners, final_hands, tables)  # fmt: skip
        if cfg[C_AUTO_FORCED] == 0 or st[i, DEAL] != 0 or st[i, NLEGAL] != 1:
            break
        action = legal[i, 0]
    if st[i, DEAL] != 0:
        return True
    _show(i, cfg, off, st, cur, hands, known, totals, legal, mask, obs, obs64, shown, tables)
    return False


@njit(cache=True, inline="always")
def _clear_outs(rewards, done, hand_end):
    """Zero the per-step outputs before any game steps."""
    for i in range(done.shape[0]):
        for s in range(rewards.shape[1]):
            rewards[i, s] = 0.0
        done[i] = False
        hand_end[i] = False


@njit(cache=True)
def step_games(actions, cfg, off, st, cur, hands, known, totals, legal, mask, obs, shown,
               rewards, done, hand_end, penalties, final_totals, winners, final_hands, waiting,
               tables):  # fmt: skip
    """Step every game (``_step_one``); returns how many now wait for a deal (listed first in
    ``waiting``)."""
    obs64 = obs.view(np.uint64)
    _clear_outs(rewards, done, hand_end)
    count = 0
    for i in range(actions.shape[0]):
        if _step_one(i, actions[i], cfg, off, st, cur, hands, known, totals, legal, mask, obs,
                     obs64, shown, rewards, done, hand_end, penalties, final_totals, winners,
                     final_hands, tables):  # fmt: skip
            waiting[count] = i
            count += 1
    return count


@njit(cache=True, parallel=True)
def step_games_parallel(actions, cfg, off, st, cur, hands, known, totals, legal, mask, obs,
                        shown, rewards, done, hand_end, penalties, final_totals, winners,
                        final_hands, waiting, tables):  # fmt: skip
    """``step_games`` with the games shared among numba's threads (games are independent).

    The outputs are separate arguments rather than one tuple of arrays: with a tuple, numba
    0.68's parallel loop silently dropped some element writes (``done``, ``final_hands``).
    """
    obs64 = obs.view(np.uint64)
    _clear_outs(rewards, done, hand_end)
    for i in prange(actions.shape[0]):
        _step_one(i, actions[i], cfg, off, st, cur, hands, known, totals, legal, mask, obs, obs64,
                  shown, rewards, done, hand_end, penalties, final_totals, winners, final_hands,
                  tables)  # fmt: skip
    count = 0
    for i in range(actions.shape[0]):
        if st[i, DEAL] != 0:
            waiting[count] = i
            count += 1
    return count


@njit(cache=True)
def deal_games(slots, orders, leaders, cfg, off, st, cur, hands, known, totals, legal, mask,
               obs, shown, tables):  # fmt: skip
    """``Game._deal`` for each waiting game ``slots[k]`` with the shuffle ``orders[k]`` and,
    when drawn, the leader ``leaders[k]``.

    A fresh hand opens with a lead from 9 cards, never a forced decision, so no forced play
    follows a deal (``play_forced`` would apply nothing).
    """
    n = cfg[C_PLAYERS]
    obs64 = obs.view(np.uint64)
    for k in range(slots.shape[0]):
        i = slots[k]
        if st[i, DEAL] == 2:
            for s in range(n):
                totals[i, s] = 0
            st[i, HANDS_PLAYED] = 0
        leader = leaders[k] if st[i, DRAW] == 1 else st[i, NEXT_LEADER]
        for s in range(n):
            cards = np.int64(0)
            for j in range(MAX_HAND * s, MAX_HAND * (s + 1)):
                cards |= np.int64(1) << orders[k, j]
            hands[i, s] = cards
            known[i, s] = 0
        aside = np.int64(0)
        for j in range(MAX_HAND * n, orders.shape[1]):
            aside |= np.int64(1) << orders[k, j]
        st[i, SET_ASIDE] = aside
        st[i, DISCARD] = 0
        st[i, TABLE] = -1
        st[i, OWNER] = -1
        st[i, TAKE_FROM] = 0
        st[i, PASSES] = 0
        st[i, HAND_LEADER] = leader
        cur[i] = leader
        st[i, PHASE] = LEAD
        st[i, DEAL] = 0
        _decide(i, st, cur, hands, legal, tables)
        _show(i, cfg, off, st, cur, hands, known, totals, legal, mask, obs, obs64, shown, tables)


@njit(cache=True)
def show_games(slots, cfg, off, st, cur, hands, known, totals, legal, mask, obs, shown, tables):
    """List and show the pending decision of each game ``slots[k]`` whose state was written
    directly (``BatchedGames.load``); its old mask entries are already cleared."""
    obs64 = obs.view(np.uint64)
    for i in slots:
        _decide(i, st, cur, hands, legal, tables)
        _show(i, cfg, off, st, cur, hands, known, totals, legal, mask, obs, obs64, shown, tables)


PICK_BLOCK = 64


@njit(cache=True, inline="always")
def _pick_row(mask, i, u, out, sums):
    """Row ``i``'s nonzero entry of rank ``floor(u[i] * count)`` into ``out[i]`` (-1 when the
    row has none). One pass counts the entries by blocks of 64 (a loop the compiler vectorises)
    into ``sums[i]``, then only the block holding the chosen rank is scanned."""
    width = mask.shape[1]
    blocks = width // PICK_BLOCK
    total = 0
    for b in range(blocks):
        s = 0
        base = b * PICK_BLOCK
        for j in range(PICK_BLOCK):
            s += mask[i, base + j] != 0
        sums[i, b] = s
        total += s
    s = 0
    for a in range(blocks * PICK_BLOCK, width):
        s += mask[i, a] != 0
    sums[i, blocks] = s
    total += s
    out[i] = -1
    if total == 0:
        return
    rank = min(int(u[i] * total), total - 1)
    b = 0
    while rank >= sums[i, b]:
        rank -= sums[i, b]
        b += 1
    for a in range(b * PICK_BLOCK, width):
        if mask[i, a] != 0:
            if rank == 0:
                out[i] = a
                return
            rank -= 1


@njit(cache=True)
def pick_uniform(mask, u, out, sums):
    """For each row, a nonzero entry chosen by ``u`` (``_pick_row``); returns the first row
    without any, or -1. ``sums``: scratch of shape ``(rows, width // 64 + 1)``."""
    for i in range(mask.shape[0]):
        _pick_row(mask, i, u, out, sums)
        if out[i] < 0:
            return i
    return -1


@njit(cache=True, parallel=True)
def pick_uniform_parallel(mask, u, out, sums):
    """``pick_uniform`` with the rows shared among numba's threads."""
    for i in prange(mask.shape[0]):
        _pick_row(mask, i, u, out, sums)
    for i in range(mask.shape[0]):
        if out[i] < 0:
            return i
    return -1
