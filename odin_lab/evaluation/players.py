"""The agents a tournament seats, built from their specs in the form its engine plays.

The batched engine plays only when every agent has a batched form (:func:`use_batched`, the one
refusal of ``batched`` for agents without one). The single engine seats one agent per seat (a
spec in three seats: three agents, each reset before each game); the batched engine one agent
per distinct spec, serving all its seats (it keeps no per-game state). Either way a built agent
serves any number of games, so while :func:`built_once` holds (a command that checks its agents
and then plays one tournament or many) :func:`seat_agents` builds each agent once in the process
and hands the same one to every later tournament and check.
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

from agents.registry import absolute_spec, batch_form_names, make, make_batch_agent

_kept: dict[tuple[str, bool, int], Any] | None = None
"""The agents built while :func:`built_once` holds, by (absolute spec, batched, copy)."""


def use_batched(engine: str, names: Sequence[str], batchable: Sequence[bool], flag: str) -> bool:
    """Whether ``engine`` (``auto``, ``single`` or ``batched``) means the batched engine for
    agents ``names``; ``ValueError`` naming the setting ``flag`` (``engine``, ``--engine``) when
    it is ``batched`` and some agent has no batched form."""
    if engine == "batched" and not all(batchable):
        single = sorted({name for name, ok in zip(names, batchable) if not ok})
        raise ValueError(
            f"{flag} batched needs agents with a batched form "
            f"(act_batch: {', '.join(batch_form_names())}); "
            f"none for {', '.join(single)}: use {flag} single or auto"
        )
    return engine == "batched" or (engine == "auto" and all(batchable))


def seat_agents(specs: Sequence[str], batched: bool) -> list:
    """One agent per seat of ``specs``: each seat its own (:func:`agents.make`), or batched
    forms (:func:`agents.registry.make_batch_agent`, seed 0), one per distinct spec. While
    :func:`built_once` holds, an agent built before for the same spec, form and copy is
    reused."""
    kept = {} if _kept is None else _kept
    copies: Counter[str] = Counter()
    seated = []
    for spec in specs:
        key = (absolute_spec(spec), batched, 0 if batched else copies[spec])
        copies[spec] += 1
        if key not in kept:
            kept[key] = make_batch_agent(spec, seed=0) if batched else make(spec)
        seated.append(kept[key])
    return seated


@contextlib.contextmanager
def built_once() -> Iterator[None]:
    """In the block, each agent :func:`seat_agents` builds is built once in this process (kept
    until the block ends; nested blocks share the outer one's)."""
    global _kept
    outer = _kept
    _kept = {} if outer is None else outer
    try:
        yield
    finally:
        _kept = outer


def keep_built_agents() -> None:
    """:func:`built_once` for the rest of this process (a worker process that plays many
    tournaments)."""
    global _kept
    if _kept is None:
        _kept = {}


__all__ = ["built_once", "keep_built_agents", "seat_agents", "use_batched"]
