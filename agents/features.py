"""The action features every network of the lab reads: what each action does, in terms shared
between actions, so that what a network learns about one action carries over to its like.

:data:`ACTION_FEATURES` holds one row per action (3634 x 124, docs/model-format.md): the cards
played, the card taken, the combo's size, the kind of action (pass, take, play), the combo's type
(same colour, same value) and its highest and lowest values. The PPO player folds them into its
output layer at load (:class:`agents.ppo.NumpyPolicy`); the DMC network reads an action as its
row (:class:`agents.dmc.DMCAgent`).
"""

from __future__ import annotations

import numpy as np

from odin_env.cards import NUM_CARDS, NUM_VALUES
from odin_env.combos import COMBO_CARDS, COMBO_MASKS, NUM_COMBOS
from odin_env.rules import NUM_ACTIONS, PASS, TAKE


def _action_features() -> np.ndarray:
    """``(3634, F)``: what each action does (see :data:`ACTION_FEATURES`)."""
    size_at = 2 * NUM_CARDS
    kind_at = size_at + NUM_VALUES
    table = np.zeros((NUM_ACTIONS, kind_at + 7), dtype=np.float32)
    table[:NUM_COMBOS, :NUM_CARDS] = COMBO_MASKS
    for i, cards in enumerate(COMBO_CARDS):
        values = [c % NUM_VALUES + 1 for c in cards]
        table[i, size_at + len(cards) - 1] = 1.0
        table[i, kind_at + 2] = 1.0
        if len(cards) > 1:
            table[i, kind_at + (3 if len({c // NUM_VALUES for c in cards}) == 1 else 4)] = 1.0
        table[i, kind_at + 5] = max(values) / NUM_VALUES
        table[i, kind_at + 6] = min(values) / NUM_VALUES
    table[PASS, kind_at] = 1.0
    for card in range(NUM_CARDS):
        table[TAKE + card, NUM_CARDS + card] = 1.0
        table[TAKE + card, kind_at + 1] = 1.0
    table.flags.writeable = False
    return table


ACTION_FEATURES = _action_features()
"""Per action: 54 cards played, 54 card taken, 9 size one-hot, pass, take, play, same colour,
same value, highest and lowest value / 9."""
NUM_ACTION_FEATURES = ACTION_FEATURES.shape[1]


__all__ = ["ACTION_FEATURES", "NUM_ACTION_FEATURES"]
