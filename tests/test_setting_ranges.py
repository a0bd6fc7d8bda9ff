"""Every training setting's range is checked before work starts: ``train.py`` refuses a value out
of range in one line naming the setting and its allowed values (exit 2), before the runs folder
exists; the ranges bound the memory a run may take (odin_lab.training.settings). The first case
runs the real ``train.py``; the others call its command in this process
(tests/training_inprocess.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from training_inprocess import train_main

ROOT = Path(__file__).resolve().parents[1]

CASES = [
    (["--algo", "dmc", "--net", "100000000"], "net must be 1-8 values, each an integer 1-4,096"),
    (["--algo", "dmc", "--net", "8192"], "net must be 1-8 values, each an integer 1-4,096"),
    (["--algo", "dmc", "--net", *["64"] * 9], "net must be 1-8 values"),
    (["--learning-rate", "1e308"], "learning_rate must be a finite number in (0, 10]"),
    (
        ["--algo", "ppo", "--learning-rate", "11"],
        "learning_rate must be a finite number in (0, 10]",
    ),
    (["--algo", "exit", "--learning-rate", "1e300"], "learning_rate must be a finite number"),
    (
        ["--decisions-per-update", "1000000000000"],
        "decisions_per_update must be an integer 1-1,000,000",
    ),
    (["--decisions-per-update", "2000000"], "decisions_per_update must be an integer 1-1,000,000"),
    (["--algo", "exit", "--decisions-per-update", "2000000"], "decisions_per_update must be"),
    (["--batch-size", "1000000"], "batch_size must be an integer 1-65,536"),
    (["--algo", "ppo", "--batch-size", "1000000"], "batch_size must be an integer 1-65,536"),
    (
        ["--algo", "ppo", "--net-pi", "100000000"],
        "net_pi must be 1-8 values, each an integer 1-4,096",
    ),
    (["--algo", "ppo", "--net-vf", "5000"], "net_vf must be 1-8 values, each an integer 1-4,096"),
    (["--algo", "ppo", "--n-steps", "2000000"], "n_steps must be an integer 1-1,000,000"),
    (
        ["--algo", "ppo", "--n-steps", "500000", "--n-envs", "4"],
        "n_steps x n_envs must be an integer 1-1,000,000",
    ),
    (["--algo", "ppo", "--ent-coef", "1e300"], "ent_coef must be a finite number in [0, 1e+06]"),
    (
        ["--algo", "ppo", "--clip-range", "1e300"],
        "clip_range must be a finite number in (0, 1e+06]",
    ),
    (["--max-grad-norm", "1e300"], "max_grad_norm must be a finite number in (0, 1e+06]"),
]


@pytest.mark.parametrize(
    ("flags", "message"), CASES, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_out_of_range_is_refused_before_the_run_folder(tmp_path, flags, message):
    runs = tmp_path / "runs"
    args = ["--runs-dir", runs, "--name", "r", "--total-steps", "0", *flags]
    if flags is CASES[0][0]:  # the real script, once
        proc = subprocess.run(
            [sys.executable, ROOT / "train.py", *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=300,
        )
    else:
        proc = train_main(*args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.count("\n") == 1 and message in proc.stderr, proc.stderr[-2000:]
    assert not runs.exists()
