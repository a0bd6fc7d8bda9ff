"""The one agent interface of the lab, and ``make(spec)`` to build any agent from a string.

An agent sees what a player at the table sees: the observation vector of
:mod:`odin_env.observation` (read through ``observation.views``) and the legal-action mask.
It never sees the game's hidden state.

Specs: ``random``; a heuristic name (``agents.heuristics.HEURISTICS``); ``ppo`` (the bundled
model) or ``ppo:PATH`` (a trained checkpoint; loading unpickles it, so load trusted files only).
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Agent(Protocol):
    """Anything with a name that picks a legal action from an observation and a mask."""

    name: str

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...


def legal_actions(action_mask: np.ndarray) -> np.ndarray:
    """The indices of the legal actions, ascending."""
    # nonzero on a bool view is several times faster than on int8 for a 3,634-entry mask.
    return np.asarray(action_mask).view(np.bool_).nonzero()[0]


class RandomAgent:
    """Uniform over the legal actions."""

    def __init__(self, seed: int | None = None):
        self.name = "random"
        self.rng = np.random.default_rng(seed)

    def reset(self, seat: int, seed: int | None = None) -> None:
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        legal = legal_actions(action_mask)
        if legal.size == 0:
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        return int(legal[self.rng.integers(legal.size)])


def agent_names() -> list[str]:
    """Every spec ``make`` accepts without a path."""
    from agents.heuristics import HEURISTICS

    return ["random", *HEURISTICS, "ppo"]


def make(spec: str, seed: int | None = None) -> Agent:
    """Build an agent from a spec string (see the module docstring); ``ValueError`` if unknown."""
    name, _, path = spec.partition(":")
    if name == "random" and not path:
        return RandomAgent(seed)
    if name == "ppo":
        from agents.ppo import PPOAgent

        return PPOAgent.load(path or None)
    from agents.heuristics import HEURISTICS

    if name in HEURISTICS and not path:
        return HEURISTICS[name](seed=seed)
    raise ValueError(
        f"unknown agent spec {spec!r}: allowed are {', '.join(agent_names())}, ppo:PATH"
    )
