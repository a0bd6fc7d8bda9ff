"""Every player of the lab by name: ``make(spec)`` and ``make_batch_agent(spec)``.

Specs: ``random``; a hand-written agent (``greedy``, ``shaper``, ``planner``:
:data:`agents.heuristics.HEURISTICS`); ``ppo`` (the bundled models, one per table size that has
one: :class:`agents.ppo.BundledPPO`) or ``ppo:PATH`` (a model file); ``search``
(:class:`agents.search.SearchAgent`), ``search:N`` (``N`` playouts per decision) or
``search:Nms`` (``N`` milliseconds per decision). Batched forms (one call for a whole batch of
games, :mod:`agents.batch`) exist for every agent but ``search``; :func:`has_batch_form` says which.
"""

from __future__ import annotations

from agents.base import Agent, RandomAgent
from agents.batch import BatchAgent, BatchRandomAgent
from agents.batched_heuristics import BATCH_HEURISTICS
from agents.heuristics import HEURISTICS
from agents.ppo import BundledPPO, PPOAgent
from agents.search import SearchAgent


def batch_form_names() -> list[str]:
    """The specs with a batched form (``act_batch``), by name (``ppo`` also with a path)."""
    return ["random", *BATCH_HEURISTICS, "ppo"]


def agent_names() -> list[str]:
    """Every spec ``make`` accepts without a path."""
    return ["random", *HEURISTICS, "ppo", "search"]


def check_spec(spec: str) -> None:
    """``ValueError`` for a spec :func:`make` would refuse by its name (a model file named by
    ``ppo:PATH`` is only read by ``make``)."""
    if not isinstance(spec, str):
        raise ValueError(f"an agent spec is a string; got {spec!r}")
    name, _, path = spec.partition(":")
    if name == "ppo" or (name in agent_names() and not path):
        return
    if name == "search" and _search_budget(path):
        return
    raise ValueError(
        f"unknown agent spec {spec!r}: allowed are {', '.join(agent_names())}, ppo:PATH, "
        "search:N (N >= 1 playouts per decision), search:Nms (N >= 1 ms per decision)"
    )


def _search_budget(text: str) -> dict[str, int] | None:
    """The keyword of a ``search:`` budget (``"300"``: rollouts, ``"50ms"``: ms), else None."""
    number, ms = (text[:-2], True) if text.endswith("ms") else (text, False)
    if not number.isdigit() or int(number) < 1:
        return None
    return {"ms" if ms else "rollouts": int(number)}


def make(spec: str, seed: int | None = None) -> Agent:
    """Build an agent from a spec string (see the module docstring); ``ValueError`` if unknown."""
    check_spec(spec)
    name, _, path = spec.partition(":")
    if name == "random":
        return RandomAgent(seed)
    if name == "ppo":
        return PPOAgent.load(path, seed=seed) if path else BundledPPO(seed)
    if name == "search":
        return SearchAgent(seed, **(_search_budget(path) if path else {}))
    return HEURISTICS[name](seed=seed)


def has_batch_form(spec: str) -> bool:
    """Whether :func:`make_batch_agent` accepts ``spec`` (``ValueError`` if it is unknown)."""
    check_spec(spec)
    return spec == "random" or spec in BATCH_HEURISTICS or spec.partition(":")[0] == "ppo"


def make_batch_agent(spec: str, seed: int | None = None) -> BatchAgent:
    """The batched agent of a spec: ``random`` -> :class:`agents.batch.BatchRandomAgent`, a
    heuristic -> its numba form (:data:`agents.batched_heuristics.BATCH_HEURISTICS`),
    ``ppo``/``ppo:PATH`` -> the PPO player (it has ``act_batch``); ``ValueError`` for an agent
    without a batched form or an unknown spec."""
    if not has_batch_form(spec):
        raise ValueError(
            f"agent {spec!r} has no batched form (act_batch): batched agents are "
            f"{', '.join(batch_form_names())}"
        )
    if spec == "random":
        return BatchRandomAgent(seed)
    if spec in BATCH_HEURISTICS:
        return BATCH_HEURISTICS[spec](seed)
    return make(spec, seed)


__all__ = [
    "agent_names",
    "batch_form_names",
    "check_spec",
    "has_batch_form",
    "make",
    "make_batch_agent",
]
