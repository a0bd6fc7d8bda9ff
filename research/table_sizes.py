"""One agent at every table size: rotated-seat tournaments of ``--agent`` against
``players - 1`` copies of each ``--opponents`` agent, at each of ``--players``.

Prints, per table size and opponent, the agent's win share (ties shared) with its 95% Wilson
interval against parity (1 / players), and writes them to ``--out`` as JSON with a plot of
win share against table size (``--json PATH``: the JSON also there; the docs' tables are made
from it).

    python research/table_sizes.py --agent dmc --opponents planner greedy --games 2000 \\
        --seed 20261240

Each deal is played from every seat (``--games`` is rounded up to whole deals); the games do
not depend on ``--workers``. Agents with a batched form play on the batched engine.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from agents.registry import check_spec
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, Config
from odin_lab.cli import shell_command
from odin_lab.evaluation.stats import agent_summary
from odin_lab.evaluation.tournament import play_tournament


def measure(agent: str, opponent: str, players: int, games: int, seed: int, workers: int) -> dict:
    """One table size against one opponent: the agent's row of the tournament's summary."""
    deals = -(-games // players)
    specs = [agent] + [opponent] * (players - 1)
    records = play_tournament(specs, Config(players=players), deals, seed, workers=workers)
    row = agent_summary(records, specs)[0]
    return {
        "players": players,
        "opponent": opponent,
        "parity": 1 / players,
        "games": row["games"],
        "win_share": row["win_rate"],
        "ci_low": row["ci_low"],
        "ci_high": row["ci_high"],
        "mean_total": row["mean_total"],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--agent", default="dmc", help="the agent measured (an agent spec)")
    p.add_argument("--opponents", nargs="+", default=["planner", "greedy"])
    p.add_argument("--players", type=int, nargs="+", default=list(range(MIN_PLAYERS, 7)))
    p.add_argument("--games", type=int, default=2000, help="games per size and opponent")
    p.add_argument("--seed", type=int, default=20261240)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("results/table_sizes"))
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    argv = sys.argv[1:] if argv is None else argv
    args = p.parse_args(argv)
    for spec in [args.agent, *args.opponents]:
        try:
            check_spec(spec)
        except ValueError as error:
            p.error(str(error))
    if any(not MIN_PLAYERS <= n <= MAX_PLAYERS for n in args.players):
        p.error(f"--players must be table sizes {MIN_PLAYERS}-{MAX_PLAYERS}; got {args.players}")
    for name, value in (("--games", args.games), ("--workers", args.workers)):
        if value < 1:
            p.error(f"{name} must be >= 1; got {value}")
    rows = []
    print(f"{args.agent} vs (n - 1) x each opponent, rotated seats, seed {args.seed}")
    for players in args.players:
        for opponent in args.opponents:
            row = measure(args.agent, opponent, players, args.games, args.seed, args.workers)
            rows.append(row)
            print(
                f"{players} players vs {opponent:<8} {100 * row['win_share']:5.1f}% "
                f"[{100 * row['ci_low']:.1f}, {100 * row['ci_high']:.1f}] over {row['games']:,} "
                f"games (parity {100 * row['parity']:.1f}%)",
                flush=True,
            )
    _write(rows, args, argv)
    print(f"wrote {args.out / 'table_sizes.json'} and table_sizes.png")
    return 0


def _write(rows: list[dict], args: argparse.Namespace, argv: list[str]) -> None:
    from matplotlib.figure import Figure

    command = shell_command("research/table_sizes.py", argv)
    settings = {"agent": args.agent, "games": args.games, "seed": args.seed}
    report = json.dumps({"command": command, "settings": settings, "rows": rows}, indent=2)
    for path in [args.out / "table_sizes.json"] + ([args.json] if args.json else []):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report + "\n")
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.subplots()
    for opponent in args.opponents:
        mine = [r for r in rows if r["opponent"] == opponent]
        x = [r["players"] for r in mine]
        y = [100 * r["win_share"] for r in mine]
        err = [
            [100 * (r["win_share"] - r["ci_low"]) for r in mine],
            [100 * (r["ci_high"] - r["win_share"]) for r in mine],
        ]
        ax.errorbar(x, y, yerr=err, marker="o", capsize=4, label=f"vs (n - 1) x {opponent}")
    sizes = sorted({r["players"] for r in rows})
    ax.plot(sizes, [100 / n for n in sizes], ls="--", color="grey", label="parity (1 / n)")
    ax.set_xticks(sizes)
    ax.set_xlabel("players at the table")
    ax.set_ylabel(f"{args.agent} win share (%)")
    ax.set_title("rotated seats, 95% Wilson intervals", fontsize=10)
    ax.legend(loc="upper right", fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / "table_sizes.png", dpi=150)


if __name__ == "__main__":
    sys.exit(main())
