"""The players of odin-lab, behind one interface that sees only the observation.

- :mod:`agents.base`: the ``Agent`` protocol and the random agent;
- :mod:`agents.hand` and :mod:`agents.heuristics`: hand reading and the hand-written agents
  (each one numba kernel, :mod:`agents.batched_shaper` and :mod:`agents.batched_planner`);
- :mod:`agents.batch`: the batched interface;
- :mod:`agents.model_file` (checked by :mod:`agents.model_check`): reading the lab's model files;
- :mod:`agents.features`: the action features every network reads;
- :mod:`agents.ppo`, :mod:`agents.dmc`, :mod:`agents.linear`: the players of trained networks;
- :mod:`agents.search`: the search player;
- :mod:`agents.registry`: ``make(spec)``, every player by name;
- :mod:`agents.outside`: your own agents by spec (``module:Name``, ``path/to/file.py:Name``,
  an installed package's entry point), for ``make``.

This package imports only :mod:`odin_env` (and numpy): no training code, no plotting, no file
writing (:mod:`odin_lab.files` writes model files; :mod:`agents.model_file` reads them).
"""

from agents.base import Agent, RandomAgent
from agents.registry import agent_names, make

__all__ = ["Agent", "RandomAgent", "agent_names", "make"]
