"""``evaluate.py leaderboard``: the tables a round robin plays, the games every agent gets from
every seat, ratings that order a stronger agent first, a figure in the table's order with every
whisker at its interval's bounds, files that do not depend on the workers, Ctrl-C keeping the
finished tables, and one-line errors for bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from matplotlib.container import ErrorbarContainer

from odin_env.rules import Config
from odin_lab.commands import evaluate
from odin_lab.evaluation import figures
from odin_lab.evaluation import leaderboard as lb
from odin_lab.evaluation.records import config_dict, load_records, replay

ROOT = Path(__file__).resolve().parents[1]
FILES = ("leaderboard.json", "leaderboard.csv", "leaderboard.png")


def test_every_table_of_distinct_agents_plays_and_every_agent_plays_every_seat_equally(tmp_path):
    specs = ["search:8", "planner", "greedy", "random"]
    config = Config(players=3, threshold=5)
    summary, text = lb.leaderboard(specs, config, 3, 11, tmp_path, progress=False)
    # C(4, 3) = 4 tables, each 1 deal x 3 rotations.
    assert [t["specs"] for t in summary["tables"]] == [
        ["search:8", "planner", "greedy"],
        ["search:8", "planner", "random"],
        ["search:8", "greedy", "random"],
        ["planner", "greedy", "random"],
    ]
    saved = load_records(tmp_path / "leaderboard.json")
    assert saved.specs == tuple(specs) and len(saved.games) == 4 * 3 == summary["games"]
    seats = Counter((a, seat) for g in saved.games for seat, a in enumerate(g.agents))
    # Every agent sits at 3 tables, each deal once from each seat: 3 games from every seat.
    assert seats == {(a, s): 3 for a in range(4) for s in range(3)}
    for game in saved.games:
        assert len(set(game.agents)) == 3  # distinct agents at a table
        finished = replay(game, saved.config)  # every game replays to its recorded end
        assert list(finished.totals) == list(game.totals)
    assert all(row["games_by_seat"] == [3, 3, 3] for row in summary["agents"])
    assert "[" in text and "±" not in text


def test_more_combinations_than_tables_gives_a_seeded_balanced_sample():
    tables, how = lb.plan_tables(7, 3, most=9, seed=5)
    assert "sample of 9 of the 35" in how
    assert len(set(tables)) == 9 and all(len(set(t)) == 3 for t in tables)
    sat = Counter(a for t in tables for a in t)
    assert set(sat) == set(range(7)) and max(sat.values()) - min(sat.values()) <= 1
    assert lb.plan_tables(7, 3, most=9, seed=5) == (tables, how)
    assert any(lb.plan_tables(7, 3, most=9, seed=s)[0] != tables for s in range(6, 12))
    every, how = lb.plan_tables(5, 3, most=10)
    assert len(every) == 10 and how == "all 10 combinations"


@pytest.fixture(scope="module")
def three(tmp_path_factory) -> dict:
    """A leaderboard of random, greedy and planner at 2 players, 60 games per table."""
    out = tmp_path_factory.mktemp("three")
    summary, text = lb.leaderboard(
        ["random", "greedy", "planner"], Config(players=2), 60, 3, out, progress=False
    )
    return {"summary": summary, "text": text}


def test_ratings_put_planner_above_greedy_above_random(three):
    summary = three["summary"]
    by = {row["agent"]: row for row in summary["agents"]}
    assert [by[s]["rank"] for s in ("planner", "greedy", "random")] == [1, 2, 3]
    assert by["planner"]["rating_low"] > by["random"]["rating_high"]
    assert by["planner"]["ci_low"] > 0.5 > by["random"]["ci_high"]
    # Head to head: planner's win share in its games with random (2 seats: those games only).
    share = summary["head_to_head"]["win_share"]
    assert share[2][0] > 0.9 and share[0][2] < 0.1 and share[0][0] is None
    table = three["text"].splitlines()
    assert [line.split()[1] for line in table[3:6]] == ["planner", "greedy", "random"]


def test_figure_rows_follow_the_table_and_whiskers_are_the_interval_bounds(three):
    summary = three["summary"]
    fig = figures.leaderboard_figure({**summary, "config": config_dict(Config(players=2))})
    left, right = fig.axes
    labels = {y: t.get_text() for y, t in zip(left.get_yticks(), left.get_yticklabels())}
    screen_y = {y: left.transData.transform((0, y))[1] for y in labels}
    assert [labels[y] for y in sorted(labels, key=lambda y: -screen_y[y])] == [
        "planner",
        "greedy",
        "random",
    ]
    rows = lb.ranked(summary)
    bars = [c for c in left.containers if isinstance(c, ErrorbarContainer)]
    (segments,) = [c.get_segments() for c in bars[0].lines[2]]
    drawn = [(s[0][0], s[1][0]) for s in segments]
    assert np.allclose(drawn, [(r["rating_low"], r["rating_high"]) for r in rows])
    bars = [c for c in right.containers if isinstance(c, ErrorbarContainer)]
    (segments,) = [c.get_segments() for c in bars[0].lines[2]]
    drawn = [(s[0][0], s[1][0]) for s in segments]
    assert np.allclose(drawn, [(100 * r["ci_low"], 100 * r["ci_high"]) for r in rows])
    top = rows[0]  # planner near 100%: its Wilson interval leans towards 50%, asymmetric
    assert drawn[0][1] - 100 * top["win_share"] < 100 * top["win_share"] - drawn[0][0] - 1
    fair = [line.get_xdata()[0] for line in right.get_lines() if line.get_linestyle() == "--"]
    assert fair == [50.0]
    assert "rating" in left.get_xlabel() and "Wilson" in right.get_xlabel()


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), "leaderboard", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_files_are_byte_identical_for_one_or_two_workers(tmp_path):
    agents = ["planner", "shaper", "greedy", "random"]
    config = Config(players=3, threshold=5)
    summary, text = lb.leaderboard(agents, config, 6, 4, tmp_path / "w1", progress=False)
    two = cli(
        "--agents",
        *agents,
        "--players",
        "3",
        "--games",
        "6",
        "--threshold",
        "5",
        "--seed",
        "4",
        "--workers",
        "2",
        "--no-progress",
        "--out",
        str(tmp_path / "w2"),
        cwd=tmp_path,
    )
    assert two.returncode == 0, two.stderr
    assert text in two.stdout
    for name in FILES:
        assert (tmp_path / "w1" / name).read_bytes() == (tmp_path / "w2" / name).read_bytes()
    assert "leaked" not in two.stderr  # the workers leave nothing behind
    assert summary["games"] == len(summary["tables"]) * 6 == 4 * 6


def test_ctrl_c_writes_the_finished_tables_and_says_so(tmp_path, monkeypatch, capsys):
    played = []

    def play(specs, *args, **kwargs):
        if len(played) == 2:
            raise KeyboardInterrupt
        played.append(list(specs))
        return real(specs, *args, **kwargs)

    real = lb.play_tournament
    monkeypatch.setattr(lb, "play_tournament", play)
    out = tmp_path / "lb"
    argv = [
        "leaderboard",
        "--agents",
        "planner",
        "greedy",
        "random",
        "shaper",
        "--players",
        "3",
        "--games",
        "3",
        "--threshold",
        "5",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert evaluate.main(argv) == 130
    assert "the 2 tables finished (of 4)" in capsys.readouterr().err
    saved = json.loads((out / "leaderboard.json").read_text())
    assert saved["partial"] is True and saved["games"] == len(saved["game_records"]) == 2 * 3
    assert [t["specs"] for t in saved["tables"]] == played
    assert all((out / name).exists() for name in FILES)
    # Stopped before the first table finished: nothing at all is written.
    played[:] = [None, None]
    assert evaluate.main([*argv[:-1], str(tmp_path / "none")]) == 130
    assert "nothing written" in capsys.readouterr().err
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--agents", "planner", "greedy", "greedy", "random"], "must be distinct"),
        (["--agents", "planner", "greedy", "--players", "3"], "fewer agents than players"),
        (["--agents", "planner", "greedy", "random", "--players", "7"], "players must be 2-6"),
        (["--agents", "planner", "bogus", "random"], "unknown agent spec 'bogus'"),
        (
            ["--agents", "planner", "greedy", "random", "--players", "2", "--tables", "1"],
            "--tables must be an integer 2-1,000,000",
        ),
        (
            ["--agents", "planner", "greedy", "random", "--players", "2", "--tables", "9" * 30],
            "--tables must be an integer 2-1,000,000",
        ),
        (
            ["--agents", "planner", "greedy", "random", "--games", "0"],
            "--games must be 1-1,000,000",
        ),
        (["--agents", "planner", "greedy", "random", "--games", "x"], "invalid int"),
        (["--agents", "planner", "greedy", "random", "--threshold", "0"], "threshold"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, says, tmp_path, capsys):
    out = tmp_path / "out"
    try:
        code = evaluate.main(["leaderboard", *args, "--out", str(out)])
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    assert code == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], lines
    assert lines[0].startswith("evaluate.py leaderboard: error: ")
    assert not out.exists()
