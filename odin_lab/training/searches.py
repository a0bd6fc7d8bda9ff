"""The search's tasks, in order, wherever they run: in this process, on local worker processes
(``--workers``) or as Ray tasks across a cluster (``--ray``).

A task is ``(playout, rollouts, rows)``: the search (:func:`agents.search.score_candidates`) of
each ``(observation, searched mask, seed)`` row. Every row carries its own seed, so its scores
are the same in any process and in any split of the rows into tasks, and a task that Ray runs
again after its worker died (:data:`odin_lab.evaluation.distributed.RETRIES`) gives the same
ones. Expert iteration's batches (:mod:`odin_lab.training.exit`) and the labels of
:mod:`odin_lab.training.labels` run through :class:`Searches`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from agents.search import score_candidates
from odin_lab.evaluation.distributed import connect, map_ordered
from odin_lab.evaluation.workers import Workers


def search_rows(task: tuple) -> list:
    """The search's scores of each ``(observation, searched, seed)`` of ``task`` (playout
    policy, rollouts, those rows): a worker's job, and the same in the learner's process."""
    policy, rollouts, rows = task
    return [
        score_candidates(o, searched, rollouts=rollouts, seed=seed, policy=policy)
        for o, searched, seed in rows
    ]


class Searches:
    """Where search tasks run: ``workers`` local processes (1: this process), or, with ``ray``
    (an address, :func:`odin_lab.evaluation.distributed.connect`; a local Ray of ``workers``
    CPUs), Ray tasks on that cluster. ``parts``: how many tasks a batch is best split into (the
    processes, or the cluster's CPUs). ``ValueError`` (one line) when Ray is missing or no
    cluster answers. Use as a context manager, or call :meth:`close`."""

    def __init__(self, workers: int = 1, ray: str | None = None):
        self.ray, self.pool = ray, None
        if ray is not None:
            self.parts = connect(ray, workers)
        else:
            self.parts = workers
            self.pool = Workers(workers) if workers > 1 else None

    def map(self, fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        """``fn(task)`` of each task, in the tasks' order (``fn`` a module-level function)."""
        if self.ray is not None:
            # Two tasks a CPU in flight keep every CPU busy while results wait for their turn.
            return map_ordered(fn, tasks, window=2 * self.parts + 2)
        return self.pool.imap(fn, tasks) if self.pool is not None else map(fn, tasks)

    def close(self) -> None:
        """End the local workers at once (nothing is pending between maps); Ray's tasks are
        the cluster's."""
        if self.pool is not None:
            self.pool.terminate()
            self.pool = None

    def __enter__(self) -> Searches:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()


__all__ = ["Searches", "search_rows"]
