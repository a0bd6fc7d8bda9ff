"""The examples (examples/): each library's script trains briefly in its smoke mode and prints
a win rate against random, with its 95% Wilson interval, measured by the lab's tournament code.
RLlib runs in its own environment (.venv-rllib, built by ``make test``: RLlib pins another
gymnasium); a missing environment fails, naming the command that builds it."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
RLLIB_PYTHON = ROOT / ".venv-rllib" / "bin" / "python"
LINE = re.compile(
    r"^win rate against random: (\d+\.\d)% \[(\d+\.\d), (\d+\.\d)\] \(95% Wilson interval; "
    r"(\d+) games, 4 players, fair share 25\.0%\)$",
    re.M,
)
EXAMPLES = {
    "sb3_maskable_ppo.py": sys.executable,
    "torchrl_reinforce.py": sys.executable,
    "tianshou_dqn.py": sys.executable,
    "rllib_ppo.py": str(RLLIB_PYTHON),
}


def run(script: str, *args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    python = EXAMPLES[script]
    assert Path(python).exists(), f"{python} is missing: build it with `make .venv-rllib`"
    return subprocess.run(
        [python, str(ROOT / "examples" / script), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("script", sorted(EXAMPLES))
def test_example_trains_and_prints_a_win_rate_with_its_interval(script):
    done = run(script, "--smoke", "--seed", "3")
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = LINE.findall(done.stdout)
    rate, low, high = (float(x) / 100 for x in found[:3])
    assert 0.0 <= low <= rate <= high <= 1.0
    assert int(found[3]) == 2 * 4  # the smoke size: 2 deals, each from every seat


def test_bad_settings_exit_2_with_one_line():
    done = run("sb3_maskable_ppo.py", "--smoke", "--players", "7")
    assert done.returncode == 2
    (line,) = done.stderr.strip().splitlines()
    assert "players must be 2-6; got 7" in line
