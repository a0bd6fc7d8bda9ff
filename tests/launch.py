"""A command launched as ``nohup ... &`` or a CI runner launches it (SIGINT ignored), then sent
SIGINT once it has done some work: :func:`interrupt_when`. A helper of the tests, not a test."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path


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
        [sys.executable, *argv], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
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
