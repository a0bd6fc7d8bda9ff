"""``research/table_sizes.py``: one agent against (n - 1) copies of each opponent at every
asked table size, the same figures whatever the worker count, and bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import research_file

table_sizes = research_file.load("table_sizes")


def run(*args: object) -> dict:
    """``table_sizes.py`` run in this process; its report."""
    assert table_sizes.main([str(a) for a in args]) == 0
    out = Path(args[args.index("--out") + 1])
    assert (out / "table_sizes.png").stat().st_size > 0
    return json.loads((out / "table_sizes.json").read_text())


def test_every_size_and_opponent_gets_its_row_whatever_the_workers(tmp_path):
    rows = {}
    for workers in (1, 2):
        report = run(
            "--agent",
            "greedy",
            "--opponents",
            "random",
            "shaper",
            "--players",
            2,
            5,
            "--games",
            12,
            "--seed",
            3,
            "--workers",
            workers,
            "--out",
            tmp_path / f"w{workers}",
        )
        assert report["settings"] == {"agent": "greedy", "games": 12, "seed": 3}
        assert report["command"].startswith("python research/table_sizes.py --agent greedy")
        rows[workers] = report["rows"]
    assert rows[1] == rows[2]
    got = [(r["players"], r["opponent"], r["games"]) for r in rows[1]]
    assert got == [(2, "random", 12), (2, "shaper", 12), (5, "random", 15), (5, "shaper", 15)]
    for r in rows[1]:
        assert r["parity"] == 1 / r["players"] and r["ci_low"] <= r["win_share"] <= r["ci_high"]
    against = {(r["players"], r["opponent"]): r["win_share"] for r in rows[1]}
    assert against[2, "random"] > against[2, "shaper"]  # greedy beats random, not shaper


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--players", "7"], "--players must be table sizes 2-6"),
        (["--agent", "nobody"], "unknown agent spec 'nobody'"),
        (["--games", "0"], "--games must be >= 1"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, named, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        table_sizes.main([*args, "--out", str(tmp_path / "x")])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "x").exists()
