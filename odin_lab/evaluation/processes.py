"""Starting helper processes that a Ctrl-C must not reach (:func:`started_ignoring_ctrl_c`).

The tournaments' worker pools (:mod:`odin_lab.evaluation.workers`) and the kernels' compile
helper (:mod:`odin_lab.evaluation.warm`) both start their processes this way.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def started_ignoring_ctrl_c() -> Iterator[None]:
    """Start worker processes in the block with SIGINT ignored from their first instruction:
    Ctrl-C reaches the whole process group, and a worker still importing (before its
    initializer ignores it) would print a ``KeyboardInterrupt`` traceback. An ignored signal
    stays ignored across ``exec``, and Python then installs no handler of its own. A Ctrl-C in
    this process while the block runs (the few ms of starting them) is dropped."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


__all__ = ["started_ignoring_ctrl_c"]
