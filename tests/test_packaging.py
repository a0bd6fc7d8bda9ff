"""The lab as a package: a wheel built from the repository installs only its three top-level
packages (``odin_env``, ``agents``, ``odin_lab``) with their data (the bundled models, the web
app's page), and the core install alone (no extra, so no torch) runs the environment: the AEC
env, the Gymnasium env and the bundled ``ppo``, with numpy only, and imports the batched engine
with its numba kernels (compiled and run by the rest of the suite).

The wheel is built from a copy of the working tree (pip writes ``build/`` beside the sources);
the fresh environment takes its exact versions from ``constraints.txt``, as ``make`` does, from
pip's cache or index."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# One worker under pytest-xdist (make test runs --dist loadgroup): the wheel is built once.
pytestmark = pytest.mark.xdist_group("packaging")
NOT_SOURCES = shutil.ignore_patterns(
    ".git",
    ".venv*",
    "__pycache__",
    "*.egg-info",
    "build",
    "runs",
    "results",
    "site",
    ".pytest_cache",
    ".hypothesis",
    ".ruff_cache",
)

# Run in the fresh environment, from outside the repository: the envs step, torch is absent.
CORE_CHECK = """
import importlib.util, pathlib, sys
import gymnasium as gym
import numpy as np
import odin_env
from agents import make
from odin_env.batched import BatchedGames  # noqa: F401 (imports without torch)
from odin_env.rules import Config

assert "site-packages" in pathlib.Path(odin_env.__file__).parts, odin_env.__file__
missing = [m for m in ("torch", "scipy", "matplotlib") if importlib.util.find_spec(m) is None]
print("missing:", " ".join(missing))

aec = odin_env.env(config=Config(players=3, seed=1))
aec.reset(seed=1)
steps = 0
for agent in aec.agent_iter():
    obs, reward, terminated, truncated, _ = aec.last()
    action = None if terminated or truncated else int(np.flatnonzero(obs["action_mask"])[0])
    aec.step(action)
    steps += action is not None
print("aec steps:", steps)

single = gym.make(odin_env.GYM_ID, players=4)
obs, info = single.reset(seed=2)
done, steps = False, 0
while not done:
    action = int(np.flatnonzero(info["action_mask"])[0])
    obs, reward, terminated, truncated, info = single.step(action)
    done, steps = terminated or truncated, steps + 1
print("gym steps:", steps)

# The batched engine imports with numba and its kernels are numba's (compiling them in this new
# location costs 20 s of CPU; the rest of the suite runs them).
from numba.core.registry import CPUDispatcher
from odin_env import _batched_steps
print("batched kernels:", isinstance(_batched_steps.step_games, CPUDispatcher))

ppo = make("ppo")
obs, info = single.reset(seed=3)
print("ppo legal:", bool(info["action_mask"][ppo.act(obs, info["action_mask"])]))
"""


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The lab's wheel, built from a copy of the working tree."""
    tmp = tmp_path_factory.mktemp("wheel")
    shutil.copytree(ROOT, tmp / "src", ignore=NOT_SOURCES)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "-q",
            "--no-deps",
            str(tmp / "src"),
            "-w",
            str(tmp / "dist"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    (built,) = (tmp / "dist").glob("odin_lab-*.whl")
    return built


def test_the_wheel_holds_our_three_packages_and_their_data_only(wheel: Path):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"odin_env", "agents", "odin_lab"}
    for data in (
        "agents/models/ppo_4p.safetensors",
        "agents/models/ppo_4p.json",
        "odin_lab/webapp/static/index.html",
    ):
        assert data in names, data
    # Every package of ours is in it (a new subpackage missing from pyproject.toml fails here).
    for top in ("odin_env", "agents", "odin_lab"):
        for init in ROOT.joinpath(top).rglob("__init__.py"):
            assert init.relative_to(ROOT).as_posix() in names, init
    assert not [n for n in names if "__pycache__" in n or n.endswith((".nbi", ".nbc"))]


def test_the_core_install_alone_runs_the_envs_and_ppo_without_torch(wheel: Path, tmp_path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    done = subprocess.run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            "--no-compile",
            "-c",
            str(ROOT / "constraints.txt"),
            str(wheel),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    # -I: neither the repository nor PYTHONPATH on the path; the installed copy runs.
    done = subprocess.run(
        [str(python), "-I", "-c", CORE_CHECK],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(": ", 1) for line in done.stdout.strip().splitlines())
    assert lines["missing"].split() == ["torch", "scipy", "matplotlib"]
    assert int(lines["aec steps"]) > 10 and int(lines["gym steps"]) > 0
    assert lines["batched kernels"] == "True" and lines["ppo legal"] == "True"
