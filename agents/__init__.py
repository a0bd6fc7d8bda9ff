"""Agents for odin-lab: one interface (:mod:`agents.base`), random, heuristics and PPO."""

from agents.base import Agent, RandomAgent, make

__all__ = ["Agent", "RandomAgent", "make"]
