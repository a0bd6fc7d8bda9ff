"""odin-lab's Odin: an exact rules engine (:mod:`odin_env.rules`) and a PettingZoo AEC env.

``env`` and ``raw_env`` load PettingZoo on first use, so the engine modules (rules, batched)
import without it.
"""

from typing import Any

from odin_env.rules import NUM_ACTIONS, Config, Game

__all__ = ["env", "raw_env", "Config", "Game", "NUM_ACTIONS"]


def __getattr__(name: str) -> Any:
    if name in ("env", "raw_env"):
        import odin_env.env as env_module

        # Importing the submodule binds ``odin_env.env`` to it; rebind both names to the
        # factory and the class, as an eager ``from odin_env.env import env`` would.
        globals().update(env=env_module.env, raw_env=env_module.raw_env)
        return globals()[name]
    raise AttributeError(f"module 'odin_env' has no attribute {name!r}")
