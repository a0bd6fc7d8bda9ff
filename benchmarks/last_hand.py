"""How games end: who ends a game's last hand by going out, and whether it wins by it.

``count`` reads a tournament's ``games.csv`` (``evaluate.py tournament --out DIR``) and prints,
per agent: its games, the games it ended by going out (its 0 in the last hand: R13), how many of
those it won (a shared win counts its share), and how many it ended by going out while behind
the leader, losing the game by it.

``rule`` plays the bundled ``dmc`` against ``players - 1`` copies of an opponent twice on the
same deals: as it is, and with :class:`NoLosingGoOut`, which never goes out into a game it
loses while another legal action does not go out (the result of going out is known from what
the observation shows: the totals and every hand's size, R13-R14). It prints both win shares
and how many decisions the rule changed.

    python benchmarks/last_hand.py count results/dmc_vs_search/games.csv
    python benchmarks/last_hand.py rule --opponent planner --deals 1000 --seed 911
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from agents.hand import see
from agents.registry import check_spec, make
from odin_env.observation import threshold_of
from odin_env.rules import Config
from odin_env.spec import PLAY_SIZE
from odin_lab.evaluation.stats import seat_shares, wilson
from odin_lab.evaluation.tournament import play_deals

MAX_CSV_BYTES = 256 << 20
"""The largest games.csv ``count`` reads (a million games take about 150 MB)."""
_SIZE = np.asarray(PLAY_SIZE)


def count(path: Path) -> dict[str, dict[str, float]]:
    """Per agent label of ``path`` (a tournament's games.csv): ``games``, ``ended`` (games it
    ended by going out), ``won`` (its share of the wins of those) and ``lost_behind`` (those it
    ended while behind the leader and lost). ``ValueError`` (one line) for a file that is not
    a games.csv or is over :data:`MAX_CSV_BYTES`."""
    if path.stat().st_size > MAX_CSV_BYTES:
        raise ValueError(f"{path}: over {MAX_CSV_BYTES:,} bytes; not a games.csv of ours")
    rows: dict[str, dict[str, float]] = {}
    with path.open(newline="") as f:
        for line, game in enumerate(csv.DictReader(f), start=2):
            try:
                seats = game["seats"].split()
                hands = [[int(p) for p in h.split("-")] for h in game["hand_penalties"].split(";")]
                winners = game["winners"].split()
            except (KeyError, AttributeError, ValueError):
                raise ValueError(f"{path}:{line}: not a row of a tournament's games.csv") from None
            before = np.sum(hands[:-1], axis=0) if len(hands) > 1 else np.zeros(len(seats))
            for seat, label in enumerate(seats):
                row = rows.setdefault(label, dict.fromkeys(("games", "ended", "won",
                                                             "lost_behind"), 0.0))  # fmt: skip
                row["games"] += 1
                if hands[-1][seat] != 0:
                    continue
                row["ended"] += 1
                row["won"] += (label in winners) / len(winners)
                row["lost_behind"] += before[seat] > before.min() and label not in winners
    return rows


class NoLosingGoOut:
    """``inner`` (a player with ``values(observations, masks)``: a DMC model), except that it
    never plays a going-out action whose hand's end makes another seat win the game while a
    legal action that does not go out remains. ``changed`` counts the decisions it changed."""

    name = "dmc_no_losing_go_out"

    def __init__(self, inner):
        self.inner, self.changed = inner, 0

    def reset(self, seat: int, seed: int | None = None) -> None:
        self.inner.reset(seat, seed)

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        values = np.array(self.inner.values(observations, masks))
        first = values.argmax(1)
        for k, obs in enumerate(observations):
            seen = see(obs, masks[k])
            out = seen.plays[_SIZE[seen.plays] == seen.sizes[0]]
            if out.size == 0 or out.size == int(np.count_nonzero(masks[k])):
                continue
            threshold = threshold_of(obs)
            final = np.rint(np.array(seen.penalties) * threshold) + seen.sizes
            final[0] -= seen.sizes[0]  # the seat going out scores 0 (R13)
            if final.max() >= threshold and final[0] > final.min():  # R14: it ends, lost
                values[k, out] = -np.inf
        chosen = values.argmax(1)
        self.changed += int(np.count_nonzero(chosen != first))
        return chosen

    def act(self, observation: np.ndarray, mask: np.ndarray) -> int:
        return int(self.act_batch(observation[None], mask[None])[0])


def rule(opponent: str, players: int, deals: int, seed: int) -> list[dict]:
    """The bundled ``dmc`` with and without :class:`NoLosingGoOut` on the same deals."""
    rows = []
    for wrapped in (False, True):
        player = NoLosingGoOut(make("dmc")) if wrapped else make("dmc")
        table = [player] + [make(opponent) for _ in range(players - 1)]
        records = play_deals(table, Config(players=players), deals, seed=seed)
        wins = sum(seat_shares(r)[r.agents.index(0)] for r in records)
        low, high = wilson(wins, len(records))
        rows.append({"player": player.name, "games": len(records), "win_share": wins / len(records),
                     "ci_low": low, "ci_high": high,
                     "changed": getattr(player, "changed", 0)})  # fmt: skip
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    counting = sub.add_parser("count", help="who ends the last hands of a games.csv")
    counting.add_argument("games", type=Path)
    ruling = sub.add_parser("rule", help="the bundled dmc with and without NoLosingGoOut")
    ruling.add_argument("--opponent", default="planner")
    ruling.add_argument("--players", type=int, default=4, choices=range(2, 7), metavar="2-6")
    ruling.add_argument("--deals", type=int, default=1000)
    ruling.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    try:
        if args.command == "count":
            if not args.games.is_file():
                raise ValueError(f"{args.games}: no such file (give a tournament's games.csv)")
            counted = count(args.games)
            print("agent            games  ended by going out  won of those  ended behind, lost")
            for label, r in counted.items():
                print(f"{label:15} {r['games']:6.0f}  {r['ended']:18.0f}  {r['won']:12.1f}  "
                      f"{r['lost_behind']:18.0f}")  # fmt: skip
        else:
            check_spec(args.opponent)
            if args.deals < 1:
                raise ValueError(f"--deals must be >= 1; got {args.deals}")
            for r in rule(args.opponent, args.players, args.deals, args.seed):
                print(f"{r['player']:22} {r['games']} games  {100 * r['win_share']:.1f}% "
                      f"[{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]  "
                      f"decisions changed {r['changed']}")  # fmt: skip
    except ValueError as error:
        print(f"last_hand.py: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
