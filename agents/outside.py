"""Agents from outside the lab: your own code, named by a spec wherever the lab takes an agent.

=============================  ===============================================================
spec                           what it names
=============================  ===============================================================
``module:Name``                attribute ``Name`` of an importable module (``Name`` may be
                               dotted: ``module:Class.attribute``)
``path/to/file.py:Name``       attribute ``Name`` of a Python file (a path with ``/`` or one
                               ending in ``.py``; a relative path is read from the current
                               folder, see :func:`absolute_spec`)
``NAME``                       an agent an installed package adds through the entry-point
                               group :data:`ENTRY_POINT_GROUP` (``NAME = "module:Name"``)
=============================  ===============================================================

The attribute is an agent, an object with ``act(observation, action_mask) -> int`` (and, where
it has them, ``reset(seat, seed)`` and ``act_batch(obs, mask)``), used as it is; or a factory of
one, a class or function, called with ``seed=`` when it takes that keyword, else with no
arguments. An agent without a ``name`` is named by its spec.

Such a spec runs the user's code, by the user's choice: importing the module (or running the
file) and calling the factory. Nothing else in the lab runs code it reads: model files
(``ppo:PATH``) stay data. A module is imported as Python would, with the current folder last on
``sys.path``; a file is run as a module of its own, with its folder last on ``sys.path`` (so that
modules beside it import). Every failure is a ``ValueError`` of one line: a module or file that
does not import, a missing name, an object without ``act``.

Tournaments rebuild agents from their specs in every worker process (and Ray task), so a spec
must resolve there as here: :func:`absolute_spec` makes a file path absolute before the specs
leave this process, and a module must be importable there (installed, or on ``PYTHONPATH``).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import importlib.util
import inspect
import os
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from agents.base import Agent

ENTRY_POINT_GROUP = "odin_lab.agents"
"""The entry-point group through which an installed package adds agents by name: in its
``pyproject.toml``, ``[project.entry-points."odin_lab.agents"]`` then ``NAME = "module:Name"``."""
FORMS = "module:Name, path/to/file.py:Name"
"""The outside specs, as error messages list them."""


def is_file_spec(spec: str) -> bool:
    """Whether ``spec`` names a file (``path/to/file.py:Name``) rather than a module."""
    where = spec.rpartition(":")[0]
    return where.endswith(".py") or "/" in where or os.sep in where


def absolute_spec(spec: str) -> str:
    """``spec`` with a file's relative path made absolute (read from the current folder); any
    other spec unchanged. Why: a worker of a tournament may run in another folder (Ray's do)."""
    if ":" not in spec or not is_file_spec(spec):
        return spec
    where, _, name = spec.rpartition(":")
    return f"{os.path.abspath(os.path.expanduser(where))}:{name}"


def entry_point_names() -> list[str]:
    """The agent names installed packages add (group :data:`ENTRY_POINT_GROUP`), sorted."""
    return sorted(set(entry_points(group=ENTRY_POINT_GROUP).names))


def find(spec: str) -> Any:
    """The object ``spec`` names (the agent or its factory, not yet called); ``ValueError`` (one
    line) when it cannot be found or is neither an agent nor a factory."""
    if ":" not in spec:
        found = _entry_point(spec)
    else:
        where, _, name = spec.rpartition(":")
        if not name or not all(part.isidentifier() for part in name.split(".")):
            raise ValueError(f"agent {spec!r}: after ':' give a Python name (module:Name)")
        module = _load_file(spec, where) if is_file_spec(spec) else _import(spec, where)
        found = module
        for part in name.split("."):
            if not hasattr(found, part):
                raise ValueError(f"agent {spec!r}: {where} has no attribute {name!r}")
            found = getattr(found, part)
    if not (_has_act(found) or (callable(found) and not inspect.isclass(found))):
        raise ValueError(
            f"agent {spec!r}: {type(found).__name__} {_short(found)} is not an agent: give an "
            "object with act(observation, action_mask), or a class or function that makes one"
        )
    return found


def build(spec: str, seed: int | None = None) -> Agent:
    """The agent of an outside ``spec``: the object itself, or what its factory returns
    (called with ``seed=seed`` when it takes that keyword); ``ValueError`` (one line) on any
    failure."""
    found = find(spec)
    agent = found
    if inspect.isclass(found) or not _has_act(found):
        try:
            agent = found(seed=seed) if _takes_seed(found) else found()
        except Exception as error:  # noqa: BLE001 - the user's code: any failure, said in one line
            raise ValueError(f"agent {spec!r}: making it failed: {_one_line(error)}") from None
        if not _has_act(agent):
            raise ValueError(
                f"agent {spec!r}: its factory returned {type(agent).__name__} "
                f"{_short(agent)}, which has no act(observation, action_mask)"
            )
    if not hasattr(agent, "name"):
        with contextlib.suppress(AttributeError):  # __slots__, a property: it stays nameless
            agent.name = spec
    return agent


_FACTORY_BATCHES: dict[str, tuple[Any, bool]] = {}
"""Each factory's absolute spec: the factory, and whether the agent it built has
``act_batch``: a factory is called once per process to see, however many tournaments ask."""


def has_act_batch(spec: str) -> bool:
    """Whether the agent of ``spec`` has ``act_batch`` (a factory function is called to see,
    once per process)."""
    found = find(spec)
    if inspect.isclass(found) or _has_act(found):
        return callable(getattr(found, "act_batch", None))
    key = absolute_spec(spec)
    seen = _FACTORY_BATCHES.get(key)
    if seen is None or seen[0] is not found:
        seen = found, callable(getattr(build(spec, seed=0), "act_batch", None))
        _FACTORY_BATCHES[key] = seen
    return seen[1]


def _entry_point(name: str) -> Any:
    found = entry_points(group=ENTRY_POINT_GROUP).select(name=name)
    if not found:
        raise ValueError(f"unknown agent spec {name!r}: no {ENTRY_POINT_GROUP} entry point")
    entry = next(iter(found))
    try:
        return entry.load()
    except Exception as error:  # noqa: BLE001 - an installed package's code, said in one line
        raise ValueError(
            f"agent {name!r} ({ENTRY_POINT_GROUP} entry point {entry.value}) does not load: "
            f"{_one_line(error)}"
        ) from None


def _import(spec: str, module: str) -> Any:
    if not all(part.isidentifier() for part in module.split(".")):
        raise ValueError(
            f"agent {spec!r}: {module!r} is neither a module name nor a path to a .py file "
            f"(outside agents are {FORMS})"
        )
    if os.getcwd() not in sys.path:  # as ``python -m`` would find it; last, so it shadows nothing
        sys.path.append(os.getcwd())
    try:
        return importlib.import_module(module)
    except Exception as error:  # noqa: BLE001 - the user's module: any failure, in one line
        raise ValueError(
            f"agent {spec!r}: module {module} does not import: {_one_line(error)}"
        ) from None


def _load_file(spec: str, where: str) -> Any:
    path = Path(os.path.abspath(os.path.expanduser(where)))
    if path.suffix != ".py":
        raise ValueError(f"agent {spec!r}: a file agent is path/to/file.py:Name; got {where!r}")
    if not path.is_file():
        raise ValueError(f"agent {spec!r}: no such file {where}")
    # One module per file, named after its path: loaded once per process however many seats.
    key = f"odin_outside_{path.stem}_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}"
    if key in sys.modules:
        return sys.modules[key]
    if str(path.parent) not in sys.path:
        sys.path.append(str(path.parent))
    loader = importlib.util.spec_from_file_location(key, path)
    module = importlib.util.module_from_spec(loader)  # type: ignore[arg-type]
    sys.modules[key] = module
    try:
        loader.loader.exec_module(module)  # type: ignore[union-attr]
    except BaseException as error:
        del sys.modules[key]
        if not isinstance(error, Exception):
            raise  # Ctrl-C, SystemExit: not the file's failure to report
        raise ValueError(
            f"agent {spec!r}: file {where} does not import: {_one_line(error)}"
        ) from None
    return module


def _has_act(thing: Any) -> bool:
    return callable(getattr(thing, "act", None))


def _takes_seed(factory: Any) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # no signature to read (a builtin): call it bare
        return False
    return any(
        p.kind is p.VAR_KEYWORD or (p.name == "seed" and p.kind is not p.POSITIONAL_ONLY)
        for p in parameters
    )


def _short(thing: Any) -> str:
    text = repr(thing)
    return text if len(text) <= 60 else text[:57] + "..."


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__


__all__ = [
    "ENTRY_POINT_GROUP", "FORMS", "absolute_spec", "build", "entry_point_names", "find",
    "has_act_batch",
]  # fmt: skip
