"""A command launched as ``nohup ... &`` or a CI runner launches it (SIGINT ignored), then sent
SIGINT once it has done some work: :func:`interrupt_when`; a training run killed with SIGKILL
while its evaluation log runs ahead of its checkpoint: :func:`kill_9_ahead_of_checkpoint`. A
helper of the tests, not a test."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from odin_lab.training.checkpoints import checkpoint_step


def interrupt_when(
    argv: Sequence[str],
    ready: Callable[[], bool],
    cwd: Path,
    settle: float = 0.0,
    wait: float = 180.0,
) -> subprocess.CompletedProcess:
    """Run ``python argv`` in the background with SIGINT ignored; once ``ready()`` (polled every
    0.5 s, for at most ``wait`` s; an ``AssertionError`` if never) and ``settle`` s more, send it
    SIGINT and return what it printed and its exit code. It never outlives the call."""
    process = subprocess.Popen(
        [sys.executable, *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        deadline = time.monotonic() + wait
        while not ready() and time.monotonic() < deadline:
            time.sleep(0.5)
        assert ready(), f"{' '.join(map(str, argv))}: not ready within {wait:.0f} s"
        time.sleep(settle)
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def evaluation_log(run: Path) -> list[dict]:
    """The entries of a run's ``evaluations.jsonl`` (none before it exists)."""
    path = run / "evaluations.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def kill_9_ahead_of_checkpoint(
    argv: Sequence[object], run: Path, cwd: Path, tries: int = 3, wait: float = 180.0
) -> tuple[int, list[dict]]:
    """Run ``python argv`` (a training run writing to ``run``) in a session of its own and
    SIGKILL it all once its evaluation log has an entry past its checkpoint's step; return that
    step and the log as the kill left them. A checkpoint may land between the look and the kill:
    then the run folder is removed and it is launched again, at most ``tries`` times (the caller
    asserts the log is ahead)."""
    checkpoint = run / "checkpoint.safetensors"
    for _ in range(tries):
        shutil.rmtree(run, ignore_errors=True)
        process = subprocess.Popen(
            [sys.executable, *map(str, argv)],
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # its workers die with it
        )
        deadline = time.monotonic() + wait
        try:
            while time.monotonic() < deadline:
                if checkpoint.exists():
                    steps = [e["step"] for e in evaluation_log(run)]
                    if steps and steps[-1] > checkpoint_step(checkpoint):
                        break
                time.sleep(0.05)
        finally:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=60)
        saved, before = checkpoint_step(checkpoint), evaluation_log(run)
        if before and before[-1]["step"] > saved:
            break
    return saved, before
