"""odin-lab's Odin: an exact rules engine (:mod:`odin_env.rules`) and a PettingZoo AEC env."""

from odin_env.env import env, raw_env
from odin_env.rules import NUM_ACTIONS, Config, Game

__all__ = ["env", "raw_env", "Config", "Game", "NUM_ACTIONS"]
