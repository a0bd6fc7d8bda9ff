"""The batched training loop :func:`train_selfplay`: rollouts of
:class:`odin_lab.training.collector.SelfPlayCollector`, each followed by one PPO update
(:func:`odin_lab.training.update.train_on_rollout`); the model's own buffer is left untouched, so
``model.learn`` still works on the same model. ``model.num_timesteps`` counts the decisions
trained on.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from odin_env.batched import BatchedGames
from odin_env.rules import Config
from odin_lab.training.collector import DEFAULT_BATCH, FinishedEpisode, Rollout, SelfPlayCollector
from odin_lab.training.pool import LEARNER, OpponentPool
from odin_lab.training.progress import Progress, episode_figures
from odin_lab.training.update import train_on_rollout


def episode_summary(episodes: list[FinishedEpisode]) -> dict[str, float]:
    """TensorBoard figures of finished episodes: ``charts/episode_length``,
    ``selfplay/mean_penalty`` over the self-play games (every seat's total), and
    ``opponents/<kind>/win_rate`` and ``mean_penalty`` of the learner against each kind."""
    if not episodes:
        return {}
    results: dict[str, list[tuple[float, float]]] = {}
    for e in episodes:
        if e.kind != LEARNER:
            results.setdefault(e.kind, []).extend(e.learner_results())
    out = episode_figures(results, [e.decisions for e in episodes])
    selfplay = [e.totals for e in episodes if e.kind == LEARNER]
    if selfplay:
        out["selfplay/mean_penalty"] = float(np.mean(selfplay))
    return out


@dataclass
class SelfPlayStats:
    """What :func:`train_selfplay` measured."""

    decisions: int = 0
    """Decisions trained on in this call."""
    seconds: float = 0.0
    """Wall time of collection and updates."""
    collect_seconds: float = 0.0
    """Of which collecting."""
    episodes: int = 0
    """Episodes finished."""
    history: list[dict[str, float]] = field(default_factory=list)
    """Per rollout: step, decisions, steps_per_s and :func:`episode_summary`'s figures."""

    @property
    def steps_per_s(self) -> float:
        """Learner decisions per second, collection and updates together."""
        return self.decisions / self.seconds if self.seconds else 0.0


def rollout_update(
    model: Any, collector: Any, decisions: int, total_decisions: int
) -> tuple[Rollout, dict[str, float], float] | None:
    """Collect a rollout of ``decisions`` learner decisions with ``collector`` and run one PPO
    update on it (:func:`odin_lab.training.update.train_on_rollout`; the learning-rate schedule
    at ``model.num_timesteps`` of ``total_decisions``). Return the rollout, its figures (step,
    decisions, steps_per_s and :func:`episode_summary`'s) and the seconds spent collecting; or
    ``None`` when the rollout was too short to train on (fewer than 2 closed decisions)."""
    began = time.perf_counter()
    rollout = collector.collect(decisions)
    if len(rollout) < 2:
        # Rollouts shorter than a turn around the table can leave (almost) every decision
        # open, the first one mostly; one advantage cannot be normalized, so a lone closed
        # decision is skipped and play goes on.
        return None
    collected = time.perf_counter()
    model._update_current_progress_remaining(model.num_timesteps, int(total_decisions))
    train_on_rollout(model, rollout)
    now = time.perf_counter()
    entry = {
        "step": float(model.num_timesteps),
        "decisions": float(len(rollout)),
        "steps_per_s": len(rollout) / max(now - began, 1e-9),
    }
    entry.update(episode_summary(rollout.episodes))
    return rollout, entry, collected - began


def train_selfplay(
    model: Any,
    config: Config,
    total_decisions: int,
    batch: int = DEFAULT_BATCH,
    rollout_decisions: int | None = None,
    seed: int | None = 0,
    callback: Callable[[Any, Rollout], bool | None] | None = None,
    progress: bool = True,
    pool: OpponentPool | None = None,
    collector: Any = None,
) -> SelfPlayStats:
    """Train ``model`` by self-play on ``batch`` games of ``config`` until
    ``model.num_timesteps`` reaches ``total_decisions`` (so a resumed model continues).

    ``rollout_decisions``: decisions collected per update (default ``model.n_steps *
    model.n_envs``, the rollout size of the single-seat path, rounded up to a multiple of
    ``batch``). ``seed``: seeds the deals (``BatchedGames``), torch's action draws and SB3's
    minibatch order (``model.set_random_seed``); ``None`` leaves them unseeded. ``callback(model,
    rollout)`` runs after each update (checkpoints, evaluations, snapshots); returning ``False``
    stops training. ``pool``: the learner plays the seats it draws against its opponents (see
    :class:`SelfPlayCollector`); ``None``: every seat. Logs ``charts/steps_per_s``,
    ``charts/episode_length`` (learner decisions per episode), ``selfplay/mean_penalty`` (games
    the learner held every seat) and ``opponents/<kind>/win_rate`` and ``mean_penalty`` (the
    learner's, against each opponent kind) to ``model.logger`` and dumps it after each update.
    ``collector``: collects the rollouts instead of a :class:`SelfPlayCollector` of ``batch``
    games made here (``config``, ``pool`` and the deals' seed are then its own): anything with
    ``batch`` and ``collect(n)`` returning a :class:`Rollout`
    (:class:`odin_lab.training.actors.RayCollector`).
    """
    if isinstance(total_decisions, bool) or not isinstance(total_decisions, (int, np.integer)):
        raise ValueError(f"total_decisions must be an integer; got {total_decisions!r}")
    if rollout_decisions is None:
        rollout_decisions = model.n_steps * model.n_envs
    if isinstance(rollout_decisions, bool) or not isinstance(rollout_decisions, (int, np.integer)):
        raise ValueError(f"rollout_decisions must be a positive integer; got {rollout_decisions!r}")
    if rollout_decisions < 1:
        raise ValueError(f"rollout_decisions must be a positive integer; got {rollout_decisions}")
    if seed is not None:
        model.set_random_seed(seed % 2**32)  # SB3 seeds numpy's legacy 32-bit generator
    if collector is None:
        collector = SelfPlayCollector(model, BatchedGames(config, batch, seed=seed), pool)
    per_rollout = -(-int(rollout_decisions) // collector.batch) * collector.batch
    stats = SelfPlayStats()
    start = model.num_timesteps
    bar = Progress(int(total_decisions), start, desc="self-play", enabled=progress)
    try:
        while model.num_timesteps < total_decisions:
            began = time.perf_counter()
            done = rollout_update(model, collector, per_rollout, int(total_decisions))
            if done is None:
                continue
            rollout, entry, collect_seconds = done
            stats.decisions += len(rollout)
            stats.seconds += time.perf_counter() - began
            stats.collect_seconds += collect_seconds
            stats.episodes += len(rollout.episodes)
            stats.history.append(entry)
            logger = model.logger
            for key, value in entry.items():
                if "/" in key or key == "steps_per_s":
                    logger.record(key if "/" in key else f"charts/{key}", value)
            logger.dump(step=model.num_timesteps)
            bar.advance(len(rollout))
            bar.show(bar.rate())
            if callback is not None and callback(model, rollout) is False:
                break
    finally:
        bar.close()
    return stats


__all__ = ["SelfPlayStats", "episode_summary", "rollout_update", "train_selfplay"]
