"""How games end: who ends a game's last hand by going out, and whether it wins by it.

``count`` reads a tournament's ``games.csv`` (``evaluate.py tournament --out DIR``) and prints,
per agent: its games, the games it ended by going out (its 0 in the last hand: R13), how many of
those it won (a shared win counts its share), and how many it ended by going out while behind
the leader, losing the game by it; then the games it began the last hand on the lowest total,
how many of those it won, and its mean points in the last hands it began behind.

``rule`` plays the bundled ``dmc`` against ``players - 1`` copies of an opponent twice on the
same deals: as it is, and with :class:`NoLosingGoOut`, which never goes out into a game it
loses while another legal action does not go out (the result of going out is known from what
the observation shows: the totals and every hand's size, R13-R14). ``game-point`` does the same
with :class:`SearchAtGamePoint`: the bundle, but ``search`` (512 ``planner`` playouts) decides
at every decision of a hand whose end, were it now, would end the game (:func:`game_point`).
Both print each player's win share, how many decisions the wrapper changed or handed over, and
the paired difference of the two on the same games (with its standard error). Deals go to
``--workers`` processes; a game's result does not depend on how they are split.

    python research/last_hand.py count results/dmc_vs_search/games.csv
    python research/last_hand.py rule --opponent planner --deals 1000 --seed 911
    python research/last_hand.py game-point --opponent search --deals 150 --seed 914
"""

from __future__ import annotations

import argparse
import csv
import sys
from concurrent.futures import ProcessPoolExecutor
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
    """Per agent label of ``path`` (a tournament's games.csv): ``games``; ``ended`` (games it
    ended by going out), ``won`` (its share of the wins of those) and ``lost_behind`` (those it
    ended while behind the leader and lost); ``led`` (games it began the last hand on the lowest
    total, ties included) and ``won_led`` (its share of the wins of those); ``behind`` (games it
    began the last hand behind) and ``behind_points`` (its points in those last hands, summed).
    ``ValueError`` (one line) for a file that is not a games.csv or is over
    :data:`MAX_CSV_BYTES`."""
    if path.stat().st_size > MAX_CSV_BYTES:
        raise ValueError(f"{path}: over {MAX_CSV_BYTES:,} bytes; not a games.csv of ours")
    rows: dict[str, dict[str, float]] = {}
    keys = ("games", "ended", "won", "lost_behind", "led", "won_led", "behind", "behind_points")
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
                row = rows.setdefault(label, dict.fromkeys(keys, 0.0))
                share = (label in winners) / len(winners)
                behind = bool(before[seat] > before.min())
                row["games"] += 1
                row["led"] += not behind
                row["won_led"] += share * (not behind)
                row["behind"] += behind
                row["behind_points"] += hands[-1][seat] * behind
                if hands[-1][seat] != 0:
                    continue
                row["ended"] += 1
                row["won"] += share
                row["lost_behind"] += behind and label not in winners
    return rows


def _if_ended_now(obs: np.ndarray, seen) -> tuple[np.ndarray, int]:
    """Each seat's total plus the cards it holds (its total were the hand to end now, R13), in
    ``seen``'s seat order (:func:`agents.hand.see` of ``obs``), and the threshold."""
    threshold = threshold_of(obs)
    return np.rint(np.array(seen.penalties) * threshold) + seen.sizes, threshold


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
            final, threshold = _if_ended_now(obs, seen)
            final[0] -= seen.sizes[0]  # the seat going out scores 0 (R13)
            if final.max() >= threshold and final[0] > final.min():  # R14: it ends, lost
                values[k, out] = -np.inf
        chosen = values.argmax(1)
        self.changed += int(np.count_nonzero(chosen != first))
        return chosen

    def act(self, observation: np.ndarray, mask: np.ndarray) -> int:
        return int(self.act_batch(observation[None], mask[None])[0])


def game_point(obs: np.ndarray, mask: np.ndarray) -> bool:
    """Whether the hand's end, were it now, would end the game: some seat's total plus the cards
    it holds reaches the threshold (R13-R14), from what the observation shows."""
    final, threshold = _if_ended_now(obs, see(obs, mask))
    return bool(final.max() >= threshold)


class SearchAtGamePoint:
    """``inner`` (the bundled ``dmc``), except that ``search`` decides every decision with a
    choice at :func:`game_point`. ``changed`` counts the decisions handed to the search."""

    name = "dmc_search_at_game_point"

    def __init__(self, inner, search):
        self.inner, self.search, self.changed = inner, search, 0

    def reset(self, seat: int, seed: int | None = None) -> None:
        self.inner.reset(seat, seed)
        self.search.reset(seat, seed)

    def act(self, observation: np.ndarray, mask: np.ndarray) -> int:
        if np.count_nonzero(mask) > 1 and game_point(observation, mask):
            self.changed += 1
            return self.search.act(observation, mask)
        return self.inner.act(observation, mask)


WRAPPERS = {
    "rule": lambda: NoLosingGoOut(make("dmc")),
    "game-point": lambda: SearchAtGamePoint(make("dmc"), make("search")),
}
"""The wrapped bundle each paired comparison plays against the bundle itself."""


def _play(player: str, opponent: str, players: int, deals: range, seed: int):
    """One process's part: ``(records, changed, name)`` of ``player`` (``dmc`` or a
    :data:`WRAPPERS` key) against ``players - 1`` copies of ``opponent`` over ``deals``."""
    agent = make("dmc") if player == "dmc" else WRAPPERS[player]()
    table = [agent] + [make(opponent) for _ in range(players - 1)]
    records = play_deals(table, Config(players=players), deals, seed=seed)
    return records, getattr(agent, "changed", 0), agent.name


def paired(
    wrapper: str, opponent: str, players: int, deals: int, seed: int, workers: int = 1
) -> list[dict]:
    """The bundled ``dmc`` and ``WRAPPERS[wrapper]`` on the same deals: a row each (player,
    games, win share with its Wilson interval, decisions changed), then the paired difference
    of the wrapper's share of each game over the bundle's, with its standard error."""
    cut = np.linspace(0, deals, max(1, min(workers, deals)) + 1).astype(int)
    parts = [range(a, b) for a, b in zip(cut, cut[1:])]
    pair = ("dmc", wrapper)
    jobs = [(p, opponent, players, part, seed) for p in pair for part in parts]
    with ProcessPoolExecutor(max(1, workers)) as pool:
        done = list(pool.map(_play, *zip(*jobs)))
    rows, shares = [], []
    for k in range(len(pair)):
        mine = done[k * len(parts) : (k + 1) * len(parts)]
        won = np.array([seat_shares(r)[r.agents.index(0)] for part, _, _ in mine for r in part])
        low, high = wilson(won.sum(), len(won))
        changed = sum(count for _, count, _ in mine)
        rows.append(
            {
                "player": mine[0][2],
                "games": len(won),
                "win_share": won.mean(),
                "ci_low": low,
                "ci_high": high,
                "changed": changed,
            }
        )
        shares.append(won)
    difference = shares[1] - shares[0]
    rows.append(
        {
            "difference": difference.mean(),
            "stderr": difference.std(ddof=1) / np.sqrt(len(difference)),
        }
    )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    counting = sub.add_parser("count", help="who ends the last hands of a games.csv")
    counting.add_argument("games", type=Path)
    helps = {
        "rule": "the bundled dmc with and without NoLosingGoOut",
        "game-point": "the bundled dmc with and without search at game point",
    }
    for wrapper, text in helps.items():
        pairing = sub.add_parser(wrapper, help=text)
        pairing.add_argument("--opponent", default="planner")
        pairing.add_argument("--players", type=int, default=4, choices=range(2, 7), metavar="2-6")
        pairing.add_argument("--deals", type=int, default=1000)
        pairing.add_argument("--seed", type=int, default=0)
        pairing.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    try:
        if args.command == "count":
            if not args.games.is_file():
                raise ValueError(f"{args.games}: no such file (give a tournament's games.csv)")
            counted = count(args.games)
            print(
                "agent            games  ended by going out  won of those  ended behind, lost  "
                "led into the last hand  won of those  last hand's points when behind"
            )
            for label, r in counted.items():
                print(f"{label:15} {r['games']:6.0f}  {r['ended']:18.0f}  {r['won']:12.1f}  "
                      f"{r['lost_behind']:18.0f}  {r['led']:22.0f}  {r['won_led']:12.1f}  "
                      f"{r['behind_points'] / max(r['behind'], 1):30.2f}")  # fmt: skip
        else:
            check_spec(args.opponent)
            for name in ("deals", "workers"):
                if getattr(args, name) < 1:
                    raise ValueError(f"--{name} must be >= 1; got {getattr(args, name)}")
            *rows, change = paired(args.command, args.opponent, args.players, args.deals,
                                   args.seed, args.workers)  # fmt: skip
            for r in rows:
                print(f"{r['player']:24} {r['games']} games  {100 * r['win_share']:.1f}% "
                      f"[{100 * r['ci_low']:.1f}, {100 * r['ci_high']:.1f}]  "
                      f"decisions changed {r['changed']}")  # fmt: skip
            print(f"paired difference {100 * change['difference']:+.1f} ± "
                  f"{100 * change['stderr']:.1f} points (standard error)")  # fmt: skip
    except ValueError as error:
        print(f"last_hand.py: {error}", file=sys.stderr)
        raise SystemExit(2) from None


if __name__ == "__main__":
    main()
