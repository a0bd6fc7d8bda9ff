"""Numba kernels of the batched engine that step, deal and show whole batches
(:mod:`odin_env.batched` calls them); private, no public API.

They build on the rules of :mod:`odin_env._batched_kernels` (the state's layout, ``_decide``,
``_apply``) and add what a batch needs: the observation of the acting seat (``_show`` is
``observation.observe`` plus ``legal_mask``), one step of every game, the deals. The kernels
index 2-D arrays element by element (``obs[i, j]``) rather than taking row views: a view is a new
array object with reference counting, which costs more than the work here.

numba's disk cache keys a compiled kernel by its own file only: the rules it inlines from
:mod:`odin_env._batched_kernels` are not part of the key. After editing that file, delete
``odin_env/__pycache__/*.nb[ic]`` (or touch this one), or these kernels keep the old rules.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from odin_env._batched_kernels import (
    C_AUTO_FORCED,
    C_GOAT,
    C_PLAYERS,
    C_THRESHOLD,
    DEAL,
    DISCARD,
    DRAW,
    HAND_LEADER,
    HANDS_PLAYED,
    NEXT_LEADER,
    NLEGAL,
    O_DISCARD,
    O_HAND,
    O_HAND_SIZE,
    O_KNOWN,
    O_PASSES,
    O_PENALTY,
    O_PHASE,
    O_TABLE,
    O_TABLE_OWNER,
    O_TAKE,
    OWNER,
    PASSES,
    PHASE,
    SET_ASIDE,
    TABLE,
    TAKE_FROM,
    _apply,
    _decide,
    _popcount,
)
from odin_env.cards import GOAT, MAX_HAND, NUM_CARDS
from odin_env.observation import GOAT_FIELD_SIZE, OBS_SIZE
from odin_env.rules import LEAD


@njit(cache=True, inline="always")
def _pairs(obs):
    """``obs`` seen as pairs of float32 (``uint64``) for the planes' writes; a Goat game's rows
    are odd (its 11 entries more), so its planes are written card by card and this is a stand-in
    of one entry."""
    if obs.shape[1] % 2 == 0:
        return obs.view(np.uint64)
    return np.zeros((1, 1), dtype=np.uint64)


@njit(cache=True, inline="always")
def _write_bits(obs, obs64, i, plane, start, cards, shown, unpack):
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
    if obs64.shape[1] == 1:  # a Goat game's odd rows (_pairs)
        _write_plain(obs, i, start, cards, diff)
        return
    first = start // 2
    for byte in range(NUM_CARDS // 8 + 1):
        if (diff >> (8 * byte)) & 255:
            x = (cards >> (8 * byte)) & 255
            for j in range(min(4, (NUM_CARDS - 8 * byte) // 2)):
                obs64[i, first + 4 * byte + j] = unpack[x, j]


@njit(cache=True)
def _show_goat(i, n, seat, table, st, hands, known, obs, bits):
    """The ``goat`` field of game ``i``'s observation (``observation._goat_place``: where the
    seat sees the Goat, which the planes cannot show). A call of its own, not inlined: the
    games without the Goat keep a small step loop."""
    seen = 0
    for k in range(4 + n):
        if k == 0:
            cards = hands[i, seat]
        elif k == 1:
            cards = bits[table] if table >= 0 else 0
        else:
            cards = st[i, TAKE_FROM] if k == 2 else st[i, DISCARD]
            if k >= 4:
                cards = known[i, (seat + k - 4) % n]
        here = (cards >> GOAT) & 1
        obs[i, OBS_SIZE + k] = float(here)
        seen |= here
    obs[i, OBS_SIZE + GOAT_FIELD_SIZE - 1] = 0.0 if seen else 1.0


@njit(cache=True)
def _write_plain(obs, i, start, cards, diff):
    """A plane of a Goat game's odd rows, card by card (see :func:`_pairs`)."""
    for c in range(NUM_CARDS):
        if (diff >> c) & 1:
            obs[i, start + c] = float((cards >> c) & 1)


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
    _write_bits(obs, obs64, i, 0, off[O_HAND], hands[i, seat], shown, unpack)
    _write_bits(obs, obs64, i, 1, off[O_TABLE], bits[table] if table >= 0 else 0, shown, unpack)
    _write_bits(obs, obs64, i, 2, off[O_TAKE], st[i, TAKE_FROM], shown, unpack)
    _write_bits(obs, obs64, i, 3, off[O_DISCARD], st[i, DISCARD], shown, unpack)
    owner = st[i, OWNER] if phase != LEAD else -1
    threshold = cfg[C_THRESHOLD]
    cap = threshold + MAX_HAND - 1  # observation.penalty_cap: games never pass it
    for k in range(n):
        s = (seat + k) % n
        _write_bits(obs, obs64, i, 4 + k, off[O_KNOWN] + NUM_CARDS * k, known[i, s], shown, unpack)
        obs[i, off[O_HAND_SIZE] + k] = _popcount(hands[i, s]) / 9.0
        obs[i, off[O_PENALTY] + k] = min(totals[i, s], cap) / threshold
        obs[i, off[O_TABLE_OWNER] + k] = 1.0 if s == owner else 0.0
    for k in range(3):
        obs[i, off[O_PHASE] + k] = 1.0 if k == phase else 0.0
    obs[i, off[O_PASSES]] = st[i, PASSES] / (n - 1)
    if cfg[C_GOAT]:
        _show_goat(i, n, seat, table, st, hands, known, obs, tables[0])


@njit(cache=True)
def find_illegal(actions, st, legal):
    """The first game whose action is not legal, or -1: checked before anything changes. A game
    waiting for a deal (held: ``BatchedGames(next_hand=False)``) takes any action."""
    for i in range(actions.shape[0]):
        if st[i, DEAL] != 0:
            continue
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
def _step_one(
    i,
    action,
    cfg,
    off,
    st,
    cur,
    hands,
    known,
    totals,
    legal,
    mask,
    obs,
    obs64,
    shown,
    rewards,
    done,
    hand_end,
    penalties,
    final_totals,
    winners,
    final_hands,
    tables,
):
    """Game ``i``'s step: its (already checked) action then, with auto_forced, the one-option
    decisions after it; shows the next decision, or returns True when a deal is due first.
    ``_clear_outs`` has cleared the per-step outputs."""
    for k in range(st[i, NLEGAL]):
        mask[i, legal[i, k]] = 0
    while True:
        _apply(
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
        )
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
def step_games(
    actions,
    cfg,
    off,
    st,
    cur,
    hands,
    known,
    totals,
    legal,
    mask,
    obs,
    shown,
    rewards,
    done,
    hand_end,
    penalties,
    final_totals,
    winners,
    final_hands,
    waiting,
    tables,
):
    """Step every game (``_step_one``) but those already waiting for a deal (held: they are
    left as they are); returns how many now wait for a deal (listed first in ``waiting``)."""
    obs64 = _pairs(obs)
    _clear_outs(rewards, done, hand_end)
    count = 0
    for i in range(actions.shape[0]):
        if st[i, DEAL] != 0:
            continue
        if _step_one(
            i,
            actions[i],
            cfg,
            off,
            st,
            cur,
            hands,
            known,
            totals,
            legal,
            mask,
            obs,
            obs64,
            shown,
            rewards,
            done,
            hand_end,
            penalties,
            final_totals,
            winners,
            final_hands,
            tables,
        ):
            waiting[count] = i
            count += 1
    return count


@njit(cache=True, parallel=True)
def step_games_parallel(
    actions,
    cfg,
    off,
    st,
    cur,
    hands,
    known,
    totals,
    legal,
    mask,
    obs,
    shown,
    rewards,
    done,
    hand_end,
    penalties,
    final_totals,
    winners,
    final_hands,
    waiting,
    tables,
):
    """``step_games`` with the games shared among numba's threads (games are independent).

    The outputs are separate arguments rather than one tuple of arrays: with a tuple, numba
    0.68's parallel loop silently dropped some element writes (``done``, ``final_hands``).
    """
    obs64 = _pairs(obs)
    _clear_outs(rewards, done, hand_end)
    for i in prange(actions.shape[0]):
        if st[i, DEAL] != 0:
            continue
        _step_one(
            i,
            actions[i],
            cfg,
            off,
            st,
            cur,
            hands,
            known,
            totals,
            legal,
            mask,
            obs,
            obs64,
            shown,
            rewards,
            done,
            hand_end,
            penalties,
            final_totals,
            winners,
            final_hands,
            tables,
        )
    count = 0
    for i in range(actions.shape[0]):
        if st[i, DEAL] != 0:
            waiting[count] = i
            count += 1
    return count


@njit(cache=True)
def deal_games(
    slots, orders, leaders, cfg, off, st, cur, hands, known, totals, legal, mask, obs, shown, tables
):
    """``Game._deal`` for each waiting game ``slots[k]`` with the shuffle ``orders[k]`` and,
    when drawn, the leader ``leaders[k]``.

    A fresh hand opens with a lead from 9 cards, never a forced decision, so no forced play
    follows a deal (``play_forced`` would apply nothing).
    """
    n = cfg[C_PLAYERS]
    obs64 = _pairs(obs)
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
    obs64 = _pairs(obs)
    for i in slots:
        _decide(i, st, cur, hands, legal, tables)
        _show(i, cfg, off, st, cur, hands, known, totals, legal, mask, obs, obs64, shown, tables)
