"""Shared test set-up: the commands' BLAS thread setting, and the tests' own helper modules
(``oracle``) importable.

pytest's default import mode already puts this folder on ``sys.path``; doing it here as well
keeps ``import oracle`` working under ``--import-mode=importlib`` and if ``tests`` ever becomes
a package.
"""

from __future__ import annotations

import sys
from pathlib import Path

# The tests run in the lab's own thread settings: one BLAS thread, as every command (odin_lab.cli).
import odin_lab.cli  # noqa: E402, F401

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
