"""A research script (``research/NAME.py``, not a package) loaded as a module, so that the tests
call its functions in their own process. A helper of the tests, not a test."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

RESEARCH = Path(__file__).resolve().parents[1] / "research"


def load(name: str) -> ModuleType:
    """``research/<name>.py`` as the module ``name``, registered in ``sys.modules`` so that
    worker processes forked from the test find its functions by that name. Nothing is put on
    ``sys.path``: a research script imports the lab's packages, never another script."""
    spec = importlib.util.spec_from_file_location(name, RESEARCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
