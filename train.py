"""Train a PPO agent for Odin (the logic lives in the ``training`` package).

    python train.py --name greedy1 --opponents greedy --total-steps 2000000
    python train.py --name pool1 --init runs/greedy1/best.zip --opponents greedy planner self
    python train.py --resume runs/pool1 [--total-steps 6000000]
    python train.py --name soup --average runs/a/checkpoint.zip runs/b/checkpoint.zip
    python train.py --name self1 --opponents learner --total-steps 5000000
    tensorboard --logdir runs

Every flag is a field of ``odin_env.rules.Config`` (the game) or ``training.TrainConfig`` (the
run), with the same name. The trained model plays as ``ppo:runs/NAME/best.zip`` in
``evaluate.py``. Ctrl-C (or SIGTERM) saves a checkpoint first.
Exit codes: 0 done, 2 a bad setting or an unusable run/checkpoint, 130 interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

import cli
from odin_env.rules import Config
from training import TrainConfig, TrainingError, average_models, read_config, train
from training.config import check_run_name

PROG = "train.py"


def parser() -> cli.Parser:
    """The command line: one flag per game and run setting, plus ``--average`` and ``--resume``."""
    p = cli.Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    game = p.add_argument_group("game (odin_env.rules.Config)")
    cli.add_fields(game, Config, skip=["seed"])
    run = p.add_argument_group("run (training.TrainConfig)")
    cli.add_fields(run, TrainConfig, skip=["game"])
    p.add_argument(
        "--average",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="instead of training: write the parameter average of the model .zips given "
        "(checkpoints of runs from one start) to runs/NAME/average.zip",
    )
    p.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue runs/NAME from its checkpoint (only --total-steps may change)",
    )
    return p


GAME_FIELDS = [name for name in Config.__dataclass_fields__ if name != "seed"]
RUN_FIELDS = [name for name in TrainConfig.__dataclass_fields__ if name != "game"]


def config_from_args(args: argparse.Namespace) -> tuple[TrainConfig, bool]:
    """The run's config and whether it resumes; ``TrainingError``/``ValueError`` if invalid."""
    game, run = cli.given(args, GAME_FIELDS), cli.given(args, RUN_FIELDS)
    if args.resume is None:
        config = TrainConfig(game=Config(**game), **run)
        config.check()
        return config, False
    config = read_config(args.resume)
    extra = sorted(k for k in {**game, **run} if k != "total_steps")
    if extra:
        raise TrainingError(
            f"--resume keeps the run's settings; only --total-steps may change, got {extra}"
        )
    config.total_steps = run.get("total_steps", config.total_steps)
    config.runs_dir, config.name = str(args.resume.parent), args.resume.name
    return config, True


def average(args: argparse.Namespace) -> Path:
    """``--average``: the parameter average of the given models, as ``runs/NAME/average.zip``."""
    defaults = TrainConfig()
    name = check_run_name(args.name or defaults.name)
    out = Path(args.runs_dir or defaults.runs_dir) / name / "average.zip"
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
    args = parser().parse_args(argv)
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
        return cli.fail(PROG, error)
    except KeyboardInterrupt:
        return 130
    print(f"done: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
