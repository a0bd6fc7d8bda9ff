"""``evaluate.py``'s studies build each agent once in their process: the check before any game
builds it, and every tournament of the study seats that same agent (one per seat on the single
engine, one for all seats in batched form), with the same records as agents built afresh."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from odin_env.rules import Config
from odin_lab.commands import evaluate
from odin_lab.evaluation.tournament import play_tournament

COUNTED = textwrap.dedent('''
    from pathlib import Path

    import numpy as np

    BUILT = Path(__file__).with_name("built.txt")

    class Counted:
        """The lowest legal action; each construction adds a line to built.txt."""

        name = "counted"

        def __init__(self):
            with BUILT.open("a") as f:
                f.write("built\\n")

        def act(self, observation, action_mask):
            return int(np.flatnonzero(action_mask)[0])

    class CountedBatched(Counted):
        def act_batch(self, obs, mask):
            return np.argmax(mask != 0, axis=1)
''')


@pytest.fixture
def counted(tmp_path: Path) -> Path:
    path = tmp_path / "counted.py"
    path.write_text(COUNTED)
    return path


def builds(agent_file: Path) -> int:
    built = agent_file.with_name("built.txt")
    return len(built.read_text().splitlines()) if built.exists() else 0


@pytest.mark.parametrize(
    ("name", "engine", "seats", "expected"),
    [
        ("CountedBatched", "auto", 1, 1),  # batched: one agent for its seats
        ("CountedBatched", "batched", 2, 1),
        ("Counted", "auto", 1, 1),  # no batched form: the single engine
        ("Counted", "single", 2, 2),  # one agent per seat, each built once
    ],
)
def test_a_tournament_builds_each_agent_once(counted, tmp_path, name, engine, seats, expected):
    spec = f"{counted}:{name}"
    others = ["greedy", "random", "planner"][: 3 - seats]
    argv = ["tournament", "--agents", *[spec] * seats, *others, "--games", "6"]
    out = tmp_path / "out"
    code = evaluate.main([*argv, "--engine", engine, "--out", str(out), "--no-progress"])
    assert code == 0
    assert builds(counted) == expected
    # The agents the check built play the games those built afresh play.
    config = Config(players=3)
    fresh = play_tournament([spec] * seats + others, config, 2, 0, progress=False, engine=engine)
    games = json.loads((out / "tournament.json").read_text())["game_records"]
    assert [list(r.actions) for r in fresh] == [g["actions"] for g in games]


def test_a_study_of_many_tournaments_builds_each_agent_once(counted, tmp_path):
    spec = f"{counted}:CountedBatched"
    argv = ["thresholds", "--agents", spec, "greedy", "random", "--thresholds", "5", "10", "15"]
    out = str(tmp_path / "out")
    assert evaluate.main([*argv, "--games", "3", "--out", out, "--no-progress"]) == 0
    assert builds(counted) == 1
