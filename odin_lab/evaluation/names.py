"""Agents' display names: how every text table, CSV, figure and told game names an agent.

A spec that names a file shows as the file's stem: ``ppo:runs/a/best.safetensors`` as ``best``
(a ``dmc:`` or ``linear:`` model file too), ``path/to/my_agent.py:Bot`` as ``my_agent:Bot``.
When two different specs would show the same, each gets its parent folders, one at a time, until
they differ (``a/best``, ``b/best``), and at the end the whole spec. Every other spec shows
whole. In a tournament's agent list a repeated spec is one more agent: :func:`labels` numbers
its repeats ``#2``, ``#3``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import PurePath

from agents.outside import is_file_spec
from agents.registry import MODEL_KINDS


def _candidates(spec: str) -> list[str]:
    """The names ``spec`` may show as, shortest first; the last is the spec itself."""
    kind, _, rest = spec.partition(":")
    if kind in MODEL_KINDS and rest:
        path, attribute = PurePath(rest), ""
    elif ":" in spec and is_file_spec(spec):
        where, _, name = spec.rpartition(":")
        path, attribute = PurePath(where), f":{name}"
    else:
        return [spec]
    folders = [part for part in path.parent.parts if part not in (path.anchor, ".")]
    shown = [
        "/".join([*folders[len(folders) - k :], path.stem]) + attribute
        for k in range(len(folders) + 1)
    ]
    return [*dict.fromkeys(shown), spec]


def short_names(specs: Sequence[str]) -> list[str]:
    """Each spec's display name (see the module docstring); equal specs get equal names."""
    candidates = [_candidates(spec) for spec in specs]
    level = [0] * len(specs)
    while True:
        by_name: dict[str, set[str]] = defaultdict(set)
        for spec, names, k in zip(specs, candidates, level):
            by_name[names[k]].add(spec)
        clashes = [
            i
            for i, (names, k) in enumerate(zip(candidates, level))
            if len(by_name[names[k]]) > 1 and k + 1 < len(names)
        ]
        if not clashes:
            return [names[k] for names, k in zip(candidates, level)]
        for i in clashes:
            level[i] += 1


def labels(specs: Sequence[str]) -> list[str]:
    """Display names of a tournament's agents: :func:`short_names`, with ``#2``, ``#3`` on a
    repeated spec."""
    seen: dict[str, int] = {}
    out = []
    for spec, name in zip(specs, short_names(specs)):
        seen[spec] = seen.get(spec, 0) + 1
        out.append(name if seen[spec] == 1 else f"{name}#{seen[spec]}")
    return out


__all__ = ["labels", "short_names"]
