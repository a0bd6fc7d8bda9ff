"""The win chance of a position, a rule of scoring: each seat's chance to win the game from the
penalty totals a hand leaves. Exact once a total reaches the threshold (R14: the game is over and
the lowest totals share the win); before that a smooth estimate, set by hand (the lab's findings
measure it: ``benchmarks/win_chance.py``). The search ranks its candidates by it, and training
may learn it; every layer may use it."""

from __future__ import annotations

import numpy as np


def win_chance(totals: np.ndarray, threshold: int) -> np.ndarray:
    """Each seat's estimated chance to win from penalty ``totals`` ``(..., players)`` after a
    hand: exact shares when a total has reached ``threshold`` (the game is over: the lowest
    totals share the win), else a softmax of ``-total / spread``, where the spread grows with
    the hands left to play (the more hands, the more a lead can still change)."""
    totals = np.asarray(totals, dtype=np.float64)
    over = totals.max(axis=-1, keepdims=True) >= threshold
    lowest = totals == totals.min(axis=-1, keepdims=True)
    exact = lowest / lowest.sum(axis=-1, keepdims=True)
    room = np.maximum(threshold - totals.max(axis=-1, keepdims=True), 1.0)
    spread = 2.0 * np.sqrt(1.0 + room / 4.0)
    logits = -(totals - totals.min(axis=-1, keepdims=True)) / spread
    soft = np.exp(logits)
    soft /= soft.sum(axis=-1, keepdims=True)
    return np.where(over, exact, soft)


__all__ = ["win_chance"]
