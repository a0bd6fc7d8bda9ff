"""The suite's own xdist grouping (tests/conftest.py): under ``-n 2 --dist loadgroup`` the tests
that share a module-scoped fixture of their module run on one worker and the fixture is made
once, and a ``pytestmark`` group holds together. Checked on a small suite of its own, in a
subprocess, with this conftest."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

SHARED = """
import os
import pytest

@pytest.fixture(scope="module")
def made(tmp_path_factory):
    with open(os.environ["MADE_LOG"], "a") as log:
        log.write(os.environ.get("PYTEST_XDIST_WORKER", "-") + "\\n")
    return 1

@pytest.mark.parametrize("i", range(6))
def test_uses_it(made, i):
    with open(os.environ["RAN_LOG"], "a") as log:
        log.write(f"shared {os.environ['PYTEST_XDIST_WORKER']}\\n")

@pytest.mark.parametrize("i", range(6))
def test_alone(i):
    pass
"""

MARKED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("marked")

@pytest.mark.parametrize("i", range(6))
def test_marked(i):
    with open(os.environ["RAN_LOG"], "a") as log:
        log.write(f"marked {os.environ['PYTEST_XDIST_WORKER']}\\n")
"""


def test_a_modules_fixture_is_made_once_and_groups_hold_together(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    shutil.copy(HERE / "conftest.py", suite / "conftest.py")
    (suite / "test_shared.py").write_text(SHARED)
    (suite / "test_marked.py").write_text(MARKED)
    made, ran = tmp_path / "made.log", tmp_path / "ran.log"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-n",
            "2",
            "--dist",
            "loadgroup",
            str(suite),
        ],
        cwd=suite,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "MADE_LOG": str(made), "RAN_LOG": str(ran)},
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert len(made.read_text().split()) == 1  # the fixture, made once
    workers: dict[str, set[str]] = {}
    for line in ran.read_text().splitlines():
        group, worker = line.split()
        workers.setdefault(group, set()).add(worker)
    assert {g: len(w) for g, w in workers.items()} == {"shared": 1, "marked": 1}
