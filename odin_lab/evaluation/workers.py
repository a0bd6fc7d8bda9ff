"""Worker processes for the tournaments and the leaderboard, which a Ctrl-C ends at once.

Not ``multiprocessing.Pool``: its ``terminate()`` can hang for ever (CPython issue #78178, open
since 2018): it takes the lock of the task queue that every worker shares, and a worker waiting
for a task holds it. A Ctrl-C during a tournament ends the pool with ``terminate()``, so now
and then the command hung instead of saving the games finished. Here each worker has a pipe of
its own and no lock is shared: ending them is a SIGTERM to each, whatever they are doing.

The workers are started with ``spawn`` (torch, inside the network agents, is not fork-safe)
and with SIGINT ignored from their first instruction: Ctrl-C reaches the whole process group,
and only the parent handles it. SIGTERM ends a worker at once.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import signal
import traceback
from collections.abc import Callable, Iterable, Iterator
from multiprocessing.connection import Connection, wait
from typing import Any

from odin_lab.evaluation.processes import started_ignoring_ctrl_c

STOP_WAIT_S = 5.0
"""How long an ended worker may take to exit on SIGTERM before it is killed."""


class WorkerError(RuntimeError):
    """A task raised an exception in a worker that could not be sent back as it was."""


class WorkerDiedError(KeyboardInterrupt):
    """A worker ended without answering (killed, or out of memory). A ``KeyboardInterrupt``,
    so that what keeps the finished work on Ctrl-C (a tournament's deals, a study's rows, a
    leaderboard's tables) keeps it here too; the commands name it and exit 1, not 130."""


def _serve(conn: Connection, initializer: Callable[..., None] | None, initargs: tuple) -> None:
    """A worker's loop: ``(index, function, task)`` in, ``(index, ok, result or error)`` out,
    until ``None``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent alone handles Ctrl-C
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # even where the parent ignored it
    if initializer is not None:
        initializer(*initargs)
    while (message := conn.recv()) is not None:
        index, function, task = message
        try:
            answer = (index, True, function(task))
        except Exception as error:  # sent back, raised in the parent
            answer = (index, False, error)
        try:
            conn.send(answer)
        except Exception:  # an exception or a result that does not pickle
            text = "".join(traceback.format_exception(answer[2])) if not answer[1] else ""
            conn.send((index, False, WorkerError(text or "a result that cannot be pickled")))


class Workers:
    """``processes`` worker processes, each running ``initializer(*initargs)`` once. Use as a
    context manager: leaving the block normally lets the workers finish and exit; leaving it
    by an exception (``KeyboardInterrupt`` included) ends them at once with SIGTERM."""

    def __init__(
        self,
        processes: int,
        initializer: Callable[..., None] | None = None,
        initargs: tuple = (),
    ) -> None:
        if processes < 1:
            raise ValueError(f"processes must be >= 1; got {processes}")
        context = mp.get_context("spawn")
        self._conns: list[Connection] = []
        self._procs: list[Any] = []
        with started_ignoring_ctrl_c():
            for _ in range(processes):
                here, there = context.Pipe()
                proc = context.Process(
                    target=_serve, args=(there, initializer, initargs), daemon=True
                )
                proc.start()
                there.close()
                self._conns.append(here)
                self._procs.append(proc)

    def imap(
        self, function: Callable[[Any], Any], tasks: Iterable[Any], ordered: bool = True
    ) -> Iterator[Any]:
        """``function(task)`` of each task, run by the workers one task each at a time: in the
        tasks' order (``ordered``), else as they finish. A task's exception is raised here;
        :class:`WorkerDiedError` when a worker ends without answering."""
        pending = enumerate(tasks)
        busy: dict[Connection, int] = {}  # a worker's pipe -> the task it runs
        idle = list(self._conns)
        finished: dict[int, Any] = {}
        following = 0  # the next index to yield in order
        while True:
            while idle and (item := next(pending, None)) is not None:
                conn = idle.pop()
                try:
                    conn.send((item[0], function, item[1]))
                except OSError:
                    raise self._died(conn) from None
                busy[conn] = item[0]
            if not busy:
                return
            # A worker that dies closes its end of the pipe: readable, then EOFError.
            for conn in wait(list(busy)):
                try:
                    index, ok, value = conn.recv()
                except (EOFError, OSError):
                    raise self._died(conn) from None
                del busy[conn]
                idle.append(conn)
                if not ok:
                    raise value
                finished[index] = value
            while finished and (not ordered or following in finished):
                yield finished.pop(following if ordered else next(iter(finished)))
                following += 1

    def _died(self, conn: Connection) -> WorkerDiedError:
        proc = self._procs[self._conns.index(conn)]
        proc.join(STOP_WAIT_S)
        return WorkerDiedError(f"a worker ended without answering (exit code {proc.exitcode})")

    def close(self) -> None:
        """Let every worker finish and exit."""
        for conn in self._conns:
            with contextlib.suppress(OSError):  # it has ended already
                conn.send(None)
        for proc in self._procs:
            proc.join()
        self._release()

    def terminate(self) -> None:
        """End every worker now (SIGTERM, then SIGKILL after :data:`STOP_WAIT_S`)."""
        for proc in self._procs:
            if proc.exitcode is None:
                proc.terminate()
        for proc in self._procs:
            proc.join(STOP_WAIT_S)
            if proc.exitcode is None:
                proc.kill()
                proc.join()
        self._release()

    def _release(self) -> None:
        for conn in self._conns:
            conn.close()
        for proc in self._procs:
            proc.close()
        self._conns, self._procs = [], []

    def __enter__(self) -> Workers:
        return self

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            self.close()
        else:
            self.terminate()


__all__ = ["STOP_WAIT_S", "WorkerDiedError", "WorkerError", "Workers"]
