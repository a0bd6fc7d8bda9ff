"""Agents made for tests, not for play."""

from __future__ import annotations

import zlib

import numpy as np

from agents.base import legal_actions


class ObsHash:
    """A deterministic agent: the legal action picked by a CRC-32 of its salt and the
    observation bytes. ``act`` and ``act_batch`` agree row for row, and any difference in what
    the engines show it changes the game."""

    def __init__(self, salt: int):
        self.name = f"hash{salt}"
        self.salt = salt.to_bytes(2, "little")

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_actions(action_mask)
        digest = zlib.crc32(self.salt + np.ascontiguousarray(observation).tobytes())
        return int(legal[digest % legal.size])

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.array([self.act(obs[i], mask[i]) for i in range(obs.shape[0])], dtype=np.int64)
