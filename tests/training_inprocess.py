"""The commands of ``train.py``, ``evaluate.py`` and ``play.py`` called in this process (main): a
refusal checked without the ~4 s a ``python train.py`` process takes before it checks anything
(the torch import). The tests of training, setting ranges, DMC, CEM, symmetries and model files
keep one real ``train.py`` process per refusal test to keep the script's path tested. A helper of
those tests, not a test."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import subprocess
from collections.abc import Sequence
from pathlib import Path


def train_main(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python train.py ARGS`` as a ``CompletedProcess`` (exit code, stdout, stderr), run as
    ``odin_lab.commands.train.main``: an argparse refusal (``SystemExit``) gives its code; the
    signal handlers the command sets are put back, and so is the working folder."""
    from odin_lab.commands.train import main

    return _call(main, [str(a) for a in args], cwd)


def _call(main, argv: Sequence[str], cwd: Path | None) -> subprocess.CompletedProcess:
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    before = os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        if cwd is not None:
            os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(argv))
            except SystemExit as stop:
                code = stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
    finally:
        os.chdir(before)
        for signum, handler in handlers.items():
            signal.signal(signum, signal.SIG_DFL if handler is None else handler)
    return subprocess.CompletedProcess(["train.py", *argv], code, out.getvalue(), err.getvalue())


def evaluate_main(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python evaluate.py ARGS`` as :func:`train_main` runs ``train.py``'s command."""
    from odin_lab.commands.evaluate import main

    return _call(main, [str(a) for a in args], cwd)


def play_main(*args: object, cwd: Path | None = None) -> subprocess.CompletedProcess:
    """``python play.py ARGS`` as :func:`train_main` runs ``train.py``'s command."""
    from odin_lab.commands.play import main

    return _call(main, [str(a) for a in args], cwd)
