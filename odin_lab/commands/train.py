"""Train a PPO agent for Odin (the logic lives in the ``odin_lab.training`` package).

    python train.py --name greedy1 --opponents greedy --total-steps 2000000
    python train.py --name pool1 --init runs/greedy1/best.safetensors --opponents greedy self
    python train.py --resume runs/pool1 [--total-steps 6000000]
    python train.py --name soup --average runs/a/best.safetensors runs/b/best.safetensors
    python train.py --import-sb3-zip old.zip --name old   # trusted files only: it unpickles
    python train.py --name self1 --opponents learner --total-steps 5000000
    python train.py --name big --ray HOST:6379 --actors 15   # rollouts on a Ray cluster
    tensorboard --logdir runs

Every flag is a field of ``odin_env.rules.Config`` (the game) or ``odin_lab.training.TrainConfig``
(the run), with the same name. The trained model plays as ``ppo:runs/NAME/best.safetensors`` in
``evaluate.py``. Model files and checkpoints are safetensors + JSON (docs/model-format.md):
reading them never unpickles. Ctrl-C (or SIGTERM) saves a checkpoint first.
Exit codes: 0 done, 2 a bad setting or an unusable run/checkpoint, 130 interrupted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

from odin_env.rules import Config
from odin_lab import cli
from odin_lab.training import TrainConfig, TrainingError, average_models, read_config, train
from odin_lab.training.config import check_run_name

PROG = cli.program("train.py")


def parser() -> cli.Parser:
    """The command line: one flag per game and run setting, plus ``--average`` and ``--resume``."""
    p = cli.Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    game = p.add_argument_group("game (odin_env.rules.Config)")
    cli.add_fields(game, Config, skip=["seed"])
    run = p.add_argument_group("run (training.TrainConfig)")
    cli.add_fields(run, TrainConfig, skip=["game"], consts={"ray": "local"})
    p.add_argument(
        "--average",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="instead of training: write the parameter average of the model files given "
        "(checkpoints of runs from one start; one: its policy alone) to "
        "runs/NAME/average.safetensors",
    )
    p.add_argument(
        "--import-sb3-zip",
        type=Path,
        metavar="PATH",
        help="instead of training: convert a MaskablePPO .zip to a lab model file, "
        "runs/NAME/imported.safetensors. THIS UNPICKLES THE .zip (it can run code stored in "
        "it): only for files you trust. Every other command refuses .zip files",
    )
    p.add_argument(
        "--resume",
        type=Path,
        metavar="RUN_DIR",
        help="continue runs/NAME from its checkpoint (only --total-steps and --ray may change)",
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
    extra = sorted(k for k in {**game, **run} if k not in ("total_steps", "ray"))
    if extra:
        raise TrainingError(
            "--resume keeps the run's settings; only --total-steps and --ray (the cluster) may "
            f"change, got {extra}"
        )
    config.total_steps = run.get("total_steps", config.total_steps)
    config.ray = run.get("ray", config.ray)
    config.runs_dir, config.name = str(args.resume.parent), args.resume.name
    return config, True


def _output(args: argparse.Namespace, filename: str) -> Path:
    defaults = TrainConfig()
    name = check_run_name(args.name or defaults.name)
    return Path(args.runs_dir or defaults.runs_dir) / name / filename


def _write_new(out: Path, write: Callable[[], Path]) -> Path:
    """Run ``write`` (which writes ``out``); a folder it needed is removed again on failure."""
    created = not out.parent.exists()
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        return write()
    except BaseException:
        if created:
            shutil.rmtree(out.parent, ignore_errors=True)
        raise


def average(args: argparse.Namespace) -> Path:
    """``--average``: the parameter average of the models, ``runs/NAME/average.safetensors``."""
    out = _output(args, "average.safetensors")
    for path in args.average:
        if not path.is_file():
            raise ValueError(f"--average: no model at {path}")
    return _write_new(out, lambda: average_models(args.average, out))


def import_sb3_zip(args: argparse.Namespace) -> Path:
    """``--import-sb3-zip``: a trusted MaskablePPO .zip (unpickled!) as a lab model file."""
    from agents.ppo import read_sb3_zip, write_model

    out = _output(args, "imported.safetensors")
    info, state = read_sb3_zip(args.import_sb3_zip)  # the opt-in: this unpickles
    if args.players is not None:
        info["players"] = args.players
    return _write_new(out, lambda: write_model(out, state, info))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = parser().parse_args(argv)
    cli.restore_interrupts()  # Ctrl-C or `kill` saves a checkpoint before exiting
    try:
        if args.average:
            path = average(args)
        elif args.import_sb3_zip:
            path = import_sb3_zip(args)
        else:
            config, resume = config_from_args(args)
            path = train(config, resume=resume)
    except (TrainingError, ValueError, FileNotFoundError) as error:
        return cli.fail(PROG, error)
    except KeyboardInterrupt:
        return 130
    if path is not None:
        print(f"done: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
