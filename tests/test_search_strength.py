"""``benchmarks/search_strength.py``: the search's games are the same whatever the worker count
and however the deals are cut into parts, and the parts make the whole tournament."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location(
    "search_strength", ROOT / "benchmarks" / "search_strength.py"
)
search_strength = importlib.util.module_from_spec(_spec)
sys.modules["search_strength"] = search_strength  # its workers find _part by this name (fork)
_spec.loader.exec_module(search_strength)

TIMINGS = ("median_ms", "p90_ms")


def figures(monkeypatch, workers: int, part: int) -> dict:
    monkeypatch.setattr(search_strength, "PART", part)
    row = search_strength.measure("search:4", "greedy", 3, 15, deals=5, seed=7, workers=workers)
    return {key: value for key, value in row.items() if key not in TIMINGS}


def test_the_games_do_not_depend_on_workers_or_parts(monkeypatch):
    one = figures(monkeypatch, workers=1, part=5)
    assert one["games"] == 15 and one["decisions"] > 15  # every deal from every seat
    assert 0 <= one["ci_low"] <= one["win_share"] <= one["ci_high"] <= 1
    assert figures(monkeypatch, workers=2, part=2) == one
    assert figures(monkeypatch, workers=1, part=1) == one
