"""Native batched forms of the hand-written agents (:mod:`agents.heuristics`), for training and
tournaments on :class:`odin_env.batched.BatchedGames` without one Python call per game.

``BatchGreedyAgent`` is ``greedy`` vectorised with numpy over the rows of a batch: for every row
it returns exactly the action :class:`agents.heuristics.Greedy` returns for that row's
observation and mask (the differential test in ``tests/test_batched_heuristics.py`` checks it
decision by decision). It decodes what :func:`agents.hand.see` decodes, for all rows at once:

- the hand: the ``hand`` plane of the observation (``> 0.5``, as ``card_sets`` reads it), as a
  ``(B, 54)`` boolean matrix;
- the legal actions: the mask's non-zero entries (as ``see`` reads them);
- taking (any take legal): the card maximising ``(joins(hand, card), value)``, first card id on
  a tie, where ``joins`` comes from the hand's card counts per colour and per value;
- no legal play: pass;
- otherwise the whole hand when it is a legal play, else the legal play of the most cards with
  the lowest combo index (canonical order sorts by size, then number). The whole-hand rule is
  implied by the other whenever the legal plays come from the hand (the whole hand is then the
  only play of its size); it is kept so that the two agree on any mask.

``BATCH_HEURISTICS`` maps the spec names with a native batched form to their classes
(:func:`agents.registry.make_batch_agent` builds them).
"""

from __future__ import annotations

import numpy as np

from agents.batch import check_batch
from agents.batched_planner import BatchPlannerAgent
from agents.batched_shaper import BatchShaperAgent
from agents.hand import VALUE_OF
from odin_env.cards import NUM_CARDS, NUM_COLOURS, NUM_VALUES
from odin_env.combos import COMBO_BITS, NUM_COMBOS, SIZE_START
from odin_env.observation import LAYOUT
from odin_env.rules import NUM_ACTIONS, PASS, TAKE

_HAND = LAYOUT["hand"][0]
_CARDS = np.arange(NUM_CARDS)
_COLOUR = _CARDS // NUM_VALUES
_VALUE_INDEX = _CARDS % NUM_VALUES
_VALUE = np.array(VALUE_OF, dtype=np.int64)
_TIE_SCALE = 16
"""Take key ``joins * 16 + value``: values are 1-9, so ordering the key orders
``(joins, value)``."""
_SIZE_STARTS = SIZE_START[1:-1].astype(np.intp)
_SIZE_STOPS = SIZE_START[2:].astype(np.intp)
"""Each play size 1-9 is the block ``_SIZE_STARTS[s - 1]:_SIZE_STOPS[s - 1]`` of the canonical
order."""
_SORTED_BITS = np.array(sorted(COMBO_BITS), dtype=np.uint64)
_INDEX_OF_SORTED = np.array(sorted(range(NUM_COMBOS), key=lambda i: COMBO_BITS[i]), dtype=np.int64)
"""Combo index of each entry of ``_SORTED_BITS``: a card set's combo by binary search."""


def _card_set_ints(hand: np.ndarray) -> np.ndarray:
    """The 54-bit card-set ints (``uint64``) of a ``(R, 54)`` boolean matrix of hands."""
    packed = np.zeros((hand.shape[0], 8), dtype=np.uint8)
    packed[:, :7] = np.packbits(hand, axis=1, bitorder="little")
    return packed.view("<u8").ravel()


class BatchGreedyAgent:
    """``greedy`` (:class:`agents.heuristics.Greedy`) for a whole batch at once, row for row
    the same action; deterministic, ``seed`` is accepted for the common signature.

    It keeps a scratch buffer between calls, so one instance must not serve two threads at
    once."""

    name = "greedy"

    def __init__(self, seed: int | None = None):
        self.seed = seed
        # Reused from call to call, grown to the largest batch seen (``act_by_seat`` hands it
        # a different number of rows at each step): a fresh (B, 3634) array every call costs
        # more in page faults than the work done on it.
        self._legal = np.zeros((0, NUM_ACTIONS), dtype=np.bool_)

    def reset(self, seat: int = 0, seed: int | None = None) -> None:
        """Nothing to reset: greedy keeps no state and draws nothing."""

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Greedy's action for each row: ``obs`` ``(B, OBS_SIZE)``, ``mask`` ``(B, 3634)``
        -> int64 ``(B,)`` (a fresh array). A row with no legal action gets ``PASS``, as
        ``Greedy.act`` gives it."""
        check_batch(obs, mask)
        batch = obs.shape[0]
        if self._legal.shape[0] < batch:
            self._legal = np.zeros((batch, NUM_ACTIONS), dtype=np.bool_)
        legal = self._legal[:batch]
        np.not_equal(mask, 0, out=legal)
        play, has_play = _largest_first_play(legal)
        actions = np.where(has_play, play, PASS)
        hand = obs[:, _HAND] > 0.5
        whole, has_whole = _whole_hand_play(hand, legal)
        actions[has_whole] = whole[has_whole]
        takes = legal[:, TAKE:]
        rows = np.flatnonzero(takes.any(axis=1))
        if rows.size:
            actions[rows] = TAKE + _best_take(hand[rows], takes[rows])
        return actions


def _largest_first_play(legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a legal matrix ``(B, 3634)``: the first legal play of the largest size with
    a legal play (canonical order sorts by size, then number), and whether there is one."""
    first = np.empty((legal.shape[0], len(_SIZE_STARTS)), dtype=np.intp)
    # argmax on each size block finds its first legal play (0 when it has none: checked next).
    for block, (start, stop) in enumerate(zip(_SIZE_STARTS, _SIZE_STOPS)):
        first[:, block] = legal[:, start:stop].argmax(axis=1)
    first += _SIZE_STARTS
    rows = np.arange(legal.shape[0])
    found = legal[rows[:, None], first]
    top = found.shape[1] - 1 - found[:, ::-1].argmax(axis=1)
    return first[rows, top], found.any(axis=1)


def _whole_hand_play(hand: np.ndarray, legal: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the combo index of the whole hand, and whether that is a legal play (an empty
    hand or one that is no combo never is)."""
    bits = _card_set_ints(hand)
    at = np.minimum(np.searchsorted(_SORTED_BITS, bits), NUM_COMBOS - 1)
    whole = _INDEX_OF_SORTED[at]
    return whole, (_SORTED_BITS[at] == bits) & legal[np.arange(legal.shape[0]), whole]


def _best_take(hand: np.ndarray, takes: np.ndarray) -> np.ndarray:
    """The card to take per row: the most ``joins`` with the hand (:func:`agents.hand.joins`),
    then the highest value, then the lowest card id (the first maximum, as ``max`` keeps)."""
    grid = hand.reshape(-1, NUM_COLOURS, NUM_VALUES)
    same_colour = grid.sum(axis=2)
    same_value = grid.sum(axis=1)
    joins = (1 << same_colour)[:, _COLOUR] + (1 << same_value)[:, _VALUE_INDEX] - 1
    key = np.where(takes, joins * _TIE_SCALE + _VALUE, -1)
    return key.argmax(axis=1)


BATCH_HEURISTICS: dict[str, type] = {
    "greedy": BatchGreedyAgent,
    "shaper": BatchShaperAgent,
    "planner": BatchPlannerAgent,
}
"""Heuristic specs with a native batched form, by spec name."""

__all__ = ["BATCH_HEURISTICS", "BatchGreedyAgent"]
