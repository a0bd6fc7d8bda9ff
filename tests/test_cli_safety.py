"""The CLIs never lose work and never show a traceback for bad input (run as a person would:
real subprocesses, Ctrl-C sent to the whole process group as a terminal sends it)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )


def one_line_error(done: subprocess.CompletedProcess, *words: str) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert done.returncode == 2, done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert all(word in lines[0] for word in words), lines[0]


def test_a_negative_seed_is_refused_before_any_game(tmp_path):
    done = run(
        "evaluate.py",
        "tournament",
        "--agents",
        "random",
        "random",
        "--seed",
        "-1",
        "--out",
        str(tmp_path / "x"),
    )
    one_line_error(done, "--seed", ">= 0", "-1")
    assert not (tmp_path / "x").exists()


def test_an_out_that_is_a_file_is_refused_before_any_game(tmp_path):
    out = tmp_path / "taken"
    out.write_text("keep me")
    done = run("evaluate.py", "tournament", "--agents", "random", "random", "--out", str(out))
    one_line_error(done, "--out", "file")
    assert out.read_text() == "keep me"


@pytest.mark.parametrize(
    "args",
    [
        ["evaluate.py", "tournament", "--agents", "random", "random", "--game", "3"],
        ["train.py", "--total-step", "1000"],
    ],
)
def test_abbreviated_flags_are_refused(args):
    done = run(*args)
    assert done.returncode == 2 and "unrecognized arguments" in done.stderr
    assert "Traceback" not in done.stderr


def test_ctrl_c_keeps_the_finished_deals_and_resume_gives_the_uninterrupted_files(tmp_path):
    # 240 games: chunks of 32 (8 deals), the first played by this process and the rest by the
    # workers; Ctrl-C after two chunks leaves five and a half to play.
    common = ["tournament", "--agents", "random", "random", "random", "random", "--games",
              "240", "--engine", "single", "--workers", "2", "--seed", "5"]  # fmt: skip
    part = tmp_path / "part"
    proc = subprocess.Popen(
        [sys.executable, "evaluate.py", *common, "--out", str(part)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    # Ctrl-C once the progress bar shows some games done and before the end, however fast the
    # machine: read the bar as it is drawn.
    shown = ""
    while True:
        char = proc.stderr.read(1)
        if not char:
            pytest.fail(f"the tournament finished before Ctrl-C: {shown[-200:]!r}")
        shown += char
        counts = [int(n) for n in re.findall(r"(\d+)/240", shown)]
        if counts and 40 <= counts[-1] < 180:  # two chunks (this process's and a worker's)
            break
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err and "--resume" in err
    saved = json.loads((part / "tournament.json").read_text())
    assert saved["partial"] is True
    games = len(saved["game_records"])
    assert 0 < games < 240 and games % 4 == 0
    assert [r["deal"] for r in saved["game_records"]][::4] == list(range(games // 4))

    from odin_lab.commands import evaluate

    # The resume in this process (the script's own start is what the Ctrl-C above ran).
    assert evaluate.main([*common, "--out", str(part), "--resume"]) == 0
    whole = tmp_path / "whole"
    done = run("evaluate.py", *common, "--out", str(whole))
    assert done.returncode == 0, done.stderr
    for name in ("tournament.json", "games.csv", "agents.csv"):
        assert (part / name).read_bytes() == (whole / name).read_bytes(), name
    provenance = json.loads((whole / "provenance.json").read_text())
    assert provenance["command"][0] == "evaluate.py" and provenance["numpy"]


def test_resume_refuses_a_result_of_other_settings(tmp_path):
    from odin_lab.commands import evaluate

    out = tmp_path / "t"
    # The complete result to refuse, made in this process; the refusal, by the script.
    argv = ["tournament", "--agents", "random", "random", "--games", "4", "--out", str(out)]
    assert evaluate.main([*argv, "--no-progress"]) == 0
    done = run(
        "evaluate.py",
        "tournament",
        "--agents",
        "random",
        "random",
        "--games",
        "4",
        "--out",
        str(out),
        "--resume",
        "--no-progress",
    )
    one_line_error(done, "--resume", "complete")


def test_the_first_compilation_of_the_batched_engine_is_announced(tmp_path, monkeypatch, capsys):
    import odin_env.batched as batched

    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))  # an empty cache
    monkeypatch.setattr(batched, "_announced", False)
    batched.announce_compilation()
    batched.announce_compilation()
    assert capsys.readouterr().err.count("compiling the batched engine") == 1


def test_two_workers_compile_the_batched_engine_once_and_say_so_once(tmp_path):
    # A cold numba cache, as in a fresh clone: this process compiles the engine's kernels while
    # a process beside it compiles greedy's (odin_lab.evaluation.warm; greedy: the agent kernel
    # quickest to compile, planner's takes three times its CPU), and the two workers load them
    # all (each used to compile and announce them).
    cache = tmp_path / "cache"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [
            sys.executable,
            "evaluate.py",
            "tournament",
            "--agents",
            "greedy",
            "random",
            "--games",
            # 192 games (96 deals rotated): three parts of 64, this process's and one for each
            # worker (each idle worker is sent a part at once), so that both load the kernels.
            "192",
            "--workers",
            "2",
            "--out",
            str(tmp_path / "t"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr.count("compiling the batched engine") == 1, done.stderr
    # The line comes before the progress bar, not inside it.
    assert done.stderr.startswith("odin_env: compiling the batched engine"), done.stderr[:200]
    for kernels in ("_batched_steps.*", "batched_shaper.greedy_kernel-*"):
        assert any(cache.rglob(f"{kernels}.nbi")), f"{kernels} not in the cache"
