"""Ray for the lab's large jobs: connecting to a cluster, and running tasks whose results come
back in order.

Ray is optional (the ``ray`` extra): this module imports it only inside its functions, and
:func:`require_ray` turns its absence into one line saying how to install it. Tournaments
(:func:`odin_lab.evaluation.tournament.play_tournament` with ``ray=``) and training rollouts
(:mod:`odin_lab.training.actors`) use it; neither writes a scheduler of its own: Ray places the
tasks, re-runs a task whose worker died (``max_retries``) and moves the data.

Addresses (``--ray [ADDRESS]`` in both CLIs): ``local`` starts a Ray instance for this process
alone (stopped when it exits), with the CPUs asked for; anything else is handed to
``ray.init(address=...)``: ``auto`` (the cluster that ``ray start`` started on this machine),
``HOST:PORT`` (a cluster's head, this machine being one of its nodes) or
``ray://HOST:10001`` (Ray Client). Every node must have the lab installed (the same commit).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Callable, Iterable, Iterator
from typing import Any

LOCAL = "local"
"""The address that starts a Ray instance for this process."""
INSTALL = "pip install -e '.[ray]'"
RETRIES = 3
"""Times a task is re-run when the worker running it dies (Ray's ``max_retries``)."""
LOCAL_STARTS = 2
"""Times a local instance is started before its failure is raised: Ray waits a fixed 30 s for
its node to register, which a busy machine can miss (measured: 43 s, then 36 s on the second
start, with both of a 2-core machine's cores busy)."""
SLOW_START = "timed out during startup"
"""Ray's words (a bare ``Exception``) when its node missed that wait."""


def require_ray() -> None:
    """``ValueError`` (one line: how to install it) when Ray is not installed."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ValueError(f"--ray needs Ray, an optional extra: install it with {INSTALL}") from None


def is_local(address: str | None) -> bool:
    """Whether ``address`` asks for a Ray instance of this process's own (``local`` or empty)."""
    return not address or address == LOCAL


def connect(address: str | None = LOCAL, cpus: int | None = None) -> int:
    """Connect this process to Ray at ``address`` (see the module docstring); return the CPUs of
    the cluster. ``cpus``: the CPUs of a local instance (``None``: all of this machine's); a
    cluster has its own. A process already connected stays on its cluster, whatever
    ``address`` says (so a study's many tournaments share one local instance). A local
    instance whose node missed Ray's start-up wait is started again (:data:`LOCAL_STARTS`).
    ``ValueError`` when Ray is missing or ``cpus`` is not a positive integer."""
    require_ray()
    import ray

    if cpus is not None and (isinstance(cpus, bool) or not isinstance(cpus, int) or cpus < 1):
        raise ValueError(f"cpus must be a positive integer or None (all); got {cpus!r}")
    if not ray.is_initialized():
        # Quiet: Ray's start-up chatter is not the job's output; its errors still show.
        quiet = {"logging_level": logging.ERROR, "include_dashboard": False}
        if is_local(address):
            for start in range(1, LOCAL_STARTS + 1):
                try:
                    ray.init(address=LOCAL, num_cpus=cpus, **quiet)
                    break
                except Exception as error:
                    if SLOW_START not in str(error) or start == LOCAL_STARTS:
                        raise
                    ray.shutdown()  # the processes of the start that missed the wait
        else:
            _check_reachable(address)
            try:
                ray.init(address=address, **quiet)
            except (ConnectionError, RuntimeError) as error:
                first = (str(error).strip().splitlines() or [""])[0]
                raise ValueError(f"--ray {address}: {first}") from None
    return max(1, int(ray.cluster_resources().get("CPU", 1)))


def _check_reachable(address: str) -> None:
    """``ValueError`` when ``HOST:PORT`` (or ``ray://HOST:PORT``) refuses a connection: Ray
    itself would retry for minutes. ``auto`` is Ray's to resolve."""
    if address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(
            f"--ray {address!r}: give no address (a local Ray), auto, HOST:PORT or ray://HOST:PORT"
        )
    try:
        socket.create_connection((host, int(port)), timeout=10).close()
    except OSError as error:
        raise ValueError(
            f"--ray {address}: no Ray cluster answers there ({error.strerror or error}); "
            "start one with `ray start --head`"
        ) from None


def run_task(fn: Callable[[Any], Any], item: Any) -> Any:
    """What each task of :func:`map_ordered` runs (a worker running one is titled
    ``ray::run_task``)."""
    return fn(item)


_remote_task: Any = None


def _remote() -> Any:
    """:func:`run_task` as a Ray task, made once per process (Ray must be connected)."""
    global _remote_task
    if _remote_task is None:
        import ray

        _remote_task = ray.remote(max_retries=RETRIES)(run_task)
    return _remote_task


def map_ordered(
    fn: Callable[[Any], Any],
    items: Iterable[Any],
    on_result: Callable[[Any], None] | None = None,
    window: int = 8,
) -> Iterator[Any]:
    """``fn(item)`` for every item, each as one Ray task on the connected cluster; yields the
    results in the items' order.

    ``fn`` must be a module-level function (workers import it by name) and deterministic: a
    task whose worker dies is run again (up to :data:`RETRIES` times) and its result replaces
    the lost one. ``on_result(result)`` runs as each result arrives, in any order (a progress
    bar). At most ``window`` results are in flight or waiting for an earlier one, which bounds
    the memory held. An exception in ``fn`` is raised here in its item's order, after the
    results of the items before it (Ray's wrapper of it: an instance of its class, whose
    attributes are its); no item after it is started. On any exit before the end (that error,
    the caller stopping) the tasks still running are cancelled; on Ctrl-C they are left to end
    (see the comment below)."""
    import ray

    if window < 1:
        raise ValueError(f"window must be >= 1; got {window}")
    remote, todo = _remote(), list(items)
    running: dict[Any, int] = {}  # task -> its item's index
    arrived: dict[int, Any] = {}
    submitted = following = 0
    first_error = len(todo)  # the index of the first item whose fn raised, once one has
    try:
        while following < len(todo):
            while submitted < first_error and len(running) + len(arrived) < window:
                running[remote.remote(fn, todo[submitted])] = submitted
                submitted += 1
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                index = running.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayTaskError as error:
                    arrived[index] = _Raised(error)
                    first_error = min(first_error, index)
                    continue
                arrived[index] = result
                if on_result is not None:
                    on_result(result)
            while following in arrived:
                result = arrived.pop(following)
                if isinstance(result, _Raised):
                    raise result.error
                yield result
                following += 1
    except KeyboardInterrupt:
        # Not cancelled: a cancel that races a task's reply aborts the driver in Ray 2.x (its
        # check "Tried to complete task that was not pending", ray-project/ray#54798), before
        # the work done is saved, and a Ctrl-C is the likeliest moment for the race: a
        # terminal's reaches the local workers too. A cluster elsewhere finishes at most
        # ``window`` tasks, which are dropped.
        running.clear()
        raise
    finally:
        if running:  # fetch the errors of tasks already ended, or Ray logs them as unhandled
            ended, _ = ray.wait(list(running), num_returns=len(running), timeout=0)
            for ref in ended:
                with contextlib.suppress(Exception):
                    ray.get(ref)
                del running[ref]
        for ref in running:
            # force: stop the work itself (the worker process is replaced), not just the wait.
            ray.cancel(ref, force=True)


class _Raised:
    """An item's exception, held in :func:`map_ordered` until the items before it are given."""

    def __init__(self, error: BaseException):
        self.error = error


__all__ = ["INSTALL", "LOCAL", "RETRIES", "connect", "is_local", "map_ordered", "require_ray"]
