"""Shared test set-up: the commands' BLAS thread setting, the tests' own helper modules
(``oracle``) importable, numba's on-disk cache filled before the tests start, and the tests
that share a module's expensive fixture kept together under xdist.

pytest's default import mode already puts this folder on ``sys.path``; doing it here as well
keeps ``import oracle`` working under ``--import-mode=importlib`` and if ``tests`` ever becomes
a package.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

# The tests run in the lab's own thread settings: one BLAS thread, as every command (odin_lab.cli).
import odin_lab.cli  # noqa: E402, F401

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)


# What the tests' processes compile: the engine, the agents' kernels and the parallel engine.
_WARM = """
import sys
from odin_env.batched import BatchedGames
from odin_env.rules import Config
if sys.argv[1] == "serial":
    from odin_lab.evaluation.warm import compile_side_by_side
    compile_side_by_side(Config(players=4), ["greedy", "shaper", "planner", "linear"])
else:
    from agents.batch import BatchRandomAgent
    games = BatchedGames(Config(players=4), 2, seed=0, parallel=True)
    games.step(BatchRandomAgent(seed=0, parallel=True).act_batch(games.obs, games.mask))
"""


def warm_numba_cache() -> str:
    """Fill numba's on-disk cache: two processes compile side by side (the serial engine with
    the agents' kernels, and the parallel engine). On a fresh checkout (CI) every process that
    calls a kernel before it is cached compiles it again: the engine alone is about 22 s of
    CPU, and the first minutes of a run start dozens of processes. A warm cache makes this a
    few seconds. Returns the line to print. (``make test`` runs this file first, while the other
    installs go on: ``python tests/conftest.py``.)"""
    start = time.monotonic()
    warm = [
        subprocess.Popen([sys.executable, "-c", _WARM, kind]) for kind in ("serial", "parallel")
    ]
    failed = [p.args[-1] for p in warm if p.wait() != 0]
    took = f"numba's cache warmed in {time.monotonic() - start:.1f} s"
    return took + (f" (failed: {failed}; the tests compile what they call)" if failed else "")


def pytest_configure(config: pytest.Config) -> None:
    """Fill numba's on-disk cache once, before any worker starts (:func:`warm_numba_cache`).
    The tests of a cold cache use caches of their own."""
    if hasattr(config, "workerinput") or config.option.collectonly:
        return  # an xdist worker: its controller did this
    if not (Path(__file__).resolve().parents[1] / "odin_env").is_dir():
        return  # this file copied into a suite of its own (test_conftest_groups)
    print(warm_numba_cache(), file=sys.stderr)


@pytest.fixture(scope="module")
def cluster():
    """A local Ray of 2 CPUs for the tests of one module that ask for it (they are in the xdist
    group ``ray``: one worker). Per module, not per session: a test that starts its own Ray in a
    process of its own runs first in its module, with none up (two Rays on two busy cores once
    missed Ray's fixed 30 s start-up wait), and no module's actors outlive it."""
    import ray  # the ray extra: only the tests of Ray import it

    from odin_lab.evaluation import distributed

    distributed.connect("local", 2)
    yield
    ray.shutdown()


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]):
    """Run each module's expensive fixture (a tiny training run, a built docs site) once, and
    the groups of tests first:

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
    # The groups first: xdist hands out work in this order, and a long group (Ray's, the
    # tiny training runs) handed out last kept one worker busy while the other had nothing.
    items.sort(key=lambda item: item.get_closest_marker("xdist_group") is None)
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


if __name__ == "__main__":
    print(warm_numba_cache(), file=sys.stderr)
