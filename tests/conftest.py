"""Shared test set-up: the commands' BLAS thread setting, and the tests' own helper modules
(``oracle``) importable.

pytest's default import mode already puts this folder on ``sys.path``; doing it here as well
keeps ``import oracle`` working under ``--import-mode=importlib`` and if ``tests`` ever becomes
a package.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

# The tests run in the lab's own thread settings: one BLAS thread, as every command (odin_lab.cli).
import odin_lab.cli  # noqa: E402, F401

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Run each module's expensive fixture (a tiny training run, a built docs site) once:

    - before the other hooks (xdist's among them), the tests that use a module- or
      session-scoped fixture written in their own module get the xdist group
      ``<module>::<fixture>``, so under ``--dist loadgroup`` they run on one worker, one after
      the other, instead of making the fixture once per worker;
    - after them, what xdist 3.8 does to group tests, done so that pytest 9 sees it: xdist
      appends ``@<group>`` to ``item._nodeid``, which pytest 9 no longer reads (its id is
      ``item._id``), so without this every group, ``pytestmark`` ones too, is split over the
      workers.
    """
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            name = _shared_fixture(item)
            if name is not None:
                item.add_marker(pytest.mark.xdist_group(f"{item.module.__name__}::{name}"))
    result = yield
    if config.getoption("loadgroup", default=False) and items and hasattr(items[0], "_id"):
        from _pytest.nodeid import NodeId

        for item in items:
            marks = item.iter_markers("xdist_group")
            groups = sorted({str(m.args[0] if m.args else m.kwargs.get("name")) for m in marks})
            if groups and "@" not in item.nodeid.rpartition("]")[2]:
                item._id = NodeId.parse(f"{item.nodeid}@{'_'.join(groups)}")
    return result


def _shared_fixture(item: pytest.Item) -> str | None:
    """The first module- or session-scoped fixture that ``item`` uses and its own module
    defines (``None``: none)."""
    info, module = getattr(item, "_fixtureinfo", None), getattr(item, "module", None)
    if info is None or module is None:  # not a test function (a doctest, say)
        return None
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name) or ():
            func = getattr(fixturedef, "func", None)
            mine = getattr(func, "__module__", None) == module.__name__
            if fixturedef.scope in ("module", "session") and mine:
                return name
    return None
