"""A player's failure is a result, not a crash (issue 59, item 2): an outside agent that raises,
answers ``3.7`` or ``"12"``, calls ``sys.exit(0)`` or hangs stops ``evaluate.py tournament`` in
one line naming it, its seat and game; the deals finished are kept (marked partial) with its
traceback in ``OUT/failure.txt``, exit 2, and ``--resume`` with the agent fixed ends with the
records of a run that never failed. Also ``compare``'s small ones (item 8)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from functools import partial
from pathlib import Path

import numpy as np
import pytest
from training_inprocess import evaluate_main

from odin_env.rules import Config
from odin_lab.evaluation.failures import as_action
from odin_lab.evaluation.tournament import PlayerFailed, play_tournament

ROOT = Path(__file__).resolve().parents[1]

AGENT = '''
import multiprocessing, os, sys, time

import numpy as np

MODE = os.environ.get("BAD_MODE", "")
AFTER = int(os.environ.get("BAD_AFTER", "300"))


class Agent:
    """The lowest legal action, until its AFTER-th decision: then what MODE says."""

    def __init__(self):
        self.made = 0

    def act(self, observation, mask):
        self.made += 1
        action = int(np.flatnonzero(mask)[0])
        in_worker = multiprocessing.parent_process() is not None
        if self.made <= AFTER or (MODE.endswith("-in-worker") and not in_worker):
            return action
        mode = MODE.removesuffix("-in-worker")
        if mode == "raise":
            raise RuntimeError("the agent broke")
        if mode == "float":
            return action + 0.7
        if mode == "str":
            return str(action)
        if mode == "exit":
            sys.exit(0)
        if mode == "sleep":
            time.sleep(10**6)
        return action


class Batched(Agent):
    def act_batch(self, obs, mask):
        return np.argmax(mask != 0, axis=1).astype(np.float64)  # floats: refused


class Steady(Agent):
    def act_batch(self, obs, mask):
        return np.argmax(mask != 0, axis=1)


class Breaks(Steady):
    """Steady, until its AFTER-th step: then it raises."""

    def act_batch(self, obs, mask):
        self.made += 1
        if self.made > AFTER:
            raise RuntimeError("the agent broke")
        return super().act_batch(obs, mask)
'''


def evaluate(folder: Path, *args: str, mode: str = "", after: int = 300, workers: int = 1):
    """``evaluate.py`` in a subprocess, in ``folder``, the agent failing as ``mode`` says."""
    return subprocess.run(
        [
            sys.executable,
            str(ROOT / "evaluate.py"),
            *args,
            "--workers",
            str(workers),
            "--no-progress",
        ],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "BAD_MODE": mode, "BAD_AFTER": str(after)},
    )


def evaluate_here(
    monkeypatch, folder: Path, *args: str, mode: str = "", after: int = 300, workers: int = 1
):
    """:func:`evaluate` through the command's ``main`` in this process (the ~2 s of imports a
    process spends first saved), its output and exit code as a ``CompletedProcess``; the
    agent's environment set as :func:`evaluate` sets it (its workers inherit it)."""
    monkeypatch.setenv("BAD_MODE", mode)
    monkeypatch.setenv("BAD_AFTER", str(after))
    return evaluate_main(*args, "--workers", workers, "--no-progress", cwd=folder)


TOURNAMENT = (
    "tournament",
    "--agents",
    "bad.py:Agent",
    "planner",
    "planner",
    "planner",
    "--games",
    "40",
)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    (tmp_path / "bad.py").write_text(AGENT)
    return tmp_path


def games_of(path: Path) -> list[dict]:
    return json.loads(path.read_text())["game_records"]


def check_failed(done, out: Path, said: str) -> int:
    """One line, exit 2, naming the agent, its seat and game and what it did; the traceback
    file there; the deals kept (marked partial): their count."""
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    line = done.stderr
    assert line.startswith("evaluate.py tournament: error: agent '") and "bad.py:Agent'" in line
    assert " in seat " in line and " of deal " in line and " rotation " in line and said in line
    assert f"its traceback is in {out.name}/failure.txt" in line
    assert said in (out / "failure.txt").read_text()
    kept = json.loads((out / "tournament.json").read_text())
    assert kept["partial"] is True and kept["games"] > 0 and "add --resume" in line
    return kept["games"]


@pytest.mark.parametrize(
    ("mode", "said"),
    [
        ("raise", "raised RuntimeError: the agent broke"),
        ("float", "chose 0.7: a float, not an integer action"),
        ("str", "chose '0': a str, not an integer action"),
        ("exit", "called sys.exit(0)"),
    ],
)
def test_a_failing_agent_keeps_the_finished_deals_in_one_line(folder, mode, said, monkeypatch):
    if mode in ("float", "str"):  # the lowest legal action is not always 0
        said = said.split(": ", 1)[1]
    # An action of the wrong type through the command's main in this process; an agent that
    # raises or exits in a real evaluate.py, as a person runs it.
    if mode in ("float", "str"):
        done = evaluate_here(monkeypatch, folder, *TOURNAMENT, "--out", "out", mode=mode)
    else:
        done = evaluate(folder, *TOURNAMENT, "--out", "out", mode=mode)
    check_failed(done, folder / "out", said)


def test_a_hung_agent_is_stopped_by_the_decision_limit(folder):
    done = evaluate(folder, *TOURNAMENT, "--out", "out", "--decision-limit", "1", mode="sleep")
    check_failed(done, folder / "out", "took over 1 s on one decision (--decision-limit)")


@pytest.mark.parametrize(("workers", "mode"), [(1, "raise"), (2, "raise-in-worker")])
def test_resume_after_the_agent_is_fixed_gives_the_games_of_a_run_that_never_failed(
    folder, workers, mode, monkeypatch
):
    # Two workers: this process plays deals 0-7 (kept), a worker deals 8-9 and fails there.
    after = 50 if workers == 2 else 300
    done = evaluate(folder, *TOURNAMENT, "--out", "out", mode=mode, after=after, workers=workers)
    kept = check_failed(done, folder / "out", "raised RuntimeError: the agent broke")
    assert kept == 32 if workers == 2 else 0 < kept < 40
    # The resume and the run that never failed through the command's main in this process
    # (a real evaluate.py --resume: test_results_kept); the games do not depend on the workers.
    fixed = evaluate_here(monkeypatch, folder, *TOURNAMENT, "--out", "out", "--resume",
                          workers=workers)  # fmt: skip
    assert fixed.returncode == 0, fixed.stderr
    assert not (folder / "out" / "failure.txt").exists()
    clean = evaluate_here(monkeypatch, folder, *TOURNAMENT, "--out", "clean")
    assert clean.returncode == 0, clean.stderr
    assert games_of(folder / "out" / "tournament.json") == games_of(
        folder / "clean" / "tournament.json"
    )


def test_a_bad_decision_limit_is_one_line_before_any_folder(folder):
    done = evaluate(folder, *TOURNAMENT, "--out", "out", "--decision-limit", "-1")
    assert done.returncode == 2 and done.stderr.count("\n") == 1
    assert "--decision-limit must be 0 (none) to 86,400 seconds; got -1.0" in done.stderr
    assert not (folder / "out").exists()


def test_actions_are_integers_never_truncated():
    for bad in (3.7, "12", True, None, np.float64(2.0), np.bool_(True)):
        with pytest.raises(ValueError, match="not an integer action"):
            as_action(bad)
    assert as_action(np.int64(12)) == 12 and as_action(np.int32(3)) == 3 and as_action(7) == 7


def test_a_batched_agent_answering_floats_is_named_in_process(folder, monkeypatch):
    monkeypatch.chdir(folder)
    specs = ["bad.py:Batched", "greedy"]
    with pytest.raises(PlayerFailed) as stop:
        play_tournament(specs, Config(players=2), 4, engine="batched", progress=False)
    assert "bad.py:Batched' in seat " in str(stop.value.failure)
    assert "returned float64 actions" in str(stop.value.failure)
    assert stop.value.records == [] and stop.value.deals_done == 0


def test_a_batched_agent_failing_keeps_the_games_its_batch_finished(folder, monkeypatch):
    # 24 games in one batch of 4 slots: the agent breaks at its 300th step, with some of
    # them finished: they are kept (whole deals), the games of a run that never failed.
    monkeypatch.chdir(folder)
    play = dict(engine="batched", batch=4, progress=False)
    clean = play_tournament(["bad.py:Steady", "greedy"], Config(players=2), 12, **play)
    with pytest.raises(PlayerFailed) as stop:
        play_tournament(["bad.py:Breaks", "greedy"], Config(players=2), 12, **play)
    kept = stop.value.records
    assert "bad.py:Breaks' in seat " in str(stop.value.failure)
    assert 0 < len(kept) < len(clean) and len(kept) == 2 * stop.value.deals_done
    assert kept == clean[: len(kept)]


COMPARE = ("compare", "--agents", "greedy", "planner", "--against", "greedy", "--threshold", "5")


def test_compare_resume_with_nothing_to_resume_is_one_line_and_exit_2(folder):
    done = evaluate(folder, *COMPARE, "--games", "4", "--out", "cmp", "--resume")
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "nothing to resume" in done.stderr
    assert not (folder / "cmp").exists()


def test_a_one_deal_compare_says_the_standard_error_needs_two_deals(folder):
    done = evaluate(folder, *COMPARE, "--games", "2", "--out", "cmp")
    assert done.returncode == 0, done.stderr
    assert "nan" not in done.stdout and "needs two deals" in done.stdout
    assert json.loads((folder / "cmp" / "compare.json").read_text())["difference_se"] is None


@pytest.mark.parametrize("workers", [1, 2])
def test_a_failing_agent_in_a_leaderboard_is_one_line_with_its_traceback(
    folder, workers, monkeypatch
):
    agents = ("bad.py:Agent", "planner", "greedy", "random")
    board = ("leaderboard", "--agents", *agents, "--players", "3", "--games", "6", "--out", "lb")
    # One worker through the command's main in this process; two in a real evaluate.py.
    play = evaluate if workers == 2 else partial(evaluate_here, monkeypatch)
    done = play(folder, *board, mode="raise", after=150, workers=workers)
    assert done.returncode == 2, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "bad.py:Agent' in seat " in done.stderr and "the agent broke" in done.stderr
    assert "the agent broke" in (folder / "lb" / "failure.txt").read_text()
