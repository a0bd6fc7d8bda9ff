"""One table of several ``learning_curve.py`` runs (one per algorithm or setting), side by side
at each point, as the docs show it.

    python research/compare_curves.py results/lcs_ppo results/lcs_ppo_full results/lcs_dmc \\
        [--json research/results/learning_curve_algorithms.json]

Each folder holds a ``learning_curve.json``; its label (the algorithm and its ``--set`` values)
names its rows. Prints one row per (run, point, opponent): decisions, training minutes, the win
rate with its 95% Wilson interval, and the rate of training.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from odin_lab.cli import shell_command


def rows_of(folder: Path) -> list[dict]:
    """The rows of one run, labelled."""
    report = json.loads((folder / "learning_curve.json").read_text())
    label = report["facts"].get("label", report["facts"].get("algo", "PPO"))
    return [
        {
            "run": label,
            "decisions": r["decisions"],
            "minutes": r["train_seconds"] / 60,
            "opponent": r["opponent"],
            "win_rate": r["win_rate"],
            "ci_low": r["ci_low"],
            "ci_high": r["ci_high"],
            "games": r["games"],
            "steps_per_s": r["steps_per_s"],
        }
        for r in report["results"]
    ]


def command_of(folder: Path) -> str:
    """The ``learning_curve.py`` command that made a run, from the settings it recorded."""
    settings = json.loads((folder / "learning_curve.json").read_text())["settings"]
    words = ["python research/learning_curve.py", "--algo", settings.get("algo", "ppo")]
    if settings.get("set"):
        words += ["--set", *settings["set"]]
    points = (
        ("--steps", settings["steps"])
        if settings.get("steps")
        else ("--minutes", settings["minutes"])
    )
    words += [points[0], *(f"{n:g}" for n in points[1])]
    if settings.get("clock", "wall") != "wall":
        words += ["--clock", settings["clock"]]
    for flag in ("deals", "seed", "eval_seed", "out"):
        words += [f"--{flag.replace('_', '-')}", str(settings[flag])]
    return " ".join(words)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="learning_curve.py output folders")
    parser.add_argument("--json", type=Path, help="also write the table to this JSON file")
    args = parser.parse_args(argv)
    missing = [str(f) for f in args.runs if not (f / "learning_curve.json").is_file()]
    if missing:
        parser.error(f"no learning_curve.json in {', '.join(missing)}")
    rows = [row for folder in args.runs for row in rows_of(folder)]
    print(f"{'run':<22}{'decisions':>11}{'minutes':>9}  {'opponent':<9}{'win rate':>9}  95% CI")
    for r in rows:
        print(
            f"{r['run']:<22}{r['decisions']:>11,}{r['minutes']:>9.1f}  {r['opponent']:<9}"
            f"{r['win_rate']:>9.1%}  [{r['ci_low']:.1%}, {r['ci_high']:.1%}]"
        )
    if args.json:
        command = shell_command("research/compare_curves.py")
        runs = [{"run": rows_of(f)[0]["run"], "made by": command_of(f)} for f in args.runs]
        document = {"command": command, "runs": runs, "rows": rows}
        args.json.write_text(json.dumps(document, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
