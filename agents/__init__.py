"""The players of odin-lab, behind one interface that sees only the observation.

- :mod:`agents.base`: the ``Agent`` protocol and the random agent;
- :mod:`agents.hand` and :mod:`agents.heuristics`: hand reading and the hand-written agents
  (each one numba kernel, :mod:`agents.batched_shaper` and :mod:`agents.batched_planner`);
- :mod:`agents.batch`: the batched interface;
- :mod:`agents.ppo`: the trained-policy player and its model files;
- :mod:`agents.registry`: ``make(spec)``, every player by name.
- :mod:`agents.outside`: your own agents by spec (``module:Name``, ``path/to/file.py:Name``,
  an installed package's entry point), for ``make``.

This package imports only :mod:`odin_env` (and numpy): no training code, no plotting.
"""

from agents.base import Agent, RandomAgent
from agents.registry import agent_names, make

__all__ = ["Agent", "RandomAgent", "agent_names", "make"]
