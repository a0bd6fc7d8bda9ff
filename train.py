"""Train a PPO agent for Odin (the logic lives in :mod:`agents.training`).

    python train.py --name greedy1 --opponents greedy --total-steps 2000000
    python train.py --name pool1 --init runs/greedy1/best.zip --opponents greedy planner self
    python train.py --resume runs/pool1 [--total-steps 6000000]
    python train.py --name soup --average runs/a/checkpoint.zip runs/b/checkpoint.zip
    python train.py --name fast1 --engine batched --opponents greedy self --total-steps 5000000
    python train.py --name self1 --engine batched --opponents learner --total-steps 5000000
    tensorboard --logdir runs

The trained model plays as ``ppo:runs/NAME/best.zip`` (or any checkpoint) in ``evaluate.py``.
``--engine batched`` plays all games in lockstep on the batched engine in this process (the
fastest way to train; ``--opponents learner``: the learner holds every seat, shared-parameter
self-play). Loading a checkpoint unpickles it: load only trusted files. Ctrl-C (or SIGTERM)
saves a checkpoint first.
Exit codes: 0 done, 2 a bad setting or an unusable run/checkpoint, 130 interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
from dataclasses import fields
from pathlib import Path

from agents.training import TrainConfig, TrainingError, read_config, train

_DEFAULTS = TrainConfig()
# flag -> (field, type, help); game settings use the same names as evaluate.py.
_FLAGS = {
    "--name": ("name", str, "run directory name under --runs-dir"),
    "--runs-dir": ("runs_dir", str, "where runs live"),
    "--players": ("players", int, "seats at the table, 2-6"),
    "--threshold": ("threshold", int, "penalty total that ends a game"),
    "--colours": ("colours", int, "colours in play (default: 4 for 2 players, else 6)"),
    "--first-player": ("first_player", str, "rotate, winner, random or fixed"),
    "--episode": ("episode", str, "game or hand"),
    "--reward": ("reward", str, "penalty (dense, per hand) or win"),
    "--seat": ("seat", int, "the learner's fixed seat (default: drawn per episode)"),
    "--engine": (
        "engine",
        str,
        "subproc (an env process each) or batched (lockstep games, fastest)",
    ),
    "--selfplay-batch": ("selfplay_batch", int, "games in lockstep with --engine batched"),
    "--total-steps": ("total_steps", int, "learner decisions in all (resumed steps count)"),
    "--n-envs": ("n_envs", int, "environments, one subprocess each"),
    "--n-steps": ("n_steps", int, "steps per environment per rollout"),
    "--batch-size": ("batch_size", int, "PPO minibatch size"),
    "--n-epochs": ("n_epochs", int, "PPO epochs per rollout"),
    "--learning-rate": ("learning_rate", float, "Adam step size"),
    "--gamma": ("gamma", float, "discount per decision"),
    "--gae-lambda": ("gae_lambda", float, "GAE lambda"),
    "--clip-range": ("clip_range", float, "PPO clip range"),
    "--ent-coef": ("ent_coef", float, "entropy bonus"),
    "--vf-coef": ("vf_coef", float, "value loss weight"),
    "--snapshot-every": ("snapshot_every", int, "steps between learner snapshots ('self')"),
    "--max-snapshots": ("max_snapshots", int, "snapshots kept in the 'self' pool"),
    "--checkpoint-every": ("checkpoint_every", int, "steps between checkpoints"),
    "--eval-every": ("eval_every", int, "steps between evaluations (0: never)"),
    "--eval-deals": ("eval_deals", int, "deals per evaluation opponent, from every seat"),
    "--torch-threads": ("torch_threads", int, "torch threads per process"),
    "--init": ("init", str, "start from the weights of this model .zip"),
    "--imitate": ("imitate", str, "warm start: first imitate this agent's play (e.g. planner)"),
    "--imitate-games": ("imitate_games", int, "self-play games of the imitated agent"),
    "--imitate-epochs": ("imitate_epochs", int, "passes over the imitation data"),
    "--prior": ("prior", str, "residual policy over this heuristic (e.g. planner; batched engine)"),
    "--seed": ("seed", int, "seed of the model, environments and evaluations"),
}
_LISTS = {
    "--opponents": ("opponents", str, "opponent pool: agent specs and/or self"),
    "--eval-opponents": ("eval_opponents", str, "agents to evaluate against"),
    "--net-pi": ("net_pi", int, "actor hidden layer sizes"),
    "--net-vf": ("net_vf", int, "critic hidden layer sizes"),
}


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line; every setting defaults to :class:`TrainConfig`'s value."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    for flag, (name, kind, text) in _FLAGS.items():
        default = getattr(_DEFAULTS, name)
        parser.add_argument(
            flag, dest=name, type=kind, default=None, help=f"{text} (default: {default})"
        )
    for flag, (name, kind, text) in _LISTS.items():
        default = " ".join(map(str, getattr(_DEFAULTS, name)))
        parser.add_argument(
            flag, dest=name, type=kind, nargs="+", default=None, help=f"{text} (default: {default})"
        )
    parser.add_argument(
        "--average",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="instead of training: write the parameter average of the model .zips given "
        "(checkpoints of runs from one start) to runs/NAME/average.zip",
    )
    parser.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue runs/NAME from its checkpoint (only --total-steps may change)",
    )
    return parser.parse_args(argv)


def config_from_args(args: argparse.Namespace) -> tuple[TrainConfig, bool]:
    """The run's config and whether it resumes; ``TrainingError``/``ValueError`` if invalid."""
    given = {f.name: getattr(args, f.name) for f in fields(TrainConfig)}
    given = {k: v for k, v in given.items() if v is not None}
    if args.resume is None:
        config = TrainConfig(**given)
        config.check()
        return config, False
    config = read_config(args.resume)
    extra = sorted(k for k in given if k != "total_steps")
    if extra:
        raise TrainingError(
            f"--resume keeps the run's settings; only --total-steps may change, got {extra}"
        )
    config.total_steps = given.get("total_steps", config.total_steps)
    config.runs_dir, config.name = str(args.resume.parent), args.resume.name
    return config, True


def average(args: argparse.Namespace) -> Path:
    """``--average``: the parameter average of the given models, as ``runs/NAME/average.zip``."""
    from agents.ppo import average_models

    out = Path(args.runs_dir or _DEFAULTS.runs_dir) / (args.name or _DEFAULTS.name) / "average.zip"
    for path in args.average:
        if not path.is_file():
            raise ValueError(f"--average: no model at {path}")
    created = not out.parent.exists()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        return average_models(args.average, out)
    except ValueError:
        if created:
            out.parent.rmdir()
        raise


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = parse_args(argv)
    # Background launches (nohup ... &) inherit an ignored SIGINT; restore Ctrl-C, and let a
    # plain `kill` (SIGTERM) also save a checkpoint before exiting.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        if args.average:
            path = average(args)
        else:
            config, resume = config_from_args(args)
            path = train(config, resume=resume)
    except (TrainingError, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    print(f"done: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
