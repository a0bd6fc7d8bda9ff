"""The command-line tools' entry points (``train.py``, ``evaluate.py``, ``play.py`` and the
console scripts ``odin-train``, ``odin-evaluate``, ``odin-play``): :func:`run` imports a command's
module and runs its ``main``, with no traceback from a signal and one line for a missing extra.

This module imports the standard library alone (its signal handling), so that it loads at once: from
its first line until the command's modules are loaded (torch takes seconds), and again once the
command has returned, Ctrl-C or a plain ``kill`` ends the process quietly (exit 130, or the
command's own code once it has one) instead of raising ``KeyboardInterrupt`` in an import or in
the interpreter's shutdown (ignored in its last teardown, where Python would put back the killing
default). While the command runs, both raise ``KeyboardInterrupt`` as before, and
each command keeps its finished work. A module of an extra that the install lacks is one line
naming the extra to install (exit 2).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path

INTERRUPTED = 130
EXTRAS = {
    "torch": "train",
    "stable_baselines3": "train",
    "sb3_contrib": "train",
    "tensorboard": "train",
    "matplotlib": "eval",
    "scipy": "eval",
    "openskill": "eval",
    "tqdm": "eval",
    "fastapi": "web",
    "uvicorn": "web",
    "ray": "ray",
}
"""The top-level module of each optional dependency, mapped to the extra of pyproject.toml that
installs it."""
_exit_code = INTERRUPTED


def program(script: str) -> str:
    """The name a tool's messages start with: the console script the user ran (``odin-train``),
    else ``script`` (``train.py``, also when the tool is called from Python)."""
    typed = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else ""
    return typed if typed.startswith("odin-") else script


def _quit(signum: int, frame: object) -> None:
    # os._exit: no Python code runs after it, where a second signal could raise again; what
    # was printed is flushed first (a reentrant flush is skipped, not raised).
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(BaseException):  # nothing may escape a quiet exit
            stream.flush()
    os._exit(_exit_code)


def quiet_signals() -> None:
    """From now on, Ctrl-C (SIGINT) and ``kill`` (SIGTERM) end the process at once, quietly."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, _quit)


def _ignore_signals() -> None:
    # Python's shutdown puts SIGINT and SIGTERM back to their defaults (a signal would then kill
    # the process, exit -2) unless they are ignored; registered first, this runs after every
    # other exit handler (the worker pools' joins), when only the interpreter's teardown is left.
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, signal.SIG_IGN)


atexit.register(_ignore_signals)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def restore_interrupts() -> None:
    """Make Ctrl-C (SIGINT) and a plain ``kill`` (SIGTERM) raise ``KeyboardInterrupt``, so a
    command keeps its finished work either way. Why: a background launch (``nohup ... &``, a CI
    runner) inherits an ignored SIGINT."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_interrupt)


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """The extra that installs the module ``error`` did not find, or None (not an extra's)."""
    return EXTRAS.get((error.name or "").split(".")[0])


def run(module: str, script: str, term: bool = True) -> int:
    """Import ``module`` and return its ``main()``'s exit code; ``script``: the tool's name in a
    message. ``term``: SIGTERM raises ``KeyboardInterrupt`` while the command runs, as Ctrl-C
    does (False: it ends the process, as by default)."""
    global _exit_code
    term_before = signal.getsignal(signal.SIGTERM)
    quiet_signals()
    try:
        main: Callable[[], int] = importlib.import_module(module).main
        restore_interrupts()
        if not term:
            signal.signal(signal.SIGTERM, term_before)
        try:
            code = main()
        except KeyboardInterrupt:
            code = INTERRUPTED
    except ModuleNotFoundError as error:
        quiet_signals()
        extra = missing_extra(error)
        if extra is None:
            raise
        top = (error.name or "").split(".")[0]
        print(
            f"{program(script)}: error: {top} is not installed; it comes with the "
            f"'{extra}' extra: pip install 'odin-lab[{extra}]'",
            file=sys.stderr,
        )
        code = 2
    quiet_signals()
    _exit_code = code if isinstance(code, int) else 0
    return code


def train() -> int:
    """``odin-train``: :mod:`odin_lab.commands.train`."""
    return run("odin_lab.commands.train", "train.py")


def evaluate() -> int:
    """``odin-evaluate``: :mod:`odin_lab.commands.evaluate`."""
    return run("odin_lab.commands.evaluate", "evaluate.py")


def play() -> int:
    """``odin-play``: :mod:`odin_lab.commands.play` (SIGTERM ends it, as before)."""
    return run("odin_lab.commands.play", "play.py", term=False)


__all__ = [
    "EXTRAS",
    "evaluate",
    "play",
    "program",
    "quiet_signals",
    "restore_interrupts",
    "run",
    "train",
]
