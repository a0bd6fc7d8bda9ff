"""Train an agent for Odin with one of the lab's algorithms (``odin_lab.training``).

    python train.py --name greedy1 --opponents greedy --total-steps 2000000
    python train.py --algo ppo --help          # the flags of one algorithm (default: dmc)
    python train.py --name pool1 --init runs/greedy1/best.safetensors --opponents greedy self
    python train.py --resume runs/pool1 [--total-steps 6000000]
    python train.py --name soup --average runs/a/best.safetensors runs/b/best.safetensors
    python train.py --name both --ensemble runs/a/best.safetensors runs/c/best.safetensors
    python train.py --import-sb3-zip old.zip --name old   # trusted files only: it unpickles
    python train.py --name self1 --opponents learner --total-steps 5000000
    python train.py --algo ppo --name big --ray HOST:6379 --actors 15   # PPO's rollouts on Ray
    python train.py --name dmc-big --ray HOST:6379 --actors 60 --device cuda   # DMC's actors
    tensorboard --logdir runs

Every flag is a field of ``odin_env.rules.Config`` (the game), ``odin_lab.training.TrainConfig``
(the run) or the algorithm's settings (``--algo``, default dmc), with the same name. The trained
model plays as ``dmc:runs/NAME/best.safetensors`` (``KIND:PATH``, the algorithm's kind) in
``evaluate.py``. Model files and checkpoints are safetensors + JSON (docs/model-format.md):
reading them never unpickles. Ctrl-C (or SIGTERM) saves a checkpoint first.
Exit codes: 0 done, 2 a bad setting or an unusable run/checkpoint, 130 interrupted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Callable
from dataclasses import fields
from pathlib import Path

from agents.dmc import MAX_SYMMETRIES
from odin_env.rules import Config
from odin_lab import cli
from odin_lab.evaluation.deals import PlayerFailed
from odin_lab.evaluation.results import stop_once
from odin_lab.evaluation.trust import TRUST_FLAG
from odin_lab.training import (
    ALGORITHMS,
    TrainConfig,
    TrainingError,
    average_models,
    ensemble_models,
    make_config,
    read_config,
    train,
)
from odin_lab.training.checkpoints import RESUMABLE_CHANGES
from odin_lab.training.config import DEFAULT_ALGO, check_run_name, run_fields

PROG = cli.program("train.py")
RESUMABLE_FLAGS = [n for n in RESUMABLE_CHANGES if n not in ("name", "runs_dir", "soup")]
"""The settings ``--resume`` lets a flag change: those a checkpoint may differ in, less the
run's name and folder (``--resume`` names them) and ``soup`` (kept as the run began)."""
CHANGEABLE = ", ".join(map(cli.flag, RESUMABLE_FLAGS))
"""Their flags, as the help and the refusal name them."""


def parser(algo: str = DEFAULT_ALGO) -> cli.Parser:
    """The command line: one flag per game, run and ``algo`` setting, plus ``--average`` and
    ``--resume``."""
    p = cli.Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--algo",
        default=DEFAULT_ALGO,
        metavar="NAME",
        help="the learning algorithm: "
        + "; ".join(f"{a.name}: {a.summary}" for a in ALGORITHMS.values())
        + f" (default: {DEFAULT_ALGO}; --algo NAME --help shows its flags)",
    )
    game = p.add_argument_group("game (odin_env.rules.Config)")
    cli.add_fields(game, Config, skip=["seed"])
    run = p.add_argument_group("run (odin_lab.training.TrainConfig)")
    cli.add_fields(run, TrainConfig, skip=["game", "algo", "algo_config"], consts={"ray": "local"})
    section = ALGORITHMS[algo].settings
    cli.add_fields(
        p.add_argument_group(f"{algo} ({section.__module__}.{section.__name__})"), section
    )
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
        "--ensemble",
        nargs="+",
        type=Path,
        metavar="PATH",
        help="instead of training: write one DMC network whose values are the mean of the DMC "
        "model files' given (the same depth and horizon) to runs/NAME/ensemble.safetensors",
    )
    p.add_argument(
        "--symmetries",
        type=int,
        metavar="K",
        help="with --ensemble: its player reads each position under K labellings of the colours "
        f"in play and plays the mean value (1 .. {MAX_SYMMETRIES}; default 1: as the network "
        "alone)",
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
        help=f"continue runs/NAME from its checkpoint (only {CHANGEABLE} may change)",
    )
    p.add_argument(
        TRUST_FLAG,
        action="append",
        default=[],
        metavar="SPEC",
        help="with --resume: run this outside agent (module:Name, path/to/file.py:Name, a "
        "package's name) that the run's config.json names; a run folder is data, so its "
        "outside code runs only when the command line names it again (repeat for each)",
    )
    return p


def parse(argv: list[str] | None) -> argparse.Namespace:
    """The arguments, parsed with the flags of the algorithm ``--algo`` names; one line and exit
    2 for an unknown algorithm or another algorithm's flag."""
    first = cli.Parser(prog=PROG, add_help=False)
    first.add_argument("--algo", default=DEFAULT_ALGO)
    known, _ = first.parse_known_args(argv)
    if known.algo not in ALGORITHMS:
        first.error(f"--algo must be one of {', '.join(ALGORITHMS)}; got {known.algo!r}")
    p = parser(known.algo)
    args, rest = p.parse_known_args(argv)
    retired = getattr(ALGORITHMS[known.algo].settings, "RETIRED", {})
    for word in rest:
        name = word.split("=", 1)[0]
        gone = retired.get(name[2:].replace("-", "_"))
        if gone is not None and name.startswith("--") and not gone.values:
            p.error(gone.line(name))
        for other in ALGORITHMS.values():
            if other.name != known.algo and name in map(cli.flag, _section_fields(other.name)):
                p.error(f"{name} is a setting of --algo {other.name}, not of {known.algo}")
    if rest:
        p.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


GAME_FIELDS = [name for name in Config.__dataclass_fields__ if name != "seed"]


def _section_fields(algo: str) -> list[str]:
    return [f.name for f in fields(ALGORITHMS[algo].settings)]


def config_from_args(args: argparse.Namespace) -> tuple[TrainConfig, bool]:
    """The run's config and whether it resumes; ``TrainingError``/``ValueError`` if invalid."""
    game = cli.given(args, GAME_FIELDS)
    run = cli.given(args, [n for n in run_fields() if n != "algo"])
    section = cli.given(args, _section_fields(args.algo))
    if args.resume is None and args.trust:
        raise TrainingError(
            f"{TRUST_FLAG} names a run folder's outside agents: give it with --resume"
        )
    if args.resume is None:
        config = make_config(args.algo, Config(**game), **run, **section)
        config.check()
        return config, False
    config = read_config(args.resume, trust=args.trust)
    extra = sorted(k for k in {**game, **run, **section} if k not in RESUMABLE_FLAGS)
    if extra:
        raise TrainingError(
            f"--resume keeps the run's settings; only {CHANGEABLE} may change, got {extra}"
        )
    for name in RESUMABLE_FLAGS:
        setattr(config, name, run.get(name, getattr(config, name)))
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


COMBINE = {"average": average_models, "ensemble": ensemble_models}
"""The jobs that write one model from several, by flag: their parameter average (a soup) or
their output ensemble (DMC models), as ``runs/NAME/<job>.safetensors``."""


def combine(args: argparse.Namespace, job: str) -> Path:
    """``--average`` or ``--ensemble`` (``job``): the models given, combined into
    ``runs/NAME/<job>.safetensors``."""
    paths = getattr(args, job)
    out = _output(args, f"{job}.safetensors")
    extra = {} if args.symmetries is None else {"symmetries": args.symmetries}
    try:
        for path in paths:
            if not path.is_file():
                raise ValueError(f"no model at {path}")
        return _write_new(out, lambda: COMBINE[job](paths, out, **extra))
    except ValueError as error:  # the library's message, named by the flag it came from
        raise ValueError(f"--{job}: {error}") from None


def import_sb3_zip(args: argparse.Namespace) -> Path:
    """``--import-sb3-zip``: a trusted MaskablePPO .zip (unpickled!) as a lab model file."""
    from agents.model_file import read_sb3_zip
    from odin_lab.files import write_model

    out = _output(args, "imported.safetensors")
    info, state = read_sb3_zip(args.import_sb3_zip)  # the opt-in: this unpickles
    if args.players is not None:
        info["players"] = args.players
    return _write_new(out, lambda: write_model(out, state, info))


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code."""
    args = parse(argv)
    cli.restore_interrupts()  # Ctrl-C or `kill` saves a checkpoint before exiting
    chosen = [f for f in ("average", "ensemble", "import_sb3_zip", "resume") if getattr(args, f)]
    if len(chosen) > 1:
        flags = " and ".join(cli.flag(f) for f in chosen)
        return cli.fail(PROG, f"{flags} are different jobs: give one of them")
    if args.symmetries is not None and not args.ensemble:
        return cli.fail(PROG, "--symmetries is a setting of --ensemble: give it with --ensemble")
    if args.symmetries is not None and not 1 <= args.symmetries <= MAX_SYMMETRIES:
        return cli.fail(
            PROG, f"--symmetries {args.symmetries}: allowed 1 .. {MAX_SYMMETRIES} (labellings)"
        )
    try:
        # The first Ctrl-C or SIGTERM saves a checkpoint; a later one is dropped, also on the
        # way out, so that it cannot cut the save short or kill the exit.
        with stop_once():
            if args.average or args.ensemble:
                path = combine(args, "average" if args.average else "ensemble")
            elif args.import_sb3_zip:
                path = import_sb3_zip(args)
            else:
                config, resume = config_from_args(args)
                path = train(config, resume=resume)
    except (TrainingError, ValueError, FileNotFoundError) as error:
        return cli.fail(PROG, error)
    except OSError as error:  # a full disk, an unwritable folder: the files before stay whole
        return cli.fail(
            PROG, f"cannot write ({error.strerror or error}: {error.filename or ''}); the run's "
            "files are as they were at the last checkpoint"
        )  # fmt: skip
    except PlayerFailed as stopped:  # an evaluation opponent failed: stopped as by Ctrl-C
        return cli.fail(
            PROG, f"{stopped.failure}; the run is saved at its last checkpoint: fix the agent "
            "and add --resume"
        )  # fmt: skip
    except KeyboardInterrupt:
        return 130
    if path is not None:
        print(f"done: {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
