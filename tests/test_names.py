"""Agents' display names (:mod:`odin_lab.evaluation.names`): a model path as an agent shows as
its file's stem, with parent folders only where two would show the same, and that one name is
used by every text table, CSV and figure, and by a told game's seats."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import pytest

from agents.ppo import BUNDLED_DIR
from odin_env.rules import Config
from odin_lab.evaluation import figures
from odin_lab.evaluation.leaderboard import leaderboard
from odin_lab.evaluation.names import labels, short_names
from odin_lab.evaluation.narrate import seat_labels
from odin_lab.evaluation.records import config_dict
from odin_lab.evaluation.studies import tournament, tournament_table


def test_a_file_shows_as_its_stem_and_a_clash_adds_folders_until_the_names_differ():
    assert short_names(["ppo:runs/lr3/best.safetensors", "greedy", "search:300"]) == [
        "best",
        "greedy",
        "search:300",
    ]
    assert short_names(["ppo:runs/a/best.safetensors", "ppo:runs/b/best.safetensors"]) == [
        "a/best",
        "b/best",
    ]
    # Every kind of model file: a DMC run's and a linear player's as a PPO run's.
    assert short_names(["dmc:runs/d/best.safetensors", "linear:runs/l/fit.safetensors"]) == [
        "best",
        "fit",
    ]
    # One folder is not enough for these two; the second has no more, so it shows whole.
    deep = ["ppo:y/x/m.safetensors", "ppo:x/m.safetensors", "ppo:/abs/z.safetensors"]
    assert short_names(deep) == ["y/x/m", "ppo:x/m.safetensors", "z"]
    # A file named like a lab agent never takes that agent's name.
    assert short_names(["planner", "ppo:planner.safetensors"]) == [
        "planner",
        "ppo:planner.safetensors",
    ]
    # A Python file's agent keeps its attribute name; a module's shows whole.
    assert short_names(["/home/me/bots/my_agent.py:Bot", "mypkg.players:Strong"]) == [
        "my_agent:Bot",
        "mypkg.players:Strong",
    ]


def test_a_repeated_agent_is_numbered_and_equal_specs_share_their_short_name():
    specs = ["ppo:runs/a/best.safetensors", "random", "ppo:runs/a/best.safetensors", "random"]
    assert labels(specs) == ["best", "random", "best#2", "random#2"]
    assert seat_labels(specs, [2, 1, 0, 3], you=3) == [
        "seat 0 (best)",
        "seat 1 (random)",
        "seat 2 (best)",
        "seat 3 (you)",
    ]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> list[str]:
    """Two model files both called best.safetensors, in folders of their own (two runs)."""
    root = tmp_path_factory.mktemp("runs")
    specs = []
    for run in ("lr3e-4", "lr1e-4"):
        (root / run).mkdir()
        for suffix in (".safetensors", ".json"):
            source = BUNDLED_DIR / f"ppo_4p{suffix}"
            if source.exists():
                shutil.copy(source, root / run / f"best{suffix}")
        specs.append(f"ppo:{root / run / 'best.safetensors'}")
    return specs


def test_tournament_table_csv_and_figure_name_two_model_files_alike_and_stay_aligned(
    two_runs, tmp_path: Path
):
    specs = [*two_runs, "greedy", "random"]
    summary, text = tournament(specs, Config(players=4), 8, 0, tmp_path, progress=False)
    names = ["lr3e-4/best", "lr1e-4/best", "greedy", "random"]
    assert [a["agent"] for a in summary["agents"]] == names
    assert sorted(row.split()[0] for row in text.splitlines()[2:6]) == sorted(names)
    # A name longer than the column's default: every row's win rate still ends under the
    # header's "win rate".
    longer = [
        {**a, "agent": "my_agent:AVeryPatientAgent"} if a["agent"] == "greedy" else a
        for a in summary["agents"]
    ]
    header, *rows = tournament_table({**summary, "agents": longer}).splitlines()[1:6]
    end = header.index("win rate") + len("win rate")
    assert all(row[end - 1] == "%" for row in rows), rows
    with open(tmp_path / "agents.csv") as f:
        assert [row["agent"] for row in csv.DictReader(f)] == names
    with open(tmp_path / "games.csv") as f:
        assert set(next(csv.DictReader(f))["seats"].split()) == set(names)
    (ax,) = figures.tournament_figure(summary).axes
    assert sorted(t.get_text() for t in ax.get_yticklabels()) == sorted(names)


def test_leaderboard_table_and_figure_use_the_same_short_names(two_runs, tmp_path: Path):
    specs = [*two_runs, "greedy", "random"]
    summary, text = leaderboard(specs, Config(players=4), 4, 0, tmp_path, progress=False)
    names = {"lr3e-4/best", "lr1e-4/best", "greedy", "random"}
    assert {row["agent"] for row in summary["agents"]} == names
    assert {row["spec"] for row in summary["agents"]} == set(specs)
    ranked = [line.split()[1] for line in text.splitlines()[3:7]]
    assert set(ranked) == names
    left = figures.leaderboard_figure({**summary, "config": config_dict(Config(players=4))}).axes[0]
    assert {t.get_text() for t in left.get_yticklabels()} == names
    assert not any(str(tmp_path.parent) in line for line in text.splitlines())
