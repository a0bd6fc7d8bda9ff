"""odin-lab's Odin: an exact rules engine (:mod:`odin_env.rules`), a PettingZoo AEC env
(:mod:`odin_env.env`), a single-agent Gymnasium env (:mod:`odin_env.single_agent`, registered as
``odin_env/Odin-v0``) and a batched engine (:mod:`odin_env.batched`).

This package imports nothing of the lab's from outside itself. ``env`` and ``raw_env`` load
PettingZoo on first use, so the engine modules (rules, batched) import without it.
"""

from typing import Any

import gymnasium

from odin_env.rules import NUM_ACTIONS, Config, Game

__all__ = ["env", "raw_env", "Config", "Game", "NUM_ACTIONS", "GYM_ID"]

GYM_ID = "odin_env/Odin-v0"
"""The single-agent env's Gymnasium id: ``gymnasium.make(GYM_ID, players=4, opponents=...)``."""
if GYM_ID not in gymnasium.registry:
    gymnasium.register(GYM_ID, entry_point="odin_env.single_agent:SingleAgentEnv")


def __getattr__(name: str) -> Any:
    if name in ("env", "raw_env"):
        import odin_env.env as env_module

        # Importing the submodule binds ``odin_env.env`` to it; rebind both names to the
        # factory and the class, as an eager ``from odin_env.env import env`` would.
        globals().update(env=env_module.env, raw_env=env_module.raw_env)
        return globals()[name]
    raise AttributeError(f"module 'odin_env' has no attribute {name!r}")
