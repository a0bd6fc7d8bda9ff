"""A training run from start to end: build (or resume) the model, optionally warm-start it by
imitation, train with PPO on the chosen engine, and keep the run's files up to date.

Two engines collect the experience (``TrainConfig.engine``):

- ``batched`` (default): :func:`odin_lab.training.selfplay.train_selfplay` on ``selfplay_batch``
  games of :class:`odin_env.batched.BatchedGames` in this process, all games in lockstep; the
  learner holds one seat per game against an :class:`odin_lab.training.pool.OpponentPool`, or every
  seat (``learner``). Each update trains on at least ``n_steps x n_envs`` learner decisions. With
  ``ray``, ``actors`` Ray actors collect them instead, each on its own games
  (:mod:`odin_lab.training.actors`); the learner stays here.
- ``subproc``: ``n_envs`` subprocesses of ``SingleAgentEnv`` (:mod:`odin_lab.training.subproc`).

One run lives in ``runs/NAME/``:

==========================  ==================================================================
``config.json``             the exact :class:`TrainConfig` (and library versions)
``checkpoint.safetensors``  the last checkpoint (:mod:`odin_lab.training.checkpoints`), written
                            every ``checkpoint_every`` steps, at the end and on Ctrl-C, atomically
``best.safetensors``        the policy with the best evaluation score so far
``best.json``               its score and step (written after it)
``imitation.safetensors``   with ``imitate``: the policy after the warm start, before any PPO
``kept/``                   with ``soup``: the policies of the last ``soup`` checkpoints
``soup.safetensors``        with ``soup``: their parameter average, written at the run's end
``evaluations.jsonl``       one line per evaluation: step, win rate and 95% interval per
                            opponent (rewritten atomically; a resume rolls it back to the
                            checkpoint's step, so the run's files describe one history)
``tb/``                     TensorBoard: ``opponents/<kind>/win_rate`` and ``mean_penalty``,
                            ``charts/episode_length``, ``charts/steps_per_s``, ``eval/<agent>/...``,
                            and SB3's ``train/`` (entropy, losses, KL, clip fraction)
==========================  ==================================================================

Seeds: every stream is a ``SeedSequence`` sub-stream of ``TrainConfig.seed``
(:func:`odin_env.seeding.spawn_seed` with the stream ids below and the step count at which the
stream starts, so a resumed run deals new games).
"""

from __future__ import annotations

import math
import os
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv

from odin_env.seeding import spawn_seed
from odin_lab.evaluation.stats import seat_shares, wilson
from odin_lab.evaluation.tournament import play_tournament
from odin_lab.training.checkpoints import (
    BEST,
    CHECKPOINT,
    IMITATION,
    OLD_CHECKPOINT,
    SOUP,
    RunState,
    average_models,
    best_on_record,
    drop_kept_after,
    keep_policy,
    kept_policies,
    load_checkpoint,
    save_checkpoint,
    save_policy_only,
    write_best_record,
    write_config,
    write_evaluations,
)
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.imitation import imitate
from odin_lab.training.model import build_model
from odin_lab.training.policy import snapshot
from odin_lab.training.pool import LEARNER, SELF, OpponentPool
from odin_lab.training.progress import Progress, episode_figures
from odin_lab.training.selfplay import train_selfplay
from odin_lab.training.subproc import close_vec_env, make_vec_env, spaces_env

EVAL_MODEL = "eval_model.safetensors"
"""The policy being evaluated (renamed to the best model if it scores best)."""
ENV_STREAM, POOL_STREAM, EVAL_STREAM = 1, 2, 3
"""Sub-streams of the run's seed: the games, the opponent pool, the evaluations."""


def evaluate(
    model_path: Path,
    config: TrainConfig,
    opponent: str,
    deals: int,
    seed: int,
    progress: bool = False,
    workers: int = 1,
) -> dict[str, float]:
    """Win rate, 95% Wilson interval and mean penalty of ``ppo:model_path`` against copies of
    ``opponent`` in seeded, seat-rotated games (:mod:`odin_lab.evaluation.tournament`)."""
    game = config.game
    specs = [f"ppo:{model_path}"] + [opponent] * (game.players - 1)
    records = play_tournament(
        specs, game, deals, seed, rotate=True, workers=workers, progress=progress
    )
    wins = penalty = 0.0
    for record in records:
        seat = record.agents.index(0)
        wins += seat_shares(record)[seat]
        penalty += record.totals[seat]
    low, high = wilson(wins, len(records))
    return {
        "win_rate": wins / len(records),
        "ci_low": low,
        "ci_high": high,
        "mean_penalty": penalty / len(records),
        "games": len(records),
    }


class _RunCallback(BaseCallback):
    """Episode statistics per opponent kind, snapshots, checkpoints, evaluations, progress bar.

    Snapshots, evaluations and checkpoints happen between updates, at a step count the weights
    have been trained on (``trained``): with ``model.learn`` at each rollout's start (after the
    previous update), with the batched engine after each update, and once more at the end."""

    def __init__(self, config: TrainConfig, state: RunState, venv: VecEnv):
        super().__init__()
        self.config, self.state, self.venv = config, state, venv
        self.episodes: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self.lengths: list[int] = []
        self.running = np.zeros(config.n_envs, dtype=np.int64)
        self.progress: Progress | None = None
        self.latest_eval = "-"
        self.last_checkpoint = self.last_eval = 0
        self.trained = 0
        self.rate = 0.0
        """Steps of the last completed update (what a checkpoint on Ctrl-C records)."""
        self.pool: OpponentPool | None = None
        """The batched engine's opponent pool, which also receives the snapshots."""

    def _on_training_start(self) -> None:
        steps = self.trained = self.model.num_timesteps
        every = self.config
        self.last_checkpoint = steps - steps % every.checkpoint_every
        self.last_eval = steps - steps % every.eval_every if every.eval_every else steps
        self.progress = _progress_bar(every, steps)
        if self.state.evaluations:
            self.latest_eval = _eval_text(self.state.evaluations[-1])
        if SELF in every.opponents and not self.state.snapshots:
            self._snapshot()
        elif self.state.snapshots:
            self._share_snapshots()

    def _on_rollout_start(self) -> None:
        # SB3 trains on the previous rollout before collecting the next one.
        if self.model.num_timesteps != self.trained:
            self.trained = self.model.num_timesteps
            self._periodic(self.rate)

    def _on_step(self) -> bool:
        self.running += 1
        for i, done in enumerate(self.locals["dones"]):
            if done:
                info = self.locals["infos"][i]
                self.episodes[info["opponent"]].append((info["win"], info["penalty"]))
                self.lengths.append(int(self.running[i]))
                self.running[i] = 0
        self.progress.advance(self.config.n_envs)
        return True

    def _on_rollout_end(self) -> None:
        logger = self.logger
        self.rate = self.progress.rate()
        logger.record("charts/steps_per_s", self.rate)
        for key, value in episode_figures(self.episodes, self.lengths).items():
            logger.record(key, value)
        self.episodes.clear()
        self.lengths.clear()

    def on_selfplay_update(self, model: Any, rollout: Any) -> bool:
        """:func:`odin_lab.training.selfplay.train_selfplay`'s callback, after each update:
        progress, evaluations and checkpoints (it logs its own rate and episode statistics)."""
        self.trained = model.num_timesteps
        self.progress.advance(len(rollout))
        self.rate = self.progress.rate()
        self._periodic(self.rate)
        # train_selfplay dumped before calling back: write the evaluation at the step it ran.
        self.logger.dump(step=model.num_timesteps)
        return True

    def finish(self) -> None:
        """After the last update: what falls due at the final step."""
        self.trained = self.model.num_timesteps
        self._periodic(self.rate)
        self.close()

    def _periodic(self, rate: float) -> None:
        """Snapshots, evaluations and checkpoints that fall due at the current step (the final
        step's evaluation is :func:`train`'s, shown on the console)."""
        config, steps = self.config, self.model.num_timesteps
        final = steps >= config.total_steps
        if SELF in config.opponents and steps - self.state.last_snapshot >= config.snapshot_every:
            self._snapshot()
        if config.eval_every and steps - self.last_eval >= config.eval_every and not final:
            self.last_eval = steps
            self.run_evaluation()
        if steps - self.last_checkpoint >= config.checkpoint_every:
            self.last_checkpoint = steps
            save_checkpoint(self.model, config, self.state)
            keep_policy(self.model, config)
        self.progress.show(rate, f"eval {self.latest_eval}")

    def _share_snapshots(self) -> None:
        """Hand the snapshot pool to the opponents: the batched pool, or each env's."""
        if self.pool is not None:
            self.pool.set_snapshots(self.state.snapshots)
        else:
            self.venv.env_method("set_snapshots", self.state.snapshots)

    def _snapshot(self) -> None:
        snap = snapshot(self.model.policy, deterministic=False, name=SELF)
        self.state.snapshots = [*self.state.snapshots, snap][-self.config.max_snapshots :]
        self.state.last_snapshot = self.model.num_timesteps
        self._share_snapshots()

    def run_evaluation(self, show: bool = False) -> dict[str, Any]:
        """Evaluate the current policy against each evaluation opponent; keep the best model
        (``best.safetensors``, then its record ``best.json``) and the log; return the entry."""
        config, steps = self.config, self.model.num_timesteps
        run_dir = config.run_dir
        current = run_dir / EVAL_MODEL
        save_policy_only(self.model, current, config)
        entry: dict[str, Any] = {"step": steps}
        for k, opponent in enumerate(config.eval_opponents):
            seed = spawn_seed(config.seed, EVAL_STREAM, k)
            result = evaluate(current, config, opponent, config.eval_deals, seed, progress=show)
            entry[opponent] = result
            for key in ("win_rate", "mean_penalty"):
                self.logger.record(f"eval/{opponent}/{key}", result[key])
        score = float(np.mean([entry[o]["win_rate"] for o in config.eval_opponents]))
        entry["score"] = score
        self.state.evaluations.append(entry)
        if score > self.state.best_score:
            self.state.best_score = score
            os.replace(current, run_dir / BEST)
            write_best_record(run_dir, score, steps)
        else:
            current.unlink(missing_ok=True)
        write_evaluations(run_dir, self.state.evaluations)
        self.latest_eval = _eval_text(entry)
        return entry

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()


def _progress_bar(config: TrainConfig, steps: int) -> Progress:
    """The training bar: to the first update at or past ``total_steps`` (exact with
    ``model.learn``'s fixed rollouts; with the batched engine, at least ``total_steps``)."""
    target = config.total_steps
    if config.engine == "subproc":
        rollout = config.n_steps * config.n_envs
        end = steps + max(0, math.ceil((target - steps) / rollout)) * rollout
        return Progress(end, steps, desc="train")
    return Progress(target, steps, desc=f"train (to the first update >= {target:,})")


def _eval_text(entry: dict[str, Any]) -> str:
    parts = [f"{k} {v['win_rate']:.0%}" for k, v in entry.items() if isinstance(v, dict)]
    return ", ".join(parts) or "-"


def _start(config: TrainConfig, resume: bool) -> tuple[VecEnv, Any, RunState]:
    """The environments, model and run state of a new or resumed run (a new run's directory is
    created only once they exist)."""
    run_dir, batched = config.run_dir, config.engine == "batched"
    seed = 0 if resume else spawn_seed(config.seed, ENV_STREAM, 0)
    venv = spaces_env(config) if batched else make_vec_env(config, seed)
    try:
        if not resume:
            return venv, build_model(config, venv, tensorboard=False), RunState()
        model, state = load_checkpoint(run_dir, venv, config)
    except BaseException:
        close_vec_env(venv)
        raise
    # The best model is never replaced by a worse one than the best on record.
    state.best_score = max(state.best_score, best_on_record(run_dir))
    return venv, model, state


def train(config: TrainConfig, resume: bool = False) -> Path | None:
    """Train (or resume) the run ``config.run_dir``; return the checkpoint path (``None``: a
    resumed run already at its target, which it says in one line).

    A new run refuses a directory that already holds a checkpoint (resume it instead); a run
    that fails to start leaves no new directory behind."""
    config.check()
    run_dir = config.run_dir
    if not resume and any((run_dir / n).exists() for n in (CHECKPOINT, OLD_CHECKPOINT)):
        raise TrainingError(f"{run_dir} already holds a run: resume it or choose another --name")
    if config.ray is not None:
        from odin_lab.evaluation.distributed import connect

        connect(config.ray, config.actors)  # a bad address fails here, before any file
    th.set_num_threads(config.torch_threads)
    batched = config.engine == "batched"
    created = not run_dir.exists()
    venv, model, state = _start(config, resume)
    try:
        if resume and model.num_timesteps >= config.total_steps:
            print(
                f"{run_dir} is already at step {model.num_timesteps:,}, at or past --total-steps "
                f"{config.total_steps:,}: nothing to train (raise --total-steps to continue)"
            )
            return None
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
            if resume:
                # Roll the log back to the checkpoint: evaluations after it are not in its past.
                write_evaluations(run_dir, state.evaluations)
                # What a killed process left half-done: an evaluation's model, temporary files.
                for stale in [run_dir / EVAL_MODEL, *run_dir.glob(".*.tmp")]:
                    stale.unlink(missing_ok=True)
                drop_kept_after(run_dir, model.num_timesteps)
                # A resumed run deals new games rather than replaying the first ones.
                venv.seed(spawn_seed(config.seed, ENV_STREAM, model.num_timesteps))
            else:
                write_config(config)
            model.set_logger(configure(str(run_dir / "tb"), ["tensorboard"]))
            if config.imitate and not resume:
                for key, value in imitate(model, config).items():
                    model.logger.record(key, value)
                save_policy_only(model, run_dir / IMITATION, config)
        except BaseException:
            if created:
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        callback = _RunCallback(config, state, venv)
        remaining = config.total_steps - model.num_timesteps
        try:
            if remaining > 0 and batched:
                _learn_selfplay(model, config, callback)
            elif remaining > 0:
                model.learn(remaining, callback=callback, reset_num_timesteps=False)
            if callback.progress is not None:
                callback.finish()
        except KeyboardInterrupt:
            # A batched update is whole (train_on_rollout holds Ctrl-C), so the counter matches
            # the weights; model.learn moves it while collecting, before the update.
            steps = model.num_timesteps if batched else callback.trained
            path = save_checkpoint(model, config, state, steps=steps)
            callback.close()
            print(f"\ninterrupted at step {steps:,}: checkpoint saved to {path}")
            raise
        if config.eval_every and (
            not state.evaluations or state.evaluations[-1]["step"] != model.num_timesteps
        ):
            callback.model = model
            print(f"final evaluation at step {model.num_timesteps:,}")
            entry = callback.run_evaluation(show=True)
            model.logger.dump(step=model.num_timesteps)
            print(f"final evaluation: {_eval_text(entry)} (score {entry['score']:.3f})")
        path = save_checkpoint(model, config, state)
        if config.soup:
            keep_policy(model, config)
            average_models(kept_policies(run_dir), run_dir / SOUP)
        return path
    finally:
        close_vec_env(venv)


def _learn_selfplay(model: Any, config: TrainConfig, callback: _RunCallback) -> None:
    """Train to ``config.total_steps`` by batched self-play; ``callback`` does the run's
    bookkeeping after each update, as it does at each rollout's end with ``model.learn``."""
    steps = model.num_timesteps
    pool = collector = None
    if config.ray is not None:
        from odin_lab.training.actors import RayCollector

        # Actor k's streams: sub-streams k of the run's; a resumed run deals new games.
        seeds = [
            (
                spawn_seed(config.seed, ENV_STREAM, steps, k),
                spawn_seed(config.seed, POOL_STREAM, steps, k),
            )
            for k in range(config.actors)
        ]
        pool = collector = RayCollector(model, config, seeds)  # it also takes the snapshots
    elif config.opponents != [LEARNER]:
        seed = spawn_seed(config.seed, POOL_STREAM, steps)
        pool = OpponentPool(config.opponents, config.game.players, config.seat, seed)
    callback.pool = pool
    callback.init_callback(model)
    callback.on_training_start({}, {})
    try:
        train_selfplay(
            model,
            config.game,
            config.total_steps,
            batch=config.selfplay_batch,
            rollout_decisions=config.n_steps * config.n_envs,
            # A resumed run deals new games rather than replaying the first ones.
            seed=spawn_seed(config.seed, ENV_STREAM, steps),
            callback=callback.on_selfplay_update,
            progress=False,  # the callback's bar, which also shows the latest evaluation
            pool=pool if collector is None else None,
            collector=collector,
        )
    finally:
        if collector is not None:
            collector.close()


__all__ = ["ENV_STREAM", "EVAL_STREAM", "POOL_STREAM", "build_model", "evaluate", "train"]
