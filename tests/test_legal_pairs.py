"""The batch readers of legal actions in ``agents.base``: :func:`legal_pairs` lists exactly what
``np.nonzero`` lists, in its order, and :func:`argmax_by_row` picks each row's best, the lowest
action on a tie, as ``argmax`` over the full matrix does."""

from __future__ import annotations

import numpy as np
import pytest

from agents.base import argmax_by_row, legal_pairs
from odin_env.batched import BatchedGames
from odin_env.rules import NUM_ACTIONS, Config


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.bool_, np.int32, np.float32])
def test_legal_pairs_lists_what_nonzero_lists_in_its_order(dtype) -> None:
    rng = np.random.default_rng(3)
    masks = (rng.random((37, NUM_ACTIONS)) < 0.01).astype(dtype)
    masks[5] = 0  # a row with nothing legal lists nothing
    rows, actions = legal_pairs(masks)
    expected = np.nonzero(masks)
    assert np.array_equal(rows, expected[0]) and np.array_equal(actions, expected[1])
    one_rows, one_actions = legal_pairs(masks[:1])
    assert np.array_equal(one_actions, np.flatnonzero(masks[0]))
    assert not one_rows.any()


def test_legal_pairs_of_real_masks_and_argmax_by_row_against_the_full_argmax() -> None:
    games = BatchedGames(Config(players=4), 64, seed=11)
    rng = np.random.default_rng(11)
    for _ in range(30):
        rows, actions = legal_pairs(games.mask)
        assert np.array_equal(np.c_[rows, actions], np.argwhere(games.mask))
        # Scores with many ties (a few distinct values): the lowest tied action must win.
        scores = rng.integers(0, 3, size=rows.size).astype(np.float32)
        full = np.full(games.mask.shape, -np.inf, np.float32)
        full[rows, actions] = scores
        assert np.array_equal(argmax_by_row(rows, actions, scores), full.argmax(1))
        games.step(argmax_by_row(rows, actions, rng.random(rows.size)))
