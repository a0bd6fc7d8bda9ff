"""Training rollouts on Ray actors (``TrainConfig.ray``, ``train.py --ray [ADDRESS] --actors N``).

Each of the N :class:`RolloutActor` processes runs what the batched engine runs in the learner's
process otherwise: a :class:`odin_lab.training.collector.SelfPlayCollector` on its own
``selfplay_batch`` games of :class:`odin_env.batched.BatchedGames`, against its own
:class:`odin_lab.training.pool.OpponentPool`. :class:`RayCollector` stands in for that collector in
:func:`odin_lab.training.selfplay.train_selfplay`; every update, synchronously:

1. the learner puts its policy's weights (numpy arrays) in Ray's object store once, with the
   ``self`` snapshots taken since the last update, if any;
2. every actor loads them and collects ``1/N`` of the rollout (a whole number of engine steps
   of its games, at least one);
3. the learner gathers the N rollouts in actor order (:func:`merge_rollouts`) and runs PPO's
   update on them as on one rollout.

So the weights that act are always the latest ones, as in one process, and a run is
reproducible for a given seed and N: actor ``k`` deals from its own sub-stream of the run's seed,
draws its opponents and its actions from its own streams, and the learner sees the rollouts in
a fixed order. (Other values of N give other, equally valid, runs.) Ray moves the arrays; the
learner's wait is the slowest actor's collection plus the transfers.
"""

from __future__ import annotations

from dataclasses import fields, replace
from typing import Any

import numpy as np
import torch as th

from odin_env.batched import BatchedGames
from odin_env.seeding import spawn_seed
from odin_lab.training.collector import Rollout, SelfPlayCollector
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.model import build_model
from odin_lab.training.pool import LEARNER, OpponentPool


class RolloutActor:
    """One rollout collector of a run, in its own process (made a Ray actor by
    :class:`RayCollector`): its games are seeded ``games_seed``, its pool ``pool_seed`` and its
    action draws a sub-stream of ``games_seed``."""

    def __init__(self, config: TrainConfig, games_seed: int, pool_seed: int):
        th.set_num_threads(config.torch_threads)
        # The actor's copy of the policy only acts; its weights come from the learner.
        model = build_model(replace(config, init=None))
        th.manual_seed(spawn_seed(games_seed, 1))
        pool = None
        if config.opponents != [LEARNER]:
            pool = OpponentPool(config.opponents, config.game.players, config.seat, pool_seed)
        games = BatchedGames(config.game, config.selfplay_batch, seed=games_seed)
        self.policy = model.policy
        self.pool = pool
        self.collector = SelfPlayCollector(model, games, pool)

    def collect(
        self, weights: dict[str, np.ndarray], snapshots: list[Any] | None, decisions: int
    ) -> Rollout:
        """Load ``weights`` (and the ``self`` snapshots, when new), then collect a rollout of
        at least ``decisions`` learner decisions (a multiple of the actor's batch)."""
        self.policy.load_state_dict({k: th.tensor(v) for k, v in weights.items()})
        if snapshots is not None and self.pool is not None:
            self.pool.set_snapshots(snapshots)
        return self.collector.collect(decisions)


def merge_rollouts(rollouts: list[Rollout], batch: int) -> Rollout:
    """The rollouts of actors ``0 .. N-1`` as one, rows in actor order: actor ``k``'s game
    slot ``g`` becomes slot ``k * batch + g`` and its ``next_index`` links are shifted by the
    rows before it, so advantages, returns and episodes keep their meaning."""
    if len(rollouts) == 1:
        return rollouts[0]
    arrays: dict[str, Any] = {}
    offsets = np.cumsum([0] + [len(r) for r in rollouts[:-1]])
    per_row = [
        f.name for f in fields(Rollout) if isinstance(getattr(rollouts[0], f.name), np.ndarray)
    ]
    for name in per_row:
        parts = [getattr(r, name) for r in rollouts]
        if name == "next_index":
            parts = [np.where(p >= 0, p + o, -1) for p, o in zip(parts, offsets)]
        elif name == "game":
            parts = [p + k * batch for k, p in enumerate(parts)]
        arrays[name] = np.concatenate(parts)
    episodes = [
        replace(e, game=e.game + k * batch) for k, r in enumerate(rollouts) for e in r.episodes
    ]
    return Rollout(
        **arrays,
        episodes=episodes,
        collected=sum(r.collected for r in rollouts),
        carried=sum(r.carried for r in rollouts),
        dropped_reward=sum(r.dropped_reward for r in rollouts),
    )


class RayCollector:
    """Collects each rollout on ``config.actors`` Ray actors (see the module docstring), for
    :func:`odin_lab.training.selfplay.train_selfplay`'s ``collector``; also the pool the run's
    callback hands new snapshots to (:meth:`set_snapshots`). ``seeds[k]``: actor ``k``'s
    ``(games_seed, pool_seed)``. Connects to ``config.ray`` (a local Ray gets one CPU per actor);
    call :meth:`close` at the end."""

    def __init__(self, model: Any, config: TrainConfig, seeds: list[tuple[int, int]]):
        import ray

        from odin_lab.evaluation.distributed import connect

        if len(seeds) != config.actors:
            raise ValueError(f"got {len(seeds)} seeds for {config.actors} actors")
        connect(config.ray, config.actors)
        self.model, self.actors_batch = model, config.selfplay_batch
        self.batch = config.actors * config.selfplay_batch
        """Games across all actors (a rollout is a multiple of it)."""
        self._snapshots: list[Any] | None = None
        remote = ray.remote(num_cpus=1)(RolloutActor)
        self.actors = [remote.remote(config, games, pool) for games, pool in seeds]

    def set_snapshots(self, snapshots: list[Any]) -> None:
        """New ``self`` snapshots: the actors get them with the next weights."""
        self._snapshots = list(snapshots)

    def collect(self, decisions: int) -> Rollout:
        """One rollout of ``decisions`` (a multiple of :attr:`batch`) learner decisions,
        collected with the model's current weights, ``decisions / N`` by each actor."""
        import ray

        if decisions % self.batch:
            raise ValueError(f"decisions must be a multiple of {self.batch}; got {decisions}")
        state = self.model.policy.state_dict()
        weights = ray.put({k: v.detach().cpu().numpy() for k, v in state.items()})
        share = decisions // len(self.actors)
        tasks = [actor.collect.remote(weights, self._snapshots, share) for actor in self.actors]
        try:
            rollouts = ray.get(tasks)
        except ray.exceptions.RayError as error:
            first = (str(error).strip().splitlines() or [""])[-1]
            raise TrainingError(
                f"a Ray rollout actor failed ({type(error).__name__}: {first}); the last "
                "checkpoint is intact: continue with --resume"
            ) from None
        self._snapshots = None
        return merge_rollouts(rollouts, self.actors_batch)

    def close(self) -> None:
        """Stop the actors (the cluster stays up)."""
        import ray

        for actor in self.actors:
            ray.kill(actor)
        self.actors = []


__all__ = ["RayCollector", "RolloutActor", "merge_rollouts"]
