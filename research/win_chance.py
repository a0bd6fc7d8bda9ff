"""How well ``odin_env.scoring.win_chance`` foretells who wins: the search ranks its candidates by
it and ``train.py --algo dmc --horizon win`` learns it, so its errors would be theirs.

``--agent`` (any batched agent; default ``planner``) plays every seat of ``--games`` games at
each of ``--players`` (threshold ``--threshold``) on the batched engine. After every hand that
does not end its game, each seat's win chance from the totals then is paired with its share of
that game's win (ties shared). Printed and written to ``--out``/win_chance.json per table size:
the log loss (per seat, ``-[y log p + (1 - y) log(1 - p)]``, lower is better) of

- ``estimate``: ``win_chance``;
- ``table``: the measured win share of the same (own total, sorted other totals) in the other
  half of the games (fitted on the even games, scored on the odd ones, shrunk towards
  ``win_chance`` by 10 pseudo-games): what a fitted estimate of the same totals could reach;
- ``parity``: 1 / players for everyone;

and a reliability curve (``win_chance`` in tenths against the share won), plotted in
``win_chance.png``.

    python research/win_chance.py --players 2 3 4 5 6 --games 20000 --seed 20261390

The same seed gives the same figures.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

from agents.registry import check_spec, has_batch_form, make_batch_agent
from odin_env.batched import BatchedGames
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, Config
from odin_env.scoring import win_chance
from odin_lab.cli import shell_command

PRIOR = 10.0
"""Pseudo-games of ``win_chance`` in each cell of the ``table`` estimate."""
BATCH = 1024
"""Games played in lockstep."""


def play(agent: str, config: Config, games: int, seed: int) -> tuple[np.ndarray, ...]:
    """Every seat's totals after each hand that did not end its game, ``(rows, players)``, with
    each seat's share of that game's win and the game's number (in the order games ended)."""
    player = make_batch_agent(agent, seed=seed)
    engine = BatchedGames(config, min(BATCH, games), seed=seed)
    slots = engine.batch
    pending: list[list[np.ndarray]] = [[] for _ in range(slots)]
    totals, shares, number = [], [], []
    ended = 0
    while ended < games:
        engine.step(player.act_batch(engine.obs, engine.mask))
        for i in np.flatnonzero(engine.hand_end).tolist():
            if not engine.done[i]:
                pending[i].append(engine.totals()[i])
                continue
            if ended < games:
                won = engine.winners[i] / engine.winners[i].sum()
                totals += pending[i]
                shares += [won] * len(pending[i])
                number += [ended] * len(pending[i])
                ended += 1
            pending[i] = []
    return np.array(totals), np.array(shares), np.array(number)


def log_loss(p: np.ndarray, y: np.ndarray) -> float:
    """Mean binary log loss of predictions ``p`` for outcomes ``y`` (shares in [0, 1])."""
    p = np.clip(p, 1e-6, 1 - 1e-6)
    return float(-(y * np.log(p) + (1 - y) * np.log(1 - p)).mean())


def measure(
    agent: str, players: int, threshold: int, games: int, seed: int
) -> tuple[dict, list[dict]]:
    """One table size's row of log losses and its reliability rows (see the module
    docstring)."""
    config = Config(players=players, threshold=threshold)
    totals, shares, number = play(agent, config, games, seed)
    predicted = win_chance(totals, threshold)
    # One row per (position, seat): the seat's own total and the others' sorted.
    own = totals.T.reshape(-1)
    others = np.concatenate([np.sort(np.delete(totals, s, axis=1), axis=1) for s in range(players)])
    keys = [(int(a), *b) for a, b in zip(own, others.tolist())]
    p, y = predicted.T.reshape(-1), shares.T.reshape(-1)
    odd = np.tile(number % 2 == 1, players)
    count, won = defaultdict(float), defaultdict(float)
    for key, outcome in zip((k for k, o in zip(keys, odd) if not o), y[~odd]):
        count[key] += 1
        won[key] += outcome
    fitted = np.array(
        [(won[k] + PRIOR * q) / (count[k] + PRIOR) for k, q, o in zip(keys, p, odd) if o]
    )
    bins = np.minimum((p * 10).astype(int), 9)
    reliability = [
        {
            "players": players,
            "estimate": float(p[bins == b].mean()),
            "share_won": float(y[bins == b].mean()),
            "seat_positions": int((bins == b).sum()),
        }
        for b in range(10)
        if (bins == b).sum() >= 50
    ]
    row = {
        "players": players,
        "games": games,
        "positions": int(totals.shape[0]),
        "log_loss_estimate": log_loss(p[odd], y[odd]),
        "log_loss_table": log_loss(fitted, y[odd]),
        "log_loss_parity": log_loss(np.full(int(odd.sum()), 1 / players), y[odd]),
    }
    return row, reliability


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--agent", default="planner", help="the batched agent in every seat")
    parser.add_argument("--players", type=int, nargs="+", default=[4])
    parser.add_argument("--threshold", type=int, default=Config().threshold)
    parser.add_argument("--games", type=int, default=20000, help="games per table size")
    parser.add_argument("--seed", type=int, default=20261390)
    parser.add_argument("--out", type=Path, default=Path("results/win_chance"))
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    try:
        check_spec(args.agent)
        if not has_batch_form(args.agent):
            parser.error(f"--agent must be an agent with a batched form; got {args.agent!r}")
        make_batch_agent(args.agent)  # a model file that cannot be read: refused here
    except (ValueError, OSError) as error:
        parser.error(f"--agent: {str(error).splitlines()[0]}")
    if any(not MIN_PLAYERS <= n <= MAX_PLAYERS for n in args.players):
        parser.error(
            f"--players must be table sizes {MIN_PLAYERS}-{MAX_PLAYERS}; got {args.players}"
        )
    for name, value in (("--games", args.games), ("--threshold", args.threshold)):
        if value < 2:
            parser.error(f"{name} must be >= 2; got {value}")
    rows, reliability = [], []
    print(f"log loss of each seat's win, {args.agent} in every seat (lower is better)")
    print(f"{'players':>7} {'positions':>10} {'win_chance':>11} {'table':>8} {'parity':>8}")
    for players in args.players:
        row, curve = measure(args.agent, players, args.threshold, args.games, args.seed)
        rows.append(row)
        reliability += curve
        losses = [row[f"log_loss_{k}"] for k in ("estimate", "table", "parity")]
        print(
            f"{players:>7} {row['positions']:>10,} {losses[0]:>11.4f} {losses[1]:>8.4f} "
            f"{losses[2]:>8.4f}",
            flush=True,
        )
    _write(rows, reliability, args, argv)
    print(f"wrote {args.out / 'win_chance.json'} and win_chance.png")
    return 0


def _write(
    rows: list[dict], reliability: list[dict], args: argparse.Namespace, argv: list[str]
) -> None:
    from matplotlib.figure import Figure

    settings = {"agent": args.agent, "threshold": args.threshold, "games": args.games,
                "seed": args.seed}  # fmt: skip
    report = {
        "command": shell_command("research/win_chance.py", argv),
        "settings": settings,
        "rows": rows,
        "reliability": reliability,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    temporary = args.out / "win_chance.json.tmp"
    temporary.write_text(json.dumps(report, indent=2) + "\n")
    temporary.replace(args.out / "win_chance.json")
    fig = Figure(figsize=(4.8, 4.2))
    ax = fig.subplots()
    for players in args.players:
        points = [r for r in reliability if r["players"] == players]
        ax.plot(
            [r["estimate"] for r in points],
            [r["share_won"] for r in points],
            marker="o",
            label=f"{players} players",
        )
    ax.plot([0, 1], [0, 1], ls="--", color="grey", label="calibrated")
    ax.set_xlabel("win_chance after a hand")
    ax.set_ylabel("share of the game won")
    ax.set_title(f"{args.agent} in every seat, threshold {args.threshold}", fontsize=10)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(args.out / "win_chance.png", dpi=150)


if __name__ == "__main__":
    sys.exit(main())
