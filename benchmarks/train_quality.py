"""Does the faster engine learn as well? The same PPO run on both training engines, compared by
what it learned rather than by speed.

For each engine (``batched``: the lab's default; ``subproc``: ``SingleAgentEnv`` processes) and
each seed, :func:`odin_lab.training.train` runs ``--steps`` learner decisions from scratch against
``--opponent`` with the default :class:`odin_lab.training.TrainConfig` settings; the final policy
then plays a seeded rotated-seat tournament against three copies of ``--opponent`` (the same
deals for every run). Printed: each run's win rate with its 95% Wilson interval, its training
wall time and learner steps per second.

    python benchmarks/train_quality.py [--steps 100000] [--opponent random] [--seeds 0 1]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import tempfile
import time


def main() -> None:
    from odin_lab.evaluation.stats import agent_summary
    from odin_lab.evaluation.tournament import play_tournament
    from odin_lab.training import TrainConfig, train

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=100_000, help="learner decisions per run")
    parser.add_argument("--opponent", default="random", help="training and evaluation opponent")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="one run per seed")
    parser.add_argument("--deals", type=int, default=200, help="evaluation deals (x 4 seats)")
    args = parser.parse_args()

    print(f"{'engine':<9}{'seed':>5}{'win rate':>10}{'95% CI':>16}{'train s':>9}{'steps/s':>9}")
    with tempfile.TemporaryDirectory() as runs:
        for engine in ("batched", "subproc"):
            for seed in args.seeds:
                config = TrainConfig(
                    name=f"{engine}{seed}", runs_dir=runs, engine=engine, seed=seed,
                    opponents=[args.opponent], total_steps=args.steps, eval_every=0,
                    checkpoint_every=args.steps,
                )  # fmt: skip
                start = time.perf_counter()
                with contextlib.redirect_stderr(io.StringIO()):  # the trainer's progress bar
                    checkpoint = train(config)
                seconds = time.perf_counter() - start
                table = [f"ppo:{checkpoint}"] + [args.opponent] * (config.game.players - 1)
                games = play_tournament(table, config.game, args.deals, seed=2026, progress=False)
                result = agent_summary(games, table)[0]
                low, high = result["ci_low"], result["ci_high"]
                print(
                    f"{engine:<9}{seed:>5}{result['win_rate']:>10.1%}   [{low:.1%}, {high:.1%}]"
                    f"{seconds:>9.0f}{args.steps / seconds:>9,.0f}"
                )


if __name__ == "__main__":
    main()
