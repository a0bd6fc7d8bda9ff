"""A failing outside agent where a person plays or a probe trains (issue 59, item 7): in
``play.py`` and ``evaluate.py exploit`` one line naming the agent and what it did, exit 2 (the
unfinished game saved, the points kept), no traceback; in the web app a 500 ``{"error"}`` naming
it for that game, a line in the log, and the server going on."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from odin_lab.webapp.app import create_app

ROOT = Path(__file__).resolve().parents[1]
AGENT = """
import os

import numpy as np

MODE = os.environ.get("BAD_MODE", "raise")


class Agent:
    \"\"\"Fails at its first decision as MODE says.\"\"\"

    def act(self, observation, mask):
        lowest = int(np.flatnonzero(mask)[0])
        if MODE == "float":
            return lowest + 0.7
        if MODE == "illegal":
            return int(np.flatnonzero(mask == 0)[0])
        raise RuntimeError("the agent broke")
"""
SAYS = {
    "raise": "raised RuntimeError: the agent broke",
    "float": ".7: a float, not an integer action",
    "illegal": ": an illegal action",
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "bad.py").write_text(AGENT)
    return tmp_path


def run(folder: Path, script: str, *args: str, mode: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / script), *args],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        input="",
        env={**os.environ, "BAD_MODE": mode, "NO_COLOR": "1"},
    )


def one_line(done: subprocess.CompletedProcess, prog: str, mode: str) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.startswith(f"{prog}: error: agent '") and "bad.py:Agent'" in done.stderr
    assert SAYS[mode] in done.stderr, done.stderr
    return done.stderr


@pytest.mark.parametrize("mode", ["raise", "float"])
def test_play_says_which_agent_failed_in_one_line_and_saves_the_game(folder, mode):
    # The agent in seat 0 leads the first trick (fixed): it fails before the person's turn.
    args = ("--opponents", "bad.py:Agent", "--seat", "1", "--first-player", "fixed")
    done = run(folder, "play.py", *args, "--seed", "3", "--out", "game.json", mode=mode)
    assert " in seat 0 of deal 0 rotation 0 " in one_line(done, "play.py", mode)
    saved = json.loads((folder / "game.json").read_text())
    assert saved["agents_specs"][0] == "bad.py:Agent" and saved["game_records"][0]["winners"] == []


def test_exploit_says_the_target_failed_in_one_line(folder, capsys):
    from odin_lab.commands.evaluate import main

    (folder / "floats.py").write_text(
        AGENT.replace('os.environ.get("BAD_MODE", "raise")', '"float"')
    )
    spec = f"{folder / 'floats.py'}:Agent"
    args = ["exploit", "--target", spec, "--players", "2", "--steps", "64", "--points", "1"]
    small = ["--set", "decisions_per_update=64", "batch_size=16"]
    assert main([*args, *small, "--deals", "2", "--out", str(folder / "out"), "--no-progress"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error, error
    assert f"agent {spec!r} in a training game returned float64 actions" in error, error


@pytest.mark.parametrize("mode", ["raise", "illegal"])
def test_the_web_app_answers_500_naming_the_agent_and_goes_on(folder, caplog, mode):
    spec = str(folder / "bad.py") + ":Agent"
    client = TestClient(create_app(folder / "web", folder / "records", code_agents=[spec]))
    body = {"players": 2, "opponents": [spec], "threshold": 5, "seed": 1}
    os.environ["BAD_MODE"] = mode
    try:
        with caplog.at_level(logging.WARNING, logger="odin_lab.webapp"):
            started = client.post("/api/games", json=body)
            if started.status_code == 200:  # the person's turn first: the agent fails next
                data = started.json()
                legal = data["view"]["legal"][0]
                move = {"action": legal["action"], "turn": data["view"]["turn"]}
                started = client.post(f"/api/games/{data['game_id']}/move", json=move)
    finally:
        del os.environ["BAD_MODE"]
    assert started.status_code == 500, started.text
    error = started.json()["error"]
    assert f"agent {spec!r} in seat 1 " in error and SAYS[mode] in error, error
    assert any(SAYS[mode] in record.getMessage() for record in caplog.records)
    assert client.get("/api/agents").status_code == 200  # the server goes on
    fine = client.post("/api/games", json={**body, "opponents": ["greedy"]})
    assert fine.status_code == 200, fine.text


def test_a_failing_evaluation_opponent_stops_training_in_one_line_and_the_run_resumes(
    folder, capsys, monkeypatch
):
    """An outside agent that raises in training's evaluation games: one line naming it (not a
    silent exit 130, the code of a Ctrl-C), exit 2, and the checkpoint kept for --resume."""
    from odin_lab.commands import train

    monkeypatch.chdir(folder)
    monkeypatch.syspath_prepend(str(folder))
    tiny = ["--runs-dir", str(folder / "runs"), "--name", "f", "--algo", "dmc", "--opponents",
            "random", "--selfplay-batch", "8", "--decisions-per-update", "64", "--batch-size",
            "16", "--net", "16", "--eval-deals", "1", "--threshold", "5", "--total-steps",
            "200", "--eval-every", "64"]  # fmt: skip
    assert train.main([*tiny, "--eval-opponents", "bad.py:Agent"]) == 2
    lines = capsys.readouterr().err.replace("\r", "\n").splitlines()
    said = [line for line in lines if line.strip() and "%|" not in line]  # no progress bar
    assert len(said) == 1 and "bad.py:Agent' in seat" in said[0], said
    assert SAYS["raise"] in said[0] and "--resume" in said[0], said
    assert (folder / "runs" / "f" / "checkpoint.safetensors").exists()
