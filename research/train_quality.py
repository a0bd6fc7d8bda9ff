"""What do the algorithms learn in the same number of decisions? Runs of each ``--algos``
algorithm compared by what they learned rather than by speed.

For each algorithm (default: every one the registry names) and each seed,
:func:`odin_lab.training.train` runs ``--steps`` learner decisions from scratch against
``--opponent`` with the algorithm's default settings; the final policy
then plays a seeded rotated-seat tournament against three copies of ``--opponent`` (the same
deals for every run). Printed: each run's win rate with its 95% Wilson interval, its training
wall time and learner steps per second.

    python research/train_quality.py [--algos ppo] [--steps 100000] [--opponent random]
                                       [--seeds 0 1]
                                       [--json PATH]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

from odin_lab.cli import shell_command


def main() -> None:
    from odin_lab.evaluation.stats import agent_summary
    from odin_lab.evaluation.tournament import play_tournament
    from odin_lab.training import ALGORITHMS, make_config, train

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--algos", nargs="+", default=list(ALGORITHMS), choices=list(ALGORITHMS))
    parser.add_argument("--steps", type=int, default=100_000, help="learner decisions per run")
    parser.add_argument("--opponent", default="random", help="training and evaluation opponent")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per seed")
    parser.add_argument("--deals", type=int, default=200, help="evaluation deals (x 4 seats)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    runs_done = []  # the figures, for --json

    print(f"{'algo':<9}{'seed':>5}{'win rate':>10}{'95% CI':>16}{'train s':>9}{'steps/s':>9}")
    with tempfile.TemporaryDirectory() as runs:
        for algo in args.algos:
            for seed in args.seeds:
                config = make_config(
                    algo,
                    name=f"{algo}{seed}",
                    runs_dir=runs,
                    seed=seed,
                    opponents=[args.opponent],
                    total_steps=args.steps,
                    eval_every=0,
                    checkpoint_every=args.steps,
                )
                start = time.perf_counter()
                with contextlib.redirect_stderr(io.StringIO()):  # the trainer's progress bar
                    checkpoint = train(config)
                seconds = time.perf_counter() - start
                table = [f"{algo}:{checkpoint}"] + [args.opponent] * (config.game.players - 1)
                games = play_tournament(table, config.game, args.deals, seed=2026, progress=False)
                result = agent_summary(games, table)[0]
                low, high = result["ci_low"], result["ci_high"]
                print(
                    f"{algo:<9}{seed:>5}{result['win_rate']:>10.1%}   [{low:.1%}, {high:.1%}]"
                    f"{seconds:>9.0f}{args.steps / seconds:>9,.0f}"
                )
                runs_done.append(
                    {
                        "algo": algo,
                        "seed": seed,
                        "games": len(games),
                        "win_rate": result["win_rate"],
                        "ci_low": low,
                        "ci_high": high,
                        "train_s": seconds,
                        "steps_per_s": args.steps / seconds,
                    }
                )
    if args.json:
        command = shell_command("research/train_quality.py")
        report = {
            "command": command,
            "steps": args.steps,
            "opponent": args.opponent,
            "runs": runs_done,
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
