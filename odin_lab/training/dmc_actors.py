"""Deep Monte Carlo's actors on Ray (``train.py --algo dmc --ray [ADDRESS] --actors N``): each
:class:`DMCActor` plays its own ``selfplay_batch`` games against its own opponent pool (a
:class:`odin_lab.training.dmc_collector.TableActors` of its own, seeded from the run's seed, its
number and its generation), epsilon-greedy with the newest weights it has received, and hands
back the finished learner decisions with their returns; :class:`RayActors` is the learner's
side of them.

Asynchronous (the default): every actor always has :data:`QUEUED` calls of ``ceil(D / N)``
decisions in its queue (``D``: ``decisions_per_update``), so it goes on playing while the
learner trains. The learner takes batches as they arrive, trains once it holds ``D`` or more,
and publishes its weights (numpy arrays, put in Ray's object store once) after
every update and with every new ``self`` snapshot; a call plays with the weights
published when it was queued. Which samples an update got depends on the timing, so the run is
not reproducible; ``actors.csv`` in the run folder says, for each batch, the update it went
into, the actor (number, generation) and the weights' version (the update count that made them)
it was collected with. ``synchronous``: each update, every actor collects ``ceil(D / N)``
decisions with the latest weights and the learner trains on them in actor order: reproducible
for a seed and N, at the cost of the learner and the actors waiting for each other.

Faults: an actor whose process or machine is lost is replaced by a new one (the next generation:
new games) and the run goes on, losing the decisions it had not handed back; each replacement
is one line on the console and in ``actors.log``. An error in the actors' code stops the run
with one line (the last checkpoint is intact: ``--resume``).
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from agents.dmc import DMCAgent
from odin_env.seeding import spawn_seed
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.dmc_collector import Finished, TableActors
from odin_lab.training.learner import GAMES_STREAM
from odin_lab.training.pool import SELF

ACTOR = 6
"""Sub-stream of the games stream (``spawn_seed(seed, GAMES_STREAM, steps, ACTOR, k, g)``): the
seed of actor ``k``'s generation ``g`` (its games, pool and exploration, as a run of that seed)."""
QUEUED = 2
"""Calls queued per asynchronous actor: it starts the next as it hands back one."""
SAMPLES_LOG, EVENTS_LOG = "actors.csv", "actors.log"
"""The run folder's record of the batches (update, actor, generation, version, decisions) and
of the actors replaced."""
SAMPLES_COLUMNS = ("update", "actor", "generation", "version", "decisions", "episodes")
MAX_LOSSES = 3
"""Replacements in a row (no batch arriving in between) per actor before the run stops: a
cluster that cannot keep an actor alive."""


class DMCActor:
    """One actor process of a run (made a Ray actor by :class:`RayActors`): ``TableActors`` of
    the run's settings seeded ``seed``, playing with the numpy player of the weights it was last
    given (``info``: their model metadata)."""

    def __init__(self, config: TrainConfig, seed: int, steps: int, info: dict[str, Any]):
        settings = config.algo_config
        self.info, self.version, self.snapshot_version = info, -1, -1
        self.player: DMCAgent | None = None
        self.tables = TableActors(
            replace(config, seed=seed),
            settings.other_tables,
            steps,
            self._greedy,
            settings.gamma,
            settings.horizon,
        )
        self.calls = 0

    def _greedy(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return self.player.act_batch(obs, mask)

    def collect(
        self, published: tuple, decisions: int, epsilon: float
    ) -> tuple[Finished, int, float]:
        """Load ``published`` (:meth:`RayActors.publish`'s) where it is newer, then play until at
        least ``decisions`` learner decisions are finished; return them, the weights' version
        they were collected with and the call's CPU seconds. The table sizes take one call each
        in turn."""
        began = time.process_time()
        version, weights, snapshot_version, snapshots = published
        if version != self.version:
            self.player, self.version = DMCAgent(weights, self.info), version
        if snapshot_version != self.snapshot_version:
            import ray  # an actor runs on a Ray worker: Ray is there

            arrays = ray.get(snapshots)  # their own object: most of the bytes
            self.tables.set_snapshots([DMCAgent(a, self.info, SELF) for a in arrays])
            self.snapshot_version = snapshot_version
        collector = self.tables.turn(self.calls)
        self.calls += 1
        return collector.collect(decisions, epsilon), version, time.process_time() - began

    def ready(self) -> bool:
        """Whether the actor is up (an empty call)."""
        return True


def keep_samples_before(path: Path, updates: int) -> None:
    """Start (or go on with) the samples log at ``path``: keep its rows of updates before
    ``updates``, dropping those of a history that a resume abandons (a kill after them, before
    the next checkpoint)."""
    rows = []
    if path.is_file():
        with path.open(newline="") as f:
            rows = [r for r in csv.DictReader(f) if int(r["update"]) < updates]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, SAMPLES_COLUMNS)
        writer.writeheader()
        writer.writerows(rows)


def merge_finished(parts: list[tuple[int, Finished]], batch: int) -> Finished:
    """The batches of ``(actor, finished)`` as one, in the order given; actor ``k``'s game slot
    ``g`` becomes ``k * batch + g``. The arrays are new (Ray's are read-only views of its
    object store), also for one batch."""
    arrays = {}
    for name in ("obs", "actions", "returns", "game", "seat", "episode", "hand"):
        arrays[name] = np.concatenate(
            [getattr(f, name) + (k * batch if name == "game" else 0) for k, f in parts]
        )
    episodes = [replace(e, game=e.game + k * batch) for k, f in parts for e in f.episodes]
    return Finished(**arrays, episodes=episodes)


class RayActors:
    """The learner's side of ``config.actors`` :class:`DMCActor` processes (see the module
    docstring): connects to ``config.ray``, starts them with games seeded from ``steps`` (the
    learner's count, so a resumed run deals new games), and keeps the run folder's logs (rows of
    updates at or past ``updates``, of a history a resume abandons, are dropped).
    ``say``: where the replacement lines go besides ``actors.log``."""

    def __init__(
        self,
        config: TrainConfig,
        steps: int,
        updates: int,
        info: dict[str, Any],
        say: Callable[[str], None] = tqdm.write,
    ):
        import ray

        from odin_lab.evaluation.distributed import connect

        connect(config.ray, config.actors)
        self.config, self.steps, self.info, self.say = config, steps, info, say
        settings = config.algo_config
        self.synchronous = settings.synchronous
        self.share = math.ceil(settings.decisions_per_update / config.actors)
        self.remote = ray.remote(num_cpus=1, max_restarts=0)(DMCActor)
        self.generation = [0] * config.actors
        self.losses = [0] * config.actors
        self.actors = [self._start(k) for k in range(config.actors)]
        self.queued: dict[Any, tuple[int, int]] = {}  # call -> (actor, generation)
        self.arrived: list[tuple[int, int, int, Finished]] = []  # actor, generation, version
        self.published: Any = None
        self.snapshots: Any = None
        self.bump = -1
        self.replaced = 0
        self.seconds = 0.0
        """Wall seconds waiting for batches, in all."""
        self.decisions = 0
        """Decisions received, in all."""
        self.actor_cpu = 0.0
        """The actors' CPU seconds for them."""
        keep_samples_before(config.run_dir / SAMPLES_LOG, updates)

    def _start(self, k: int) -> Any:
        seed = spawn_seed(self.config.seed, GAMES_STREAM, self.steps, ACTOR, k, self.generation[k])
        return self.remote.remote(self.config, seed, self.steps, self.info)

    def publish(
        self, version: int, weights: dict[str, np.ndarray], snapshots: list[Any], bump: int
    ) -> None:
        """Put the weights of ``version`` in the object store once (and the ``self`` snapshots'
        arrays, when their change count ``bump`` is new): every call queued from now on plays
        with them."""
        import ray

        if bump != self.bump:
            self.snapshots = ray.put([dict(s.arrays) for s in snapshots])
            self.bump = bump
        # A reference inside an object stays a reference: the actors fetch the snapshots only
        # when they changed.
        self.published = ray.put((version, weights, bump, self.snapshots))

    def _queue(self, k: int, epsilon: float) -> None:
        call = self.actors[k].collect.remote(self.published, self.share, epsilon)
        self.queued[call] = (k, self.generation[k])

    def _replace(self, k: int, error: Exception, update: int) -> None:
        """Actor ``k`` is lost: drop its calls, start its next generation, say so."""
        import ray

        self.losses[k] += 1
        if self.losses[k] > MAX_LOSSES:
            raise TrainingError(
                f"Ray actor {k} was lost {MAX_LOSSES + 1} times in a row ({_first(error)}); the "
                "last checkpoint is intact: continue with --resume"
            )
        self.queued = {c: w for c, w in self.queued.items() if w[0] != k}
        ray.kill(self.actors[k], no_restart=True)
        self.generation[k] += 1
        self.actors[k] = self._start(k)
        self.replaced += 1
        line = (
            f"update {update:,}: Ray actor {k} was lost ({type(error).__name__}): replaced by "
            f"generation {self.generation[k]}; its unsent decisions are lost"
        )
        with (self.config.run_dir / EVENTS_LOG).open("a") as f:
            f.write(line + "\n")
        self.say(line)

    def _take(self, call: Any, update: int, epsilon: float) -> None:
        """Receive one finished call (or replace its lost actor); queue the actor's next one."""
        import ray

        k, generation = self.queued.pop(call)
        if generation != self.generation[k]:
            return  # a call of an actor already replaced
        try:
            finished, version, cpu = ray.get(call)
        except ray.exceptions.RayActorError as error:
            self._replace(k, error, update)
            if not self.synchronous:
                for _ in range(QUEUED):
                    self._queue(k, epsilon)
            return
        except ray.exceptions.RayError as error:
            raise TrainingError(
                f"a Ray DMC actor failed ({_first(error)}); the last checkpoint is intact: "
                "continue with --resume"
            ) from None
        self.losses[k] = 0
        self.decisions += len(finished)
        self.actor_cpu += cpu
        self.arrived.append((k, generation, version, finished))
        if not self.synchronous:
            self._queue(k, epsilon)

    def collect(self, update: int, epsilon: float) -> tuple[Finished, list[tuple[int, int]]]:
        """The decisions of update number ``update``: at least ``decisions_per_update`` of them,
        and the ``(actor, version)`` of each batch they came in (written to ``actors.csv``)."""
        import ray

        began = time.perf_counter()
        target = self.config.algo_config.decisions_per_update
        if self.synchronous:
            for k in range(len(self.actors)):
                self._queue(k, epsilon)
        elif not self.queued:
            for _ in range(QUEUED):
                for k in range(len(self.actors)):
                    self._queue(k, epsilon)
        while True:
            if self.synchronous:
                done = {k for k, *_ in self.arrived}
                missing = [k for k in range(len(self.actors)) if k not in done]
                if not missing:
                    break
                for k in missing:
                    if not any(w == (k, self.generation[k]) for w in self.queued.values()):
                        self._queue(k, epsilon)  # a replaced actor collects its share again
                call = next(c for c, w in self.queued.items() if w[0] == missing[0])
                self._take(call, update, epsilon)
                continue
            if sum(len(a[-1]) for a in self.arrived) >= target:
                break
            ready, _ = ray.wait(list(self.queued), num_returns=1)
            self._take(ready[0], update, epsilon)
        parts = sorted(self.arrived, key=lambda a: a[0]) if self.synchronous else self.arrived
        self.arrived = []
        self.seconds += time.perf_counter() - began
        self._log(update, parts)
        batch = merge_finished([(k, f) for k, _, _, f in parts], self.config.selfplay_batch)
        return batch, [(k, v) for k, _, v, _ in parts]

    def _log(self, update: int, parts: list[tuple[int, int, int, Finished]]) -> None:
        with (self.config.run_dir / SAMPLES_LOG).open("a", newline="") as f:
            writer = csv.writer(f)
            for k, generation, version, finished in parts:
                row = (update, k, generation, version, len(finished))
                writer.writerow((*row, len(finished.episodes)))

    def close(self) -> None:
        """Stop the actors (the cluster stays up)."""
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors, self.queued = [], {}


def _first(error: BaseException) -> str:
    lines = [line for line in str(error).strip().splitlines() if line.strip()]
    return f"{type(error).__name__}: {lines[-1] if lines else ''}"


__all__ = [
    "ACTOR",
    "EVENTS_LOG",
    "MAX_LOSSES",
    "QUEUED",
    "SAMPLES_LOG",
    "DMCActor",
    "RayActors",
    "keep_samples_before",
    "merge_finished",
]
