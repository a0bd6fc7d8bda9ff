"""Which tables a leaderboard plays (:mod:`odin_lab.evaluation.leaderboard`): its settings
checked before any game, and every combination of ``players`` distinct agents, or a seeded
balanced sample of them."""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from odin_env.seeding import spawn_seed

MAX_TABLES = 64
"""Most tables a leaderboard plays by default: with more combinations, a balanced sample."""
MAX_COMBINATIONS = 1_000_000
"""Most combinations the sampler enumerates (``C(agents, players)``)."""
SAMPLE_STREAM = (0x7AB1E5, 0)
"""Spawn key of the table sample's generator under the leaderboard's seed (no deal's key)."""


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 40 else f"{text[:20]}... ({len(text)} characters)"


def check(specs: Sequence[str], players: int, most: int | None = None) -> None:
    """``ValueError`` (one line, naming the problem and what is allowed) for a leaderboard that
    cannot be planned: repeated agents, fewer agents than seats, too few tables to seat every
    agent, or too many agents to enumerate their tables."""
    repeated = sorted({s for s in specs if list(specs).count(s) > 1})
    if repeated:
        raise ValueError(
            f"every agent must be distinct (a table seats distinct agents); repeated: "
            f"{', '.join(repeated)}"
        )
    if len(specs) < players:
        raise ValueError(
            f"{len(specs)} agents for tables of {players} players (fewer agents than players): "
            f"give at least {players} agents, or fewer --players"
        )
    least = -(-len(specs) // players)
    if most is not None and (
        isinstance(most, bool) or not isinstance(most, int) or not least <= most <= MAX_COMBINATIONS
    ):
        raise ValueError(
            f"--tables must be an integer {least}-{MAX_COMBINATIONS:,} (at least enough tables "
            f"of {players} to seat all {len(specs)} agents); got {_short(most)}"
        )
    if math.comb(len(specs), players) > MAX_COMBINATIONS:
        raise ValueError(
            f"{len(specs)} agents make {math.comb(len(specs), players):,} tables of {players}: "
            f"at most {MAX_COMBINATIONS:,} are allowed; give fewer agents"
        )


def plan_tables(
    agents: int, players: int, most: int | None = None, seed: int = 0
) -> tuple[list[tuple[int, ...]], str]:
    """The tables (tuples of agent indices, ascending) and a phrase saying how they were chosen:
    all combinations when there are at most ``most`` (default :data:`MAX_TABLES`), else a
    seeded balanced sample of ``most`` (see the module docstring)."""
    most = MAX_TABLES if most is None else most
    total = math.comb(agents, players)
    if total <= most:
        return list(itertools.combinations(range(agents), players)), f"all {total} combinations"
    combos = np.array(list(itertools.combinations(range(agents), players)), dtype=np.int64)
    order = np.random.default_rng(spawn_seed(seed, *SAMPLE_STREAM)).permutation(len(combos))
    used = np.zeros(len(combos), dtype=bool)
    seats = np.zeros(agents, dtype=np.int64)
    met = np.zeros((agents, agents), dtype=np.int64)
    pairs = list(itertools.combinations(range(players), 2))
    chosen = []
    for _ in range(most):
        load = seats[combos].sum(axis=1)
        together = sum(met[combos[:, i], combos[:, j]] for i, j in pairs)
        pick = int(np.lexsort((order, together, load, used))[0])  # last key sorts first
        table = combos[pick]
        used[pick] = True
        seats[table] += 1
        for i, j in pairs:
            met[table[i], table[j]] += 1
            met[table[j], table[i]] += 1
        chosen.append(tuple(int(a) for a in table))
    return sorted(chosen), f"a seeded balanced sample of {most} of the {total} combinations"


__all__ = ["MAX_COMBINATIONS", "MAX_TABLES", "SAMPLE_STREAM", "check", "plan_tables"]
