"""A run's files always agree: after ``kill -9`` at any moment and ``--resume``, the checkpoint,
``evaluations.jsonl`` and the best model describe one history; a resume refuses a checkpoint of
other settings; ``--total-steps`` and the step count saved on SIGTERM mean trained decisions; a
run that fails to start leaves nothing behind. Real ``train.py`` runs in subprocesses where a test
is about the process (a kill, a signal) and once for each path (a run, a batched run, a resume, a
refusal); the other resumes through the command's ``main`` in this process, which saves each the
seconds a ``train.py`` process spends importing torch."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from functools import partial
from pathlib import Path

import pytest
from launch import evaluation_log, kill_9_ahead_of_checkpoint
from training_inprocess import train_main

from odin_lab.training.checkpoints import checkpoint_step, read_run

ROOT = Path(__file__).resolve().parents[1]
ROLLOUT = 64  # n_envs x n_steps below: the least an update trains on
BATCHED = [
    "--algo", "ppo", "--opponents", "learner", "--selfplay-batch", "8", "--n-envs", "2",
    "--n-steps", "32", "--batch-size", "64", "--n-epochs", "1", "--net-pi", "32",
    "--net-vf", "32", "--eval-deals", "1", "--eval-opponents", "random",
]  # fmt: skip
TINY = ["--algo", "ppo", "--opponents", "random", *BATCHED[4:]]  # the learner against random
MOST_PER_UPDATE = 64 + 8 * 4


def train(*args: object, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def train_here(capsys, *args: object) -> subprocess.CompletedProcess:
    """``train.py args`` through the command's ``main`` in this process (its exit code and what
    it printed), instead of a process that spends seconds importing torch first."""
    from odin_lab.commands import train as command

    capsys.readouterr()
    code = command.main([str(arg) for arg in args])
    said = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, said.out, said.err)


def start(*args: object) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, str(ROOT / "train.py"), *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its env workers are in its group: a signal reaches them all
    )


log = evaluation_log


def best_score(run: Path) -> float:
    return json.loads((run / "best.json").read_text())["score"]


@pytest.fixture(scope="module")
def done_run(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    done = train(
        "--runs-dir",
        runs,
        "--name",
        "done",
        "--total-steps",
        200,
        *TINY,
        "--checkpoint-every",
        64,
        "--eval-every",
        64,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (runs / "stdout.txt").write_text(done.stdout)
    (runs / "stderr.txt").write_text(done.stderr)
    return runs / "done"


def copy_run(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file():
            (target / item.name).write_bytes(item.read_bytes())
    return target


def test_kill_9_between_an_evaluation_and_the_next_checkpoint_then_resume(tmp_path):
    """Evaluations every rollout, checkpoints every 8: a SIGKILL after an evaluation that no
    checkpoint covers yet. The resume rolls the log back to the checkpoint, and the best score
    on record never goes down."""
    run = tmp_path / "k"
    saved, before = kill_9_ahead_of_checkpoint(
        [ROOT / "train.py", "--runs-dir", tmp_path, "--name", "k", "--total-steps", 10**7, *TINY,
         "--eval-every", ROLLOUT, "--checkpoint-every", 8 * ROLLOUT],
        run, ROOT,
    )  # fmt: skip
    checkpoint = run / "checkpoint.safetensors"
    assert before[-1]["step"] > saved  # the log ran ahead of the checkpoint when it died
    best_before = best_score(run)
    done = train_main("--resume", run, "--total-steps", saved + 2 * ROLLOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    final = checkpoint_step(checkpoint)
    assert saved + 2 * ROLLOUT <= final < saved + 2 * ROLLOUT + MOST_PER_UPDATE
    steps = [e["step"] for e in log(run)]
    assert steps == sorted(steps) and len(set(steps)) == len(steps)
    assert all(step <= final for step in steps)
    # The kept history is the checkpoint's: every entry up to its step, as the log had them.
    assert [e for e in log(run) if e["step"] <= saved] == [e for e in before if e["step"] <= saved]
    assert read_run(checkpoint)[1].evaluations == log(run)
    assert best_score(run) >= best_before
    assert read_run(checkpoint)[1].best_score >= best_before


def test_a_resume_never_replaces_a_better_best_model_on_record(done_run, tmp_path):
    run = copy_run(done_run, tmp_path / "r")
    (run / "best.json").write_text(json.dumps({"score": 2.0, "step": 0}))  # beyond any score
    best = (run / "best.safetensors").read_bytes()
    target = checkpoint_step(run / "checkpoint.safetensors") + 2 * ROLLOUT
    done = train_main("--resume", run, "--total-steps", target)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(log(run)) > len(log(done_run))  # it evaluated again ...
    assert (run / "best.safetensors").read_bytes() == best  # ... and kept the better model
    assert best_score(run) == 2.0


def test_a_best_model_ahead_of_the_checkpoint_is_set_aside_on_resume(done_run, tmp_path):
    """A kill between a new best model and the checkpoint that covers it leaves a best model of
    a step the resume abandons: it is kept under its own name, and the run's best is again of
    its one history."""
    run = copy_run(done_run, tmp_path / "r")
    saved = checkpoint_step(run / "checkpoint.safetensors")
    ahead = saved + 1000
    best = (run / "best.safetensors").read_bytes()
    (run / "best.json").write_text(json.dumps({"score": 2.0, "step": ahead, "model": "x"}))
    # A real train.py --resume (the other resumes here run the command in this process).
    done = train("--resume", run, "--total-steps", saved + 2 * ROLLOUT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"kept as best-of-step-{ahead}.safetensors" in done.stdout
    assert (run / f"best-of-step-{ahead}.safetensors").read_bytes() == best
    record = json.loads((run / "best.json").read_text())
    final = checkpoint_step(run / "checkpoint.safetensors")
    assert record["step"] <= final and record["step"] in [e["step"] for e in log(run)]


def test_resume_refuses_a_checkpoint_of_other_settings_naming_the_field(done_run, tmp_path):
    run = copy_run(done_run, tmp_path / "r")
    config = json.loads((run / "config.json").read_text())
    config["ppo"]["gamma"] = 0.9
    (run / "config.json").write_text(json.dumps(config))
    done = train("--resume", run, "--total-steps", 10_000)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "gamma" in lines[0] and "differs from config.json" in lines[0]


def test_total_steps_stops_at_the_first_update_at_or_past_it(done_run):
    step = checkpoint_step(done_run / "checkpoint.safetensors")
    assert 200 <= step < 200 + MOST_PER_UPDATE
    stderr = (done_run.parent / "stderr.txt").read_text()
    assert "first update >= 200" in stderr
    steps = [e["step"] for e in log(done_run)]
    assert len(steps) >= 2 and steps == sorted(set(steps)) and steps[-1] == step


def test_the_final_evaluation_says_what_happened_and_what_to_do_next(done_run):
    """Its win share with the interval and the fair share, and the command that evaluates the
    best model, which exists."""
    stdout = (done_run.parent / "stdout.txt").read_text()
    step = checkpoint_step(done_run / "checkpoint.safetensors")
    assert f"final evaluation at step {step:,}" in stdout
    said = re.search(r"random (\d+\.\d)% \[(\d+\.\d)%, (\d+\.\d)%\] over 4 games", stdout)
    assert said, stdout
    low, rate, high = float(said[2]), float(said[1]), float(said[3])
    assert low <= rate <= high and "(fair share 25%)" in stdout
    best = done_run / "best.safetensors"
    assert f"next: python evaluate.py tournament --agents ppo:{best} planner" in stdout
    assert best.is_file()


def test_batched_total_steps_and_its_progress_bar(tmp_path):
    done = train(
        "--runs-dir",
        tmp_path,
        "--name",
        "b",
        "--total-steps",
        100,
        *BATCHED,
        "--checkpoint-every",
        64,
        "--eval-every",
        0,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    step = checkpoint_step(tmp_path / "b" / "checkpoint.safetensors")
    assert 100 <= step < 100 + MOST_PER_UPDATE
    assert "first update >= 100" in done.stderr


def test_a_resume_already_at_its_target_says_so_and_changes_nothing(done_run, tmp_path, capsys):
    run = copy_run(done_run, tmp_path / "r")
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    step = checkpoint_step(run / "checkpoint.safetensors")
    done = train_here(capsys, "--resume", run, "--total-steps", 200)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip().count("\n") == 0 and f"already at step {step}" in done.stdout
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before


@pytest.mark.parametrize("bad", ["missing", "other_architecture"])
def test_a_run_that_fails_to_start_leaves_no_folder(done_run, tmp_path, bad, capsys):
    init = tmp_path / "nothing.safetensors"
    if bad == "other_architecture":
        init = done_run / "best.safetensors"  # 32-unit layers; this run asks for 16
    runs = tmp_path / "runs"
    # "missing" as a person runs train.py; "other_architecture" through its main, in this process.
    done = (train if bad == "missing" else partial(train_here, capsys))(
        "--runs-dir",
        runs,
        "--name",
        "x",
        "--init",
        init,
        *TINY,
        "--net-pi",
        16,
        "--net-vf",
        16,
        "--total-steps",
        64,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1 and "--init" in lines[0], done.stderr
    assert not (runs / "x").exists()


def test_sigterm_saves_the_step_count_of_the_last_completed_update(tmp_path):
    """What is saved on SIGTERM is the count the weights were trained on, whole updates."""
    run = tmp_path / "t"
    proc = start(
        "--runs-dir",
        tmp_path,
        "--name",
        "t",
        "--total-steps",
        10**7,
        *TINY,
        "--checkpoint-every",
        ROLLOUT,
        "--eval-every",
        0,
    )
    checkpoint = run / "checkpoint.safetensors"
    deadline = time.monotonic() + 180
    while not checkpoint.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.7)
    os.kill(proc.pid, signal.SIGTERM)  # a plain `kill PID`
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    saved = re.search(r"interrupted at step ([\d,]+): checkpoint saved", stdout)
    assert saved, stdout[-2000:]
    step = int(saved.group(1).replace(",", ""))
    assert checkpoint_step(checkpoint) == step and step >= ROLLOUT


def test_two_ctrl_c_50_ms_apart_save_the_checkpoint_once_without_a_traceback(tmp_path):
    """The second signal waits for the checkpoint the first one asked for: exit 130, one true
    line, and the checkpoint on disk is the one it names."""
    run = tmp_path / "twice"
    proc = start(
        "--runs-dir",
        tmp_path,
        "--name",
        "twice",
        "--total-steps",
        10**7,
        *TINY,
        "--checkpoint-every",
        ROLLOUT,
        "--eval-every",
        0,
    )
    checkpoint = run / "checkpoint.safetensors"
    deadline = time.monotonic() + 180
    while not checkpoint.exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.05)
    os.kill(proc.pid, signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr, stderr[-2000:]
    saved = re.findall(r"interrupted at step ([\d,]+): checkpoint saved", stdout)
    assert len(saved) == 1, stdout[-2000:]
    assert checkpoint_step(checkpoint) == int(saved[0].replace(",", ""))
