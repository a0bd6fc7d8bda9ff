"""The linear player's features for a whole batch in one numba call: the same numbers, bit for
bit, as :func:`agents.linear.row_features` computes in Python (a differential test checks every
legal action of thousands of positions), about an order of magnitude faster.

:func:`batch_features` decodes the rows with numpy (the card planes as 54-bit ints, as
:func:`odin_env.observation.card_sets` reads them; the hand sizes, penalty totals, phase, owner,
passes and colours in play, as :func:`agents.linear.row_features` reads them) and hands them to
:func:`features_kernel`, which writes the features of every legal (row, action) pair in the
order :data:`FEATURE_ORDER` (that of :data:`agents.linear.FEATURES`). Nothing but the
observation and the mask is read.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from agents.batched_shaper import _cover, _popcount
from odin_env.cards import NUM_CARDS, NUM_COLOURS, NUM_VALUES, VALUE_BITS
from odin_env.combos import COMBO_BITS, COMBO_NUMBER, COMBO_SIZE
from odin_env.observation import NUM_PLANES, PLANES_SIZE, hand_sizes, players_of, views
from odin_env.rules import PASS, TAKE

FEATURE_ORDER = (
    "out", "cards_left", "combos_left", "cards_left_danger", "combos_left_danger",
    "cards_left_standing", "cards_left_ahead", "largest_left", "singles_left", "shed",
    "top_value", "high_shed", "lead_single", "pass", "pass_owner_near", "pass_table_size",
    "pass_last", "margin", "size_up", "exposed_plus", "exposed_same", "higher_out",
    "breaks_finisher", "links_broken", "take_value", "take_links",
)  # fmt: skip
"""The columns the kernel writes (:data:`agents.linear.FEATURES`' order, checked there)."""
(OUT, CARDS, COMBOS, CARDS_DANGER, COMBOS_DANGER, STANDING, AHEAD, LARGEST, SINGLES, SHED,
 TOP, HIGH, LEAD_SINGLE, PASS_F, PASS_NEAR, PASS_TABLE, PASS_LAST, MARGIN, SIZE_UP,
 EXPOSED_PLUS, EXPOSED_SAME, HIGHER, FINISHER, LINKS, TAKE_VALUE,
 TAKE_LINKS) = range(26)  # fmt: skip

_BITS = np.array(COMBO_BITS, dtype=np.int64)
_SIZE = COMBO_SIZE.astype(np.int64)
_TOP = (COMBO_NUMBER // 10 ** (COMBO_SIZE - 1)).astype(np.int64)  # leading value (R5)
_VALUE_LINES = np.array(
    [sum(1 << (k * NUM_VALUES + v) for k in range(NUM_COLOURS)) for v in range(NUM_VALUES)],
    dtype=np.int64,
)
_COLOUR_LINES = np.array([VALUE_BITS << (c * NUM_VALUES) for c in range(NUM_COLOURS)], np.int64)
_LINES = np.concatenate([_COLOUR_LINES, _VALUE_LINES])
_HIGH = int(_VALUE_LINES[6] | _VALUE_LINES[7] | _VALUE_LINES[8])  # values 7-9


@njit(cache=True, inline="always")
def _links(hand, card):
    line = _COLOUR_LINES[card // NUM_VALUES] | _VALUE_LINES[card % NUM_VALUES]
    return _popcount(hand & line & ~(np.int64(1) << card))


@njit(cache=True)
def _largest_line(hand):
    best, count = np.int64(0), 0
    for line in _LINES:
        part = hand & line
        n = _popcount(part)
        if n > count:
            best, count = part, n
    return best


@njit(cache=True)
def _best_take(hand, cards):
    """``agents.linear._best_take``: fewest combos, then most links, then the highest value."""
    best_key, pick = 1 << 40, -1
    for c in range(NUM_CARDS):
        if (cards >> c) & 1:
            # (cover, -links, -value) as one number: links <= 13, value <= 9
            key = (_cover(hand | (np.int64(1) << c)) * 64 - _links(hand, c)) * 16 - (
                c % NUM_VALUES + 1
            )
            if key < best_key:
                best_key, pick = key, c
    return pick


@njit(cache=True)
def _hand_features(x, after):
    cards = _popcount(after)
    x[CARDS] = cards / 9.0
    if cards == 0:
        x[OUT] = 1.0
        return
    x[COMBOS] = _cover(after) / 9.0
    x[LARGEST] = _popcount(_largest_line(after)) / 9.0
    alone = 0
    for c in range(NUM_CARDS):
        if (after >> c) & 1 and _links(after, c) == 0:
            alone += 1
    x[SINGLES] = alone / 9.0


@njit(cache=True)
def features_kernel(
    hand, table, others, sizes, penalty, players, phase, owner, passes, rows, actions, out
):
    """Write the features of pair ``k`` (row ``rows[k]``, action ``actions[k]``) into
    ``out[k]``; the per-row arrays are what :func:`batch_features` decodes."""
    higher = np.zeros(NUM_VALUES + 1, dtype=np.int64)
    last = -1
    danger = ahead = 0.0
    finisher = np.int64(0)
    for k in range(rows.shape[0]):
        r, a, x = rows[k], actions[k], out[k]
        n, h, t = players[r], hand[r], table[r]
        if r != last:  # what the row's actions share
            last = r
            higher[NUM_VALUES] = 0
            for v in range(NUM_VALUES - 1, -1, -1):
                higher[v] = higher[v + 1] + _popcount(others[r] & _VALUE_LINES[v])
            low, best = 99, 10.0
            for s in range(1, n):
                low = min(low, sizes[r, s])
                best = min(best, penalty[r, s])
            danger = 1.0 if low <= 2 else 0.0
            ahead = best - penalty[r, 0]
            finisher = _largest_line(h) if phase[r] != 2 else np.int64(0)
        if a >= TAKE:
            c = a - TAKE
            after = h | (np.int64(1) << c)
            x[TAKE_VALUE] = (c % NUM_VALUES + 1) / 9.0
            x[TAKE_LINKS] = _links(h, c) / 13.0
        elif a == PASS:
            after = h
            x[PASS_F] = 1.0
            if owner[r] > 0 and sizes[r, owner[r]] <= 2:
                x[PASS_NEAR] = 1.0
            x[PASS_TABLE] = _popcount(t) / 9.0
            x[PASS_LAST] = 1.0 if passes[r] == n - 2 else 0.0
        else:
            bits, size, top = _BITS[a], _SIZE[a], _TOP[a]
            left = h & ~bits
            after = left
            if t and left:
                c = _best_take(left, t)
                after = left | (np.int64(1) << c)
                x[TAKE_VALUE] = (c % NUM_VALUES + 1) / 9.0
                x[TAKE_LINKS] = _links(left, c) / 13.0
            x[SHED] = size / 9.0
            x[TOP] = top / 9.0
            x[HIGH] = _popcount(bits & _HIGH) / 9.0
            x[LEAD_SINGLE] = 1.0 if phase[r] == 0 and left else 0.0
            if t:
                if size == _popcount(t):
                    t_top = 0
                    for c in range(NUM_CARDS):
                        if (t >> c) & 1:
                            t_top = max(t_top, c % NUM_VALUES + 1)
                    x[MARGIN] = (top - t_top) / 9.0
                else:
                    x[SIZE_UP] = 1.0
            plus = same = 0
            for s in range(1, n):
                plus += sizes[r, s] == size + 1
                same += sizes[r, s] == size and sizes[r, s] <= 2
            x[EXPOSED_PLUS] = plus / (n - 1)
            x[EXPOSED_SAME] = same * (9 - top) / 8.0 / (n - 1)
            x[HIGHER] = higher[top] / 54.0
            if left and bits & finisher:
                x[FINISHER] = 1.0
            links = 0
            for c in range(NUM_CARDS):
                if (bits >> c) & 1:
                    links += _links(left, c)
            x[LINKS] = links / 16.0
        _hand_features(x, after)
        cards = x[CARDS]
        x[CARDS_DANGER] = cards * danger
        x[COMBOS_DANGER] = x[COMBOS] * danger
        x[STANDING] = cards * penalty[r, 0]
        x[AHEAD] = cards * ahead


def batch_features(obs: np.ndarray, rows: np.ndarray, actions: np.ndarray) -> np.ndarray:
    """``(len(rows), 26)`` float64: the features of the legal pairs ``(rows[k], actions[k])`` of
    the observations ``obs`` ``(B, OBS_SIZE)`` float32 (pairs grouped by row)."""
    planes = obs[:, :PLANES_SIZE].reshape(len(obs), NUM_PLANES, NUM_CARDS) > 0.5
    packed = np.zeros((len(obs), NUM_PLANES, 8), dtype=np.uint8)
    packed[:, :, :7] = np.packbits(planes, axis=2, bitorder="little")
    sets = packed.view("<u8")[..., 0].astype(np.int64)
    hand, table, take_from, discard = sets[:, 0], sets[:, 1], sets[:, 2], sets[:, 3]
    v = views(obs)
    deck = (v["colours"] != 0).astype(np.int64) @ _COLOUR_LINES  # disjoint lines: a sum is an or
    others = deck & ~(hand | table | take_from | discard)
    players = players_of(v)
    sizes = hand_sizes(v)
    owner_rows = v["table_owner"]
    owner = np.where(owner_rows.any(1), np.argmax(owner_rows, 1), -1)
    passes = np.rint(v["passes"][:, 0].astype(np.float64) * (players - 1)).astype(np.int64)
    out = np.zeros((len(rows), len(FEATURE_ORDER)))
    features_kernel(
        np.ascontiguousarray(hand),
        np.ascontiguousarray(table),
        others,
        sizes,
        v["penalty"].astype(np.float64),
        players,
        np.argmax(v["phase"], 1),
        owner,
        passes,
        rows.astype(np.int64),
        actions.astype(np.int64),
        out,
    )
    return out


__all__ = ["FEATURE_ORDER", "batch_features", "features_kernel"]
