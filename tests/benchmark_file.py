"""A benchmark script (``benchmarks/NAME.py``, not a package) loaded as a module, so that the
tests call its functions in their own process. A helper of the tests, not a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def load(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as the module ``name``, registered in ``sys.modules`` so that
    worker processes forked from the test find its functions by that name. The benchmarks'
    folder goes on ``sys.path``, as it is for a script run from it, so that a benchmark imports
    another's functions by its name."""
    if str(BENCHMARKS) not in sys.path:
        sys.path.insert(0, str(BENCHMARKS))
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
