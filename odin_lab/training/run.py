"""The run services, written once for every algorithm: a training run from start to end around a
:class:`odin_lab.training.learner.Learner`, keeping the run's files up to date.

:func:`run` builds the learner (or resumes it from its checkpoint), lets it warm-start, calls
its ``train_step`` until ``total_steps``, and between steps takes the snapshots, evaluations and
checkpoints that fall due. It imports no algorithm: the registry
(:mod:`odin_lab.training.algorithms`) hands it the learner class.

One run lives in ``runs/NAME/``:

==========================  ==================================================================
``config.json``             the exact :class:`TrainConfig` (and library versions)
``checkpoint.safetensors``  the last checkpoint (:mod:`odin_lab.training.checkpoints`), written
                            every ``checkpoint_every`` steps, at the end and on Ctrl-C, atomically
``best.safetensors``        the player with the best evaluation score so far
``best.json``               its score and step (written after it)
``kept/``                   with ``soup``: the players of the last ``soup`` checkpoints
``soup.safetensors``        with ``soup``: their parameter average, written at the run's end
``evaluations.jsonl``       one line per evaluation: step, win rate and 95% interval per
                            opponent (rewritten atomically; a resume rolls it back to the
                            checkpoint's step, so the run's files describe one history)
``tb/``                     TensorBoard: ``opponents/<kind>/win_rate`` and ``mean_penalty``,
                            ``charts/episode_length``, ``charts/steps_per_s``,
                            ``eval/<agent>/...`` and the algorithm's own (``train/...``)
==========================  ==================================================================

and what the algorithm's warm start writes (PPO: ``imitation.safetensors``).

Seeds: every stream is a ``SeedSequence`` sub-stream of ``TrainConfig.seed``
(:data:`odin_lab.training.learner.GAMES_STREAM` ...), so a seeded run is reproducible.
"""

from __future__ import annotations

import math
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from odin_env.seeding import spawn_seed
from odin_lab.evaluation.limits import MAX_CONFIG_BYTES, read_json
from odin_lab.evaluation.stats import seat_shares, wilson
from odin_lab.evaluation.tournament import play_tournament
from odin_lab.training.checkpoints import (
    BEST,
    BEST_RECORD,
    CHECKPOINT,
    OLD_CHECKPOINT,
    SOUP,
    RunState,
    average_models,
    best_on_record,
    drop_kept_after,
    kept_path,
    kept_policies,
    load_checkpoint,
    provenance,
    prune_kept,
    save_checkpoint,
    write_best_record,
    write_config,
    write_evaluations,
)
from odin_lab.training.config import SEARCHING, TrainConfig, TrainingError
from odin_lab.training.learner import EVAL_STREAM, Learner, held_interrupts
from odin_lab.training.pool import SELF
from odin_lab.training.progress import Progress

EVAL_MODEL = "eval_model.safetensors"
"""The player being evaluated (renamed to the best model if it scores best)."""


def evaluate(
    model_path: Path,
    config: TrainConfig,
    opponent: str,
    deals: int,
    seed: int,
    progress: bool = False,
    workers: int = 1,
    kind: str = "ppo",
) -> dict[str, float]:
    """Win rate, 95% Wilson interval and mean penalty of ``KIND:model_path`` against copies of
    ``opponent`` in seeded, seat-rotated games (:mod:`odin_lab.evaluation.tournament`)."""
    game = config.game
    specs = [f"{kind}:{model_path}"] + [opponent] * (game.players - 1)
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


class _Log:
    """TensorBoard scalars under ``run_dir/tb`` (created on the first write)."""

    def __init__(self, run_dir: Path):
        self.folder, self.writer = run_dir / "tb", None

    def write(self, figures: dict[str, float], step: int) -> None:
        if not figures:
            return
        if self.writer is None:
            from torch.utils.tensorboard import SummaryWriter

            self.writer = SummaryWriter(str(self.folder))
        for key, value in figures.items():
            self.writer.add_scalar(key, float(value), step)
        self.writer.flush()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


class _Services:
    """What happens between a learner's steps: snapshots, evaluations, checkpoints, the soup's
    kept players, the progress bar and the log."""

    def __init__(self, config: TrainConfig, learner: Learner, state: RunState):
        self.config, self.learner, self.state = config, learner, state
        steps = learner.steps
        self.last_checkpoint = steps - steps % config.checkpoint_every
        every = config.eval_every
        self.last_eval = steps - steps % every if every else steps
        self.latest_eval = _eval_text(state.evaluations[-1]) if state.evaluations else "-"
        self.log = _Log(config.run_dir)
        self.progress: Progress | None = None
        self.saved = steps
        """The step of the last checkpoint written (or resumed from)."""
        self.best_step = -1
        """The step of the last new best model written by this process."""

    def open_bar(self) -> None:
        target = self.config.total_steps
        self.progress = Progress(
            target, self.learner.steps, desc=f"train (to the first update >= {target:,})"
        )

    def after_step(self, figures: dict[str, float], done: int) -> None:
        """After a step of ``done`` decisions: log, then what falls due at this step (the final
        step's evaluation is :func:`run`'s, shown on the console)."""
        config, learner = self.config, self.learner
        steps = learner.steps
        broken = sorted(k for k, v in figures.items() if not math.isfinite(v))
        if broken:
            raise TrainingError(
                f"training diverged at step {steps:,} ({broken[0]} is {figures[broken[0]]}): "
                f"the last checkpoint, step {self.saved:,}, is intact; start a new run from it "
                "(--init) with a lower learning rate, or change the settings"
            )
        # Ctrl-C is held through the bookkeeping (the bar's and TensorBoard's locks and
        # threads, a checkpoint): it takes effect at the next clean point, at the latest when
        # an evaluation's games start; only the games themselves are cut short.
        with held_interrupts():
            self.progress.advance(done)
            rate = self.progress.rate()
            self.log.write({**figures, "charts/steps_per_s": rate}, steps)
            if SELF in config.opponents and steps - learner.last_snapshot >= config.snapshot_every:
                learner.snapshot()
        final = steps >= config.total_steps
        if config.eval_every and steps - self.last_eval >= config.eval_every and not final:
            self.last_eval = steps
            self.evaluation()
        with held_interrupts():
            # A new best model is covered by a checkpoint at once, so the best model on record
            # is never of a step that a resume would not reach (but for a kill in between).
            if self.best_step == steps or steps - self.last_checkpoint >= config.checkpoint_every:
                self.last_checkpoint = steps
                self.checkpoint()
                self.keep()
            self.progress.show(rate, f"eval {self.latest_eval}")

    def checkpoint(self) -> Path:
        learner = self.learner
        path = save_checkpoint(self.config, learner.steps, self.state, learner.checkpoint())
        self.saved = learner.steps
        return path

    def keep(self) -> None:
        """Keep the player at this step for the soup, and only the last ``soup`` of them."""
        config = self.config
        if config.soup:
            path = kept_path(config.run_dir, self.learner.steps)
            path.parent.mkdir(exist_ok=True)
            self.learner.write_player(path, provenance(config))
            prune_kept(config.run_dir, config.soup)

    def evaluation(self, show: bool = False) -> dict[str, Any]:
        """Evaluate the current player against each evaluation opponent; keep the best model
        (``best.safetensors``, then its record ``best.json``) and the log; return the entry."""
        config, learner = self.config, self.learner
        steps, run_dir = learner.steps, config.run_dir
        current = run_dir / EVAL_MODEL
        learner.write_player(current, provenance(config))
        entry: dict[str, Any] = {"step": steps}
        figures = {}
        for k, opponent in enumerate(config.eval_opponents):
            seed = spawn_seed(config.seed, EVAL_STREAM, k)
            result = evaluate(
                current, config, opponent, config.eval_deals, seed, show, kind=learner.kind
            )
            entry[opponent] = result
            for key in ("win_rate", "mean_penalty"):
                figures[f"eval/{opponent}/{key}"] = result[key]
        with held_interrupts():  # the files of one evaluation change together
            score = float(np.mean([entry[o]["win_rate"] for o in config.eval_opponents]))
            entry["score"] = score
            self.state.evaluations.append(entry)
            if score > self.state.best_score:
                self.state.best_score = score
                os.replace(current, run_dir / BEST)
                write_best_record(run_dir, score, steps)
                self.best_step = steps
            else:
                current.unlink(missing_ok=True)
            write_evaluations(run_dir, self.state.evaluations)
            self.log.write(figures, steps)
            self.latest_eval = _eval_text(entry)
        return entry

    def close(self) -> None:
        if self.progress is not None:
            self.progress.close()
        self.log.close()


def _eval_text(entry: dict[str, Any]) -> str:
    parts = [f"{k} {v['win_rate']:.0%}" for k, v in entry.items() if isinstance(v, dict)]
    return ", ".join(parts) or "-"


def final_text(entry: dict[str, Any], config: TrainConfig, kind: str) -> str:
    """The last evaluation as a person reads it: each opponent's win share with its interval and
    the fair share, then the command that evaluates the best model."""
    fair = 1 / config.game.players
    parts = [
        f"{name} {v['win_rate']:.1%} [{v['ci_low']:.1%}, {v['ci_high']:.1%}] "
        f"over {v['games']} games"
        for name, v in entry.items()
        if isinstance(v, dict)
    ]
    best = config.run_dir / BEST
    return (
        f"final evaluation at step {entry['step']:,}: "
        + "; ".join(parts)
        + f" (fair share {fair:.0%})\nnext: python evaluate.py tournament --agents "
        + f"{kind}:{best} "
        + " ".join(["planner"] * (config.game.players - 1))
        + " --games 1000"
    )


def _start(
    config: TrainConfig, resume: bool, learner_class: Callable[[TrainConfig], Learner]
) -> tuple[Learner, RunState]:
    """The learner and run state of a new or resumed run."""
    learner = learner_class(config)
    if not resume:
        return learner, RunState()
    try:
        tensors, run, state = load_checkpoint(config.run_dir, config)
        try:
            learner.load_checkpoint(tensors, run)
        except Exception as error:  # noqa: BLE001 - any failure here means an unusable file
            first = (str(error).splitlines() or [""])[0]
            raise TrainingError(
                f"cannot resume from {config.run_dir / CHECKPOINT}: corrupt or incompatible "
                f"checkpoint ({type(error).__name__}: {first})"
            ) from None
    except BaseException:
        learner.close()
        raise
    if set_aside_best_ahead(config.run_dir, learner.steps) is not None:
        # The checkpoint's own best model was overwritten by the one set aside: the next
        # evaluation writes this history's best again.
        state.best_score = -math.inf
    # The best model is never replaced by a worse one than the best on record.
    state.best_score = max(state.best_score, best_on_record(config.run_dir))
    return learner, state


def set_aside_best_ahead(run_dir: Path, step: int) -> Path | None:
    """After a kill between a new best model and the checkpoint that covers it, the best model
    is of a step past the checkpoint's ``step``: of the history the resume abandons. It moves to
    ``best-of-step-S.safetensors`` (kept, never lost, and said in one line), so that the run's
    files describe one history. Return its new path (None: nothing to do)."""
    record = run_dir / BEST_RECORD
    try:
        ahead = int(read_json(record, MAX_CONFIG_BYTES)["step"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if ahead <= step or not (run_dir / BEST).is_file():
        return None
    kept = run_dir / f"best-of-step-{ahead}.safetensors"
    os.replace(run_dir / BEST, kept)
    record.unlink()
    print(
        f"{run_dir / BEST} was of step {ahead:,}, past the checkpoint's {step:,} (a kill between "
        f"the two): kept as {kept.name}; the resumed run keeps its own best"
    )
    return kept


def run(
    config: TrainConfig, learner_class: Callable[[TrainConfig], Learner], resume: bool = False
) -> Path | None:
    """Train (or resume) the run ``config.run_dir`` with a learner of ``learner_class``;
    return the checkpoint path (``None``: a resumed run already at its target, which it says
    in one line).

    A new run refuses a directory that already holds a checkpoint (resume it instead); a run
    that fails to start leaves no new directory behind. Ctrl-C or SIGTERM saves a checkpoint of
    the last whole step, then re-raises ``KeyboardInterrupt``."""
    config.check()
    run_dir = config.run_dir
    if not resume and any((run_dir / n).exists() for n in (CHECKPOINT, OLD_CHECKPOINT)):
        raise TrainingError(f"{run_dir} already holds a run: resume it or choose another --name")
    if not resume and config.init is not None and not Path(config.init).is_file():
        raise TrainingError(f"--init must name a lab model file; there is none at {config.init!r}")
    if config.ray is not None:
        from odin_lab.evaluation.distributed import connect

        # A Ray started for the run has a CPU per actor, or per search worker for the
        # algorithms whose searches are its Ray tasks. A bad address fails here, before any file.
        connect(config.ray, config.workers if config.algo in SEARCHING else config.actors)
    created = not run_dir.exists()
    learner, state = _start(config, resume, learner_class)
    services = _Services(config, learner, state)
    try:
        if resume and learner.steps >= config.total_steps:
            print(
                f"{run_dir} is already at step {learner.steps:,}, at or past --total-steps "
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
                drop_kept_after(run_dir, learner.steps)
            else:
                write_config(config)
                services.log.write(learner.warm_start(run_dir, provenance(config)), 0)
        except BaseException:
            if created:
                shutil.rmtree(run_dir, ignore_errors=True)
            raise
        try:
            if learner.steps < config.total_steps:
                learner.start()
                services.open_bar()
                while learner.steps < config.total_steps:
                    before = learner.steps
                    figures = learner.train_step()
                    services.after_step(figures, learner.steps - before)
        except KeyboardInterrupt:
            # A step is whole (the learner holds Ctrl-C during its update), so the step count
            # matches the weights. A second Ctrl-C waits for the save to end.
            try:
                with held_interrupts():
                    path = services.checkpoint()
            except KeyboardInterrupt:
                pass
            services.close()
            print(f"\ninterrupted at step {learner.steps:,}: checkpoint saved to {path}")
            raise
        if services.progress is not None:
            services.progress.close()
        if config.eval_every and (
            not state.evaluations or state.evaluations[-1]["step"] != learner.steps
        ):
            print(f"final evaluation at step {learner.steps:,}")
            entry = services.evaluation(show=True)
            print(final_text(entry, config, learner.kind))
        path = services.checkpoint()
        if config.soup:
            services.keep()
            average_models(kept_policies(run_dir), run_dir / SOUP)
        return path
    finally:
        services.close()
        learner.close()


__all__ = ["EVAL_MODEL", "evaluate", "final_text", "run"]
