"""``benchmarks/table_sizes.py``: one agent against (n - 1) copies of each opponent at every
asked table size, the same figures whatever the worker count, and bad input in one line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "table_sizes.py"), *map(str, args)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
    )  # fmt: skip


def test_every_size_and_opponent_gets_its_row_whatever_the_workers(tmp_path):
    rows = {}
    for workers in (1, 2):
        out = tmp_path / f"w{workers}"
        done = run("--agent", "greedy", "--opponents", "random", "shaper", "--players", 2, 5,
                   "--games", 12, "--seed", 3, "--workers", workers, "--out", out)  # fmt: skip
        assert done.returncode == 0, done.stderr[-2000:]
        report = json.loads((out / "table_sizes.json").read_text())
        assert "benchmarks/table_sizes.py --agent greedy" in report["command"]
        assert (out / "table_sizes.png").stat().st_size > 0
        rows[workers] = report["rows"]
    assert rows[1] == rows[2]
    got = [(r["players"], r["opponent"], r["games"]) for r in rows[1]]
    assert got == [(2, "random", 12), (2, "shaper", 12), (5, "random", 15), (5, "shaper", 15)]
    for r in rows[1]:
        assert r["parity"] == 1 / r["players"] and r["ci_low"] <= r["win_share"] <= r["ci_high"]
    against = {(r["players"], r["opponent"]): r["win_share"] for r in rows[1]}
    assert against[2, "random"] > against[2, "shaper"]  # greedy beats random, not shaper


def test_bad_input_is_one_line_and_exit_2(tmp_path):
    for args, named in (
        (["--players", "7"], "--players must be table sizes 2-6"),
        (["--agent", "nobody"], "unknown agent spec 'nobody'"),
        (["--games", "0"], "--games must be >= 1"),
    ):
        done = run(*args, "--out", tmp_path / "x")
        assert done.returncode == 2 and named in done.stderr.strip().splitlines()[-1]
        assert not (tmp_path / "x").exists()
