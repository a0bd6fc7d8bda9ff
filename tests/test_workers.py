"""The worker processes of the tournaments and the leaderboard (odin_lab.evaluation.workers):
results in order or as they finish, a task's error raised in the parent, a dead worker named
instead of waited for, and Ctrl-C at any moment ending them all at once (multiprocessing.Pool's
terminate() could hang there: CPython issue #78178, seen as a CI run's hung leaderboard)."""

from __future__ import annotations

import os
import random
import signal
import threading
import time

import pytest

from odin_lab.evaluation.workers import WorkerDiedError, WorkerError, Workers


def square(x: int) -> int:
    time.sleep(0.001 * (x % 3))  # finish out of order
    return x * x


def pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


def fail_on_three(x: int) -> int:
    if x == 3:
        raise ValueError(f"no {x}")
    return x


def unpicklable(_: int) -> object:
    return threading.Lock()


def die(_: int) -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_results_in_order_or_as_they_finish_and_every_task_once():
    with Workers(3) as pool:
        assert list(pool.imap(square, range(40))) == [x * x for x in range(40)]
        assert sorted(pool.imap(square, range(40), ordered=False)) == [x * x for x in range(40)]
        assert list(pool.imap(square, [])) == []
    with pytest.raises(ValueError, match="processes must be >= 1; got 0"):
        Workers(0)


def test_the_tasks_are_spread_over_every_worker():
    with Workers(2) as pool:
        pids = set(pool.imap(pid_after, [0.2] * 4, ordered=False))
    assert len(pids) == 2 and os.getpid() not in pids


def test_a_tasks_error_is_raised_here_and_the_workers_are_ended():
    pool = Workers(2)
    pids = set(pool.imap(pid_after, [0.1, 0.1], ordered=False))
    with pytest.raises(ValueError, match="no 3"), pool:
        list(pool.imap(fail_on_three, range(10)))
    assert not any(alive(pid) for pid in pids)
    with Workers(1) as pool, pytest.raises(WorkerError, match="cannot be pickled"):
        list(pool.imap(unpicklable, [0]))


def test_a_worker_killed_mid_task_is_named_not_waited_for():
    start = time.monotonic()
    with Workers(2) as pool, pytest.raises(WorkerDiedError, match=r"exit code -9"):
        list(pool.imap(die, range(4)))
    assert time.monotonic() - start < 30


def test_workers_ignore_ctrl_c_which_only_the_parent_handles():
    with Workers(2) as pool:
        pids = list(pool.imap(pid_after, [0.1, 0.1], ordered=False))
        for pid in pids:
            os.kill(pid, signal.SIGINT)
        assert sorted(pool.imap(square, range(6))) == sorted(x * x for x in range(6))


def test_ctrl_c_at_any_moment_ends_every_worker_at_once():
    """Twelve Ctrl-Cs at seeded random moments of a stream of short tasks: each ends the block
    within seconds with every worker gone (Pool's terminate() hung on such a stream)."""
    rng = random.Random(20261204)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        for trial in range(12):
            pool = Workers(2)
            pids = set(pool.imap(pid_after, [0.05, 0.05], ordered=False))
            timer = threading.Timer(rng.uniform(0, 0.05), os.kill, (os.getpid(), signal.SIGINT))
            served = 0
            with pytest.raises(KeyboardInterrupt), pool:  # noqa: PT012
                timer.start()
                for _ in pool.imap(abs, range(10**7), ordered=bool(trial % 2)):
                    served += 1
            ended = time.monotonic()
            assert served < 10**7
            while any(alive(pid) for pid in pids) and time.monotonic() - ended < 10:
                time.sleep(0.01)
            assert not any(alive(pid) for pid in pids), trial
    finally:
        signal.signal(signal.SIGINT, previous)
