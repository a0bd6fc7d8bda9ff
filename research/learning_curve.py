"""How fast an algorithm learns from scratch: the win rate an agent of one of the lab's
algorithms (``--algo``, default DMC) reaches after fixed amounts of training wall-clock time,
against 3 x greedy and 3 x planner (4 players).

A new learner is trained with the algorithm's default settings (changed with ``--set NAME=VALUE``,
e.g. ``--set critic=full``) on the batched engine (``selfplay_batch`` games in lockstep, one torch
thread, one core) against ``--train-opponents``, seeded by ``--seed`` as
:func:`odin_lab.training.train` seeds a run, through the learner interface the run services use
(:class:`odin_lab.training.learner.Learner`). When the training clock passes each of
``--minutes`` (or the learner each of ``--steps`` decisions; at the end of the update that
crosses it, never two points on one update) the clock stops while the policy is saved as
``OUT/minutes-M.safetensors`` (``steps-N``)
and plays ``--deals`` deals, each from every seat (x4 games), against three copies of each
``--opponents`` agent: the same deals, from ``--eval-seed``, at every point and against every
opponent. A row is printed per (point, opponent) as soon as it is known; after each point
``OUT/learning_curve.json``, ``.csv`` and ``.png`` (and ``.pdf``) are rewritten atomically, so
Ctrl-C or a kill loses nothing already measured.

    python research/learning_curve.py [--algo ppo] [--set NAME=VALUE ...]
        [--minutes 10 30 60] [--deals 500] [--seed 0]
        [--eval-seed 20261203] [--opponents greedy planner] [--train-opponents greedy]
        [--out results/learning_curve] [--workers 1]

The training clock starts with the first rollout; evaluation (``--workers`` processes) is not
counted. The decisions trained by a point, and so its win rates, depend on the machine: compare
runs made on the same machine with nothing else busy.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import math
import os
import platform
import sys
import time
import typing
from dataclasses import replace
from pathlib import Path
from typing import Any

from odin_lab.cli import Parser, restore_interrupts, shell_command

COLUMNS = (
    "minutes", "train_seconds", "decisions", "steps_per_s", "opponent", "win_rate", "ci_low",
    "ci_high", "games", "mean_penalty", "model",
)  # fmt: skip
"""One CSV row (and one JSON entry) per (point, opponent)."""
HEADER = (
    f"{'minutes':>8}{'decisions':>12}  {'opponent':<10}{'win rate':>9}  {'95% CI':<18}"
    f"{'parity':>7}{'steps/s':>9}"
)


def row_text(row: dict, parity: float) -> str:
    """One printed row of :data:`HEADER`."""
    interval = f"[{row['ci_low']:.1%}, {row['ci_high']:.1%}]"
    return (
        f"{row['minutes']:>8g}{row['decisions']:>12,}  {row['opponent']:<10}"
        f"{row['win_rate']:>9.1%}  {interval:<18}{parity:>7.0%}{row['steps_per_s']:>9,.0f}"
    )


def parse_args(argv: list[str] | None = None) -> Any:
    """The flags, checked: one line naming the problem and exit 2 on bad input."""
    from agents.registry import check_spec
    from odin_lab.training import ALGORITHMS
    from odin_lab.training.checkpoints import CHECKPOINT
    from odin_lab.training.config import DEFAULT_ALGO
    from odin_lab.training.pool import SELF, check_kinds

    parser = Parser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    add = parser.add_argument
    add("--algo", default=DEFAULT_ALGO, choices=list(ALGORITHMS), help="the learning algorithm")
    add(
        "--set",
        nargs="+",
        default=[],
        metavar="NAME=VALUE",
        help="the algorithm's settings, as train.py's flags name them (e.g. critic=full)",
    )
    add("--minutes", type=float, nargs="+", default=[10, 30, 60], help="training time points")
    add(
        "--steps",
        type=int,
        nargs="+",
        help="instead of --minutes: points in learner decisions (a budget the machine's load "
        "does not change)",
    )
    add(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="what --minutes count: wall-clock time, or the training process's CPU time (a "
        "budget that runs sharing a machine's cores split fairly; with one torch thread the "
        "two agree on a quiet machine)",
    )
    add("--deals", type=int, default=500, help="deals per evaluation, each from every seat")
    add("--seed", type=int, default=0, help="seed of the training run")
    add("--eval-seed", type=int, default=20261203, help="seed of the evaluation deals")
    add("--opponents", nargs="+", default=["greedy", "planner"], help="evaluation opponents")
    add(
        "--train-opponents",
        nargs="+",
        default=["greedy"],
        help="training pool: agent specs, 'learner' (every seat)",
    )
    add("--out", type=Path, default=Path("results/learning_curve"), help="results directory")
    add("--workers", type=int, default=1, help="evaluation processes")
    add(
        "--checkpoint-minutes",
        type=float,
        default=5.0,
        help="minutes of training clock between checkpoints of the learner (also taken at "
        "each point and on Ctrl-C)",
    )
    add(
        "--resume",
        action="store_true",
        help="continue the run in --out from its checkpoint (the same flags, but --workers)",
    )
    args = parser.parse_args(argv)
    if not (math.isfinite(args.checkpoint_minutes) and args.checkpoint_minutes > 0):
        parser.error(
            f"--checkpoint-minutes must be a positive number; got {args.checkpoint_minutes}"
        )
    if args.resume and not (args.out / CHECKPOINT).is_file():
        parser.error(f"--resume: {args.out} holds no checkpoint of a learning curve to continue")
    if not args.resume and (args.out / CHECKPOINT).is_file():
        parser.error(f"{args.out} holds a run already: add --resume, or choose another --out")
    minutes = args.minutes
    if not all(math.isfinite(m) and m > 0 for m in minutes):
        parser.error(f"--minutes must be positive numbers of minutes; got {minutes}")
    if any(b <= a for a, b in zip(minutes, minutes[1:])):
        parser.error(f"--minutes must be strictly increasing (e.g. 10 30 60); got {minutes}")
    steps = args.steps or []
    if any(n < 1 for n in steps) or any(b <= a for a, b in zip(steps, steps[1:])):
        parser.error(f"--steps must be strictly increasing positive integers; got {steps}")
    for flag, least in {"--deals": 1, "--workers": 1, "--seed": 0, "--eval-seed": 0}.items():
        value = getattr(args, flag[2:].replace("-", "_"))
        if value < least:
            parser.error(f"{flag} must be an integer >= {least}; got {value}")
    try:
        for spec in args.opponents:
            check_spec(spec)
            name, _, path = spec.partition(":")
            if name == "ppo" and path and not Path(path).is_file():
                raise ValueError(f"no model file {path} (ppo:PATH names a lab model file)")
    except ValueError as error:
        parser.error(f"--opponents: {error}")
    try:
        if SELF in check_kinds(args.train_opponents):
            raise ValueError(f"{SELF!r} (snapshots) is not taken here: agent specs or 'learner'")
    except ValueError as error:
        parser.error(f"--train-opponents: {error}")
    try:
        args.config = training_config(args)
    except (TypeError, ValueError) as error:
        parser.error(f"--set: {error}")
    return args


def training_config(args: Any) -> Any:
    """The run's settings: the algorithm's defaults with ``--set``'s values, the pool and the
    seed."""
    from odin_lab.training import make_config
    from odin_lab.training.algorithms import parse_settings

    settings = parse_settings(args.algo, args.set)
    config = make_config(
        args.algo, opponents=list(args.train_opponents), seed=args.seed, **settings
    )
    config.check()
    return config


def figure(
    results: list[dict], parity: float, games: int, algo: str = "PPO", clock: str = "wall"
) -> Any:
    """Win rate (%) against training minutes, one line per opponent with its Wilson interval."""
    import matplotlib as mpl
    from matplotlib import transforms
    from matplotlib.figure import Figure

    from odin_lab.evaluation.figures import COLOURS, FAIR, STYLE, WIDTH, interval

    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, 3.2), layout="constrained")
        ax = fig.subplots()
        opponents = list(dict.fromkeys(r["opponent"] for r in results))
        for k, (colour, opponent) in enumerate(zip(COLOURS, opponents)):
            rows = [r for r in results if r["opponent"] == opponent]
            rates, err = interval(rows)
            minutes = [r["minutes"] for r in rows]
            # Each series a few points sideways, so that no two intervals hide each other.
            dx = 4.0 * (k - (len(opponents) - 1) / 2)
            shift = transforms.offset_copy(ax.transData, fig, x=dx, units="points")
            label = f"{round(1 / parity) - 1} x {opponent}"
            ax.errorbar(
                minutes,
                rates,
                yerr=err,
                fmt="o-",
                color=colour,
                ms=4,
                label=label,
                transform=shift,
                clip_on=False,
            )
        ax.axhline(100 * parity, **FAIR, label=f"parity {100 * parity:.0f}%")
        # Set by hand: autoscaling ignores the shifted series.
        ax.set_xlim(0, 1.06 * max(r["minutes"] for r in results))
        ax.set_ylim(0, max([100.0 * r["ci_high"] for r in results] + [100 * parity]) * 1.1)
        what = "CPU" if clock == "cpu" else "wall-clock"
        ax.set_xlabel(f"training {what} time, minutes (evaluation not counted)")
        ax.set_ylabel("win rate, % of games (ties shared)")
        ax.set_title(
            f"{algo} from scratch: {games:,} games per point; whiskers: 95% Wilson interval"
        )
        ax.legend(loc="best", frameon=False)
    return fig


def write_results(out: Path, report: dict) -> None:
    """``learning_curve.json``, ``.csv`` and ``.png`` (+ ``.pdf``) in ``out``, each atomically."""
    from odin_lab.evaluation.figures import save_figure
    from odin_lab.files import write_atomic

    write_atomic(out / "learning_curve.json", (json.dumps(report, indent=2) + "\n").encode())
    text = io.StringIO()
    writer = csv.DictWriter(text, COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(report["results"])
    write_atomic(out / "learning_curve.csv", text.getvalue().encode())
    if report["results"]:
        facts = report["facts"]
        fig = figure(
            report["results"],
            facts["parity"],
            facts["games_per_point"],
            facts.get("label", "PPO"),
            facts.get("clock", "wall"),
        )
        save_figure(fig, out / "learning_curve.png")


CLOCK = "curve_trained_s"
"""The checkpoint entry holding the training clock (seconds) of the learner it saves."""
KEPT = ("resume", "workers", "checkpoint_minutes")
"""Flags a resumed run may change."""


def refuse(message: str) -> typing.NoReturn:
    """One line on stderr, exit 2."""
    print(f"learning_curve.py: error: {message}", file=sys.stderr)
    sys.exit(2)


def resume(where: Any, learner: Any, report: dict) -> tuple[dict, float]:
    """Restore ``learner`` from the checkpoint in ``where.run_dir`` (the same training settings,
    else one line naming the first that differs, exit 2); return the report so far, with this
    run's flags, and the training clock of the checkpoint."""
    from odin_lab.training.checkpoints import load_checkpoint
    from odin_lab.training.config import TrainingError

    out = where.run_dir
    try:
        tensors, run, _ = load_checkpoint(out, where)
        saved = json.loads((out / "learning_curve.json").read_text())
    except TrainingError as error:
        refuse(str(error))
    except (OSError, ValueError) as error:
        refuse(f"cannot resume {out}: {error}")
    for key, value in report["settings"].items():
        if key not in KEPT and saved["settings"].get(key) != value:
            refuse(
                f"cannot resume {out}: it was run with {key} {saved['settings'].get(key)!r}, "
                f"not {value!r}"
            )
    learner.load_checkpoint(tensors, run)
    saved["settings"] = report["settings"]
    return saved, float(run[CLOCK])


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import torch as th
    from tqdm import tqdm

    from odin_lab.training import ALGORITHMS
    from odin_lab.training.checkpoints import CHECKPOINT, RunState, provenance, save_checkpoint
    from odin_lab.training.config import config_to_json
    from odin_lab.training.learner import held_interrupts
    from odin_lab.training.run import evaluate

    config = args.config
    players = config.game.players
    label = args.algo.upper() + "".join(f", {item}" for item in args.set)
    parity = 1 / players
    report = {
        "benchmark": "learning_curve",
        "command": shell_command("research/learning_curve.py", argv),
        "settings": {
            k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items() if k != "config"
        },  # the run's settings are the facts' train_config
        "facts": {
            "players": players,
            "parity": parity,
            "games_per_point": args.deals * players,
            "algo": args.algo,
            "label": label,
            "clock": args.clock,
            "train_config": config_to_json(config),
        },
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "torch_threads": config.torch_threads,
            "python": platform.python_version(),
            "torch": th.__version__,
        },
        "complete": False,
        "results": [],
    }
    out: Path = args.out
    th.set_num_threads(config.torch_threads)
    learner = ALGORITHMS[args.algo].learner(config)
    # The learner's checkpoints use the run services' file (one atomic file: the weights, the
    # optimizer, the generators and the training clock of one moment).
    where = replace(config, runs_dir=str(out.parent), name=out.name)
    trained = 0.0
    if args.resume:
        report, trained = resume(where, learner, report)
    # Points in training seconds, or (--steps) in learner decisions.
    marks = [float(n) for n in args.steps] if args.steps else [60.0 * m for m in args.minutes]
    # CPU time counts every thread of this process: one torch thread, the engine, the opponents.
    tick = time.process_time if args.clock == "cpu" else time.perf_counter
    # Training seconds so far; when the clock last ran; the clock at the last checkpoint.
    clock = {"trained": trained, "since": 0.0, "saved": trained}
    unit = "decision" if args.steps else "s"
    bar = tqdm(total=round(marks[-1]), unit=unit, desc="training", disable=None, leave=False)

    def checkpoint() -> None:
        parts = learner.checkpoint()
        entries = {**parts[2], CLOCK: clock["trained"]}
        save_checkpoint(where, learner.steps, RunState(), (parts[0], parts[1], entries))
        clock["saved"] = clock["trained"]

    def point() -> bool:
        """After each update: advance the clock; at a time point, stop it and measure."""
        now = tick()
        clock["trained"] += now - clock["since"]
        done = len(report["results"]) // len(args.opponents)
        reached = learner.steps if args.steps else clock["trained"]
        bar.update(min(round(reached), bar.total) - bar.n)
        bar.set_postfix_str(f"{learner.steps:,} decisions")
        if reached >= marks[done]:
            # First the checkpoint: killed before the results are written, a resume measures
            # this very learner again (the same figures).
            with held_interrupts():
                checkpoint()
            minutes = round(clock["trained"] / 60, 2) if args.steps else args.minutes[done]
            name = f"steps-{args.steps[done]}" if args.steps else f"minutes-{minutes:g}"
            path = out / f"{name}.safetensors"
            learner.write_player(path, provenance(config))
            for opponent in args.opponents:
                result = evaluate(
                    path,
                    config,
                    opponent,
                    args.deals,
                    args.eval_seed,
                    workers=args.workers,
                    kind=learner.kind,
                )
                row = {
                    "minutes": minutes,
                    "train_seconds": round(clock["trained"], 2),
                    "decisions": learner.steps,
                    "steps_per_s": round(learner.steps / clock["trained"], 1),
                    "opponent": opponent,
                    **result,
                    "model": path.name,
                }
                report["results"].append(row)
                tqdm.write(row_text(row, parity))
                sys.stdout.flush()
            report["complete"] = done + 1 == len(marks)
            write_results(out, report)
        if clock["trained"] - clock["saved"] >= 60 * args.checkpoint_minutes:
            with held_interrupts():
                checkpoint()
        clock["since"] = tick()  # the clock stood still while measuring
        return not report["complete"]

    print(
        f"{label} from scratch (batched engine, {config.torch_threads} torch "
        f"thread), trained against {', '.join(config.opponents)}; {args.deals} deals x "
        f"{players} seats per evaluation; results in {out}/"
    )
    print(HEADER, flush=True)
    try:
        write_results(out, report)
        learner.start()
        clock["since"] = tick()
        while True:
            learner.train_step()
            if not point():
                break
    except KeyboardInterrupt:
        bar.close()
        # The step in progress was dropped whole (the learner's contract): the weights match
        # the step count, and the clock counts up to the last whole step.
        try:
            with held_interrupts():
                checkpoint()
        except KeyboardInterrupt:
            pass
        points = len(report["results"]) // len(args.opponents)
        written = f"{out / 'learning_curve.json'} (and .csv, .png)"
        print(
            f"\ninterrupted: {points} of {len(marks)} points; partial results in {written}; "
            f"the learner's checkpoint at {learner.steps:,} decisions: continue with the same "
            "command and --resume",
            file=sys.stderr,
        )
        sys.exit(130)
    finally:
        learner.close()
    bar.close()
    (out / CHECKPOINT).unlink()  # a finished run has nothing to resume
    print(f"results: {out / 'learning_curve.json'} (and .csv, .png)")


if __name__ == "__main__":
    restore_interrupts()  # Ctrl-C or `kill` keeps the finished points
    main()
