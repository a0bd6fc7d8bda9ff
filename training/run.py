"""A training run from start to end: build (or resume) the model, optionally warm-start it by
imitation, train with PPO on the chosen engine, and keep the run's files up to date.

Two engines collect the experience (``TrainConfig.engine``):

- ``batched`` (default): :func:`training.selfplay.train_selfplay` on ``selfplay_batch`` games
  of :class:`odin_env.batched.BatchedGames` in this process, all games in lockstep; the learner
  holds one seat per game against an :class:`training.pool.OpponentPool`, or every seat
  (``learner``). Each update trains on at least ``n_steps x n_envs`` learner decisions.
- ``subproc``: ``n_envs`` subprocesses of ``SingleAgentEnv`` (:mod:`training.subproc`).

One run lives in ``runs/NAME/``:

=====================  =======================================================================
``config.json``        the exact :class:`TrainConfig` (and library versions)
``checkpoint.zip``     the last checkpoint (:mod:`training.checkpoints`), written every
                       ``checkpoint_every`` steps, at the end and on Ctrl-C, atomically
``best.zip``           the policy with the best evaluation score so far
``imitation.zip``      with ``imitate``: the policy after the warm start, before any PPO step
``evaluations.jsonl``  one line per evaluation: step, win rate and 95% interval per opponent
``tb/``                TensorBoard: ``opponents/<kind>/win_rate`` and ``mean_penalty``,
                       ``charts/episode_length``, ``charts/steps_per_s``, ``eval/<agent>/...``,
                       and SB3's ``train/`` (entropy, losses, KL, clip fraction)
=====================  =======================================================================

Seeds: every stream is a ``SeedSequence`` sub-stream of ``TrainConfig.seed``
(:func:`odin_env.seeding.spawn_seed` with the stream ids below and the step count at which the
stream starts, so a resumed run deals new games).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv

from agents.ppo import read_model
from evaluation.stats import seat_shares, wilson
from evaluation.tournament import play_tournament
from odin_env.seeding import spawn_seed
from training.checkpoints import (
    BEST,
    CHECKPOINT,
    RunState,
    load_checkpoint,
    save_checkpoint,
    save_policy_only,
    write_config,
)
from training.config import TrainConfig, TrainingError
from training.imitation import imitate
from training.policy import LegalSetPolicy, snapshot
from training.pool import LEARNER, SELF, OpponentPool
from training.progress import Progress, episode_figures
from training.selfplay import train_selfplay
from training.subproc import close_vec_env, make_vec_env, spaces_env

ENV_STREAM, POOL_STREAM, EVAL_STREAM = 1, 2, 3
"""Sub-streams of the run's seed: the games, the opponent pool, the evaluations."""


def build_model(config: TrainConfig, env: VecEnv, tensorboard: bool = True) -> Any:
    """A new MaskablePPO with the run's settings (and ``init`` weights when given)."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO(
        LegalSetPolicy,
        env,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        policy_kwargs={
            "net_arch": {"pi": list(config.net_pi), "vf": list(config.net_vf)},
            "activation_fn": th.nn.ReLU,
            **({"prior": config.prior} if config.prior else {}),
        },
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    if config.init:
        try:
            _, state = read_model(config.init)
            model.policy.load_state_dict(state)
        except (FileNotFoundError, ValueError, RuntimeError) as error:
            raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
    if tensorboard:
        model.set_logger(configure(str(config.run_dir / "tb"), ["tensorboard"]))
    return model


def evaluate(
    model_path: Path, config: TrainConfig, opponent: str, deals: int, seed: int
) -> dict[str, float]:
    """Win rate, 95% Wilson interval and mean penalty of ``ppo:model_path`` against copies of
    ``opponent`` in seeded, seat-rotated games (:mod:`evaluation.tournament`)."""
    game = config.game
    specs = [f"ppo:{model_path}"] + [opponent] * (game.players - 1)
    records = play_tournament(specs, game, deals, seed, rotate=True, workers=1, progress=False)
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
    """Episode statistics per opponent kind, snapshots, checkpoints, evaluations, progress bar."""

    def __init__(self, config: TrainConfig, state: RunState, venv: VecEnv):
        super().__init__()
        self.config, self.state, self.venv = config, state, venv
        self.episodes: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self.lengths: list[int] = []
        self.running = np.zeros(config.n_envs, dtype=np.int64)
        self.progress: Progress | None = None
        self.latest_eval = "-"
        self.last_checkpoint = self.last_eval = 0
        self.pool: OpponentPool | None = None
        """The batched engine's opponent pool, which also receives the snapshots."""

    def _on_training_start(self) -> None:
        steps = self.model.num_timesteps
        every = self.config
        self.last_checkpoint = steps - steps % every.checkpoint_every
        self.last_eval = steps - steps % every.eval_every if every.eval_every else steps
        self.progress = Progress(every.total_steps, steps)
        if self.state.evaluations:
            self.latest_eval = _eval_text(self.state.evaluations[-1])
        if SELF in every.opponents and not self.state.snapshots:
            self._snapshot()
        elif self.state.snapshots:
            self._share_snapshots()

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
        rate = self.progress.rate()
        logger.record("charts/steps_per_s", rate)
        for key, value in episode_figures(self.episodes, self.lengths).items():
            logger.record(key, value)
        self.episodes.clear()
        self.lengths.clear()
        self._periodic(rate)

    def on_selfplay_update(self, model: Any, rollout: Any) -> bool:
        """:func:`training.selfplay.train_selfplay`'s callback, after each update: progress,
        evaluations and checkpoints (it logs its own rate and episode statistics)."""
        self.progress.advance(len(rollout))
        self._periodic(self.progress.rate())
        # train_selfplay dumped before calling back: write the evaluation at the step it ran.
        self.logger.dump(step=model.num_timesteps)
        return True

    def _periodic(self, rate: float) -> None:
        """Snapshots, evaluations and checkpoints that fall due at the current step."""
        config, steps = self.config, self.model.num_timesteps
        if SELF in config.opponents and steps - self.state.last_snapshot >= config.snapshot_every:
            self._snapshot()
        if config.eval_every and steps - self.last_eval >= config.eval_every:
            self.last_eval = steps
            self.run_evaluation()
        if steps - self.last_checkpoint >= config.checkpoint_every:
            self.last_checkpoint = steps
            save_checkpoint(self.model, config, self.state)
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

    def run_evaluation(self) -> None:
        """Evaluate the current policy against each evaluation opponent; keep ``best.zip``."""
        config, steps = self.config, self.model.num_timesteps
        current = config.run_dir / "eval_model.zip"
        save_policy_only(self.model, current)
        entry: dict[str, Any] = {"step": steps}
        for k, opponent in enumerate(config.eval_opponents):
            seed = spawn_seed(config.seed, EVAL_STREAM, k)
            result = evaluate(current, config, opponent, config.eval_deals, seed)
            entry[opponent] = result
            for key in ("win_rate", "mean_penalty"):
                self.logger.record(f"eval/{opponent}/{key}", result[key])
        score = float(np.mean([entry[o]["win_rate"] for o in config.eval_opponents]))
        entry["score"] = score
        self.state.evaluations.append(entry)
        if score > self.state.best_score:
            self.state.best_score = score
            os.replace(current, config.run_dir / BEST)
        else:
            current.unlink(missing_ok=True)
        with open(config.run_dir / "evaluations.jsonl", "a") as f:
            f.write(json.dumps(entry) + "\n")
        self.latest_eval = _eval_text(entry)

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()


def _eval_text(entry: dict[str, Any]) -> str:
    parts = [f"{k} {v['win_rate']:.0%}" for k, v in entry.items() if isinstance(v, dict)]
    return ", ".join(parts) or "-"


def train(config: TrainConfig, resume: bool = False) -> Path:
    """Train (or resume) the run ``config.run_dir``; return the checkpoint path.

    A new run refuses a directory that already holds a checkpoint (resume it instead)."""
    config.check()
    run_dir = config.run_dir
    if not resume and (run_dir / CHECKPOINT).exists():
        raise TrainingError(f"{run_dir} already holds a run: resume it or choose another --name")
    run_dir.mkdir(parents=True, exist_ok=True)
    th.set_num_threads(config.torch_threads)
    batched = config.engine == "batched"
    venv = None
    try:
        if resume:
            venv = spaces_env(config) if batched else make_vec_env(config, 0)
            model, state = load_checkpoint(run_dir, venv)
            # A resumed run deals new games rather than replaying the first ones.
            venv.seed(spawn_seed(config.seed, ENV_STREAM, model.num_timesteps))
            model.set_logger(configure(str(run_dir / "tb"), ["tensorboard"]))
        else:
            write_config(config)
            seed = spawn_seed(config.seed, ENV_STREAM, 0)
            venv = spaces_env(config) if batched else make_vec_env(config, seed)
            model, state = build_model(config, venv), RunState()
            if config.imitate:
                for key, value in imitate(model, config).items():
                    model.logger.record(key, value)
                save_policy_only(model, run_dir / "imitation.zip")
        callback = _RunCallback(config, state, venv)
        remaining = config.total_steps - model.num_timesteps
        try:
            if remaining > 0 and batched:
                _learn_selfplay(model, config, callback)
            elif remaining > 0:
                model.learn(remaining, callback=callback, reset_num_timesteps=False)
        except KeyboardInterrupt:
            path = save_checkpoint(model, config, state)
            callback.close()
            print(f"\ninterrupted at step {model.num_timesteps:,}: checkpoint saved to {path}")
            raise
        callback.close()
        if config.eval_every and (
            not state.evaluations or state.evaluations[-1]["step"] != model.num_timesteps
        ):
            callback.model = model
            callback.run_evaluation()
            model.logger.dump(step=model.num_timesteps)
        return save_checkpoint(model, config, state)
    finally:
        if venv is not None:
            close_vec_env(venv)


def _learn_selfplay(model: Any, config: TrainConfig, callback: _RunCallback) -> None:
    """Train to ``config.total_steps`` by batched self-play; ``callback`` does the run's
    bookkeeping after each update, as it does at each rollout's end with ``model.learn``."""
    steps = model.num_timesteps
    pool = None
    if config.opponents != [LEARNER]:
        seed = spawn_seed(config.seed, POOL_STREAM, steps)
        pool = OpponentPool(config.opponents, config.game.players, config.seat, seed)
    callback.pool = pool
    callback.init_callback(model)
    callback.on_training_start({}, {})
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
        pool=pool,
    )


__all__ = ["ENV_STREAM", "EVAL_STREAM", "POOL_STREAM", "build_model", "evaluate", "train"]
