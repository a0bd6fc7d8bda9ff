"""The search player's strength against its decision time: rotated-seat tournaments of
``search:N`` (or ``search:Nms``) against ``players - 1`` copies of an opponent, one per budget.

Prints, per budget, the win share with its 95% Wilson interval, the mean penalty per hand and
the median and 90th-percentile time of a search decision (forced decisions excluded), and
writes them to ``--out`` as CSV and JSON with a plot of win share against median decision time
(``--json PATH``: the JSON also there).

    python research/search_strength.py --budgets 16 64 256 --deals 100 --seed 20261201

Each deal is played from every seat; deals go to ``--workers`` processes in parts of
:data:`PART` deals (a progress bar counts them), and the games do not depend on the worker count
or the parts (each game seeds the agents from the deal). Each finished part is written at once
to ``--out``/parts/ (games and decision times); ``--resume`` plays only the parts not there, so
a stopped run (Ctrl-C, ``kill -9``, a crash) loses at most the parts it was playing.

``--see-all`` gives the search the game's true hands as every world it plays: an upper bound
on what inferring the hidden cards could give it (not a fair player; its rows say "sees every
hand"). ``--see-share P`` gives it part of that: in each world, each hidden card of another
seat is where it truly is with chance P, and the other unseen cards are laid out uniformly in
the places left; so its worlds place a known share of the hidden cards right, and the win share
it reaches says what an inference of that accuracy (``layout_inference.py``'s placement) could
be worth.

``--others SPEC`` has another player (any spec with a batched form: a network, a linear player)
play every seat of the search's playouts, in place of ``planner`` (until commit 282f95f the
searcher's own seat stayed ``planner``). It asks whether a search that models the table with
another player, or with the very player it meets, wins more against it. Its parts and rows are
its own.
"""

from __future__ import annotations

import argparse
import json
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np
from tqdm import tqdm

from agents.registry import check_spec, make, make_batch_agent
from odin_env.rules import Config
from odin_lab.cli import shell_command
from odin_lab.evaluation.stats import seat_shares, wilson
from odin_lab.evaluation.tournament import GameRecord, play_deals
from odin_lab.files import write_atomic

PART = 5  # deals a worker plays before it reports: a search game takes seconds
MAX_PART_BYTES = 64 << 20  # a part file read back by --resume (5 deals take about 100 KB)


class _Timed:
    """An agent whose decisions with two legal actions or more are timed."""

    def __init__(self, agent):
        self.agent, self.name, self.times = agent, agent.name, []

    def reset(self, seat: int, seed: int | None = None) -> None:
        self.agent.reset(seat, seed)

    def act(self, observation, mask) -> int:
        start = time.perf_counter()
        action = self.agent.act(observation, mask)
        if np.count_nonzero(mask) > 1:
            self.times.append(time.perf_counter() - start)
        return action


class _SeesAll:
    """Makes a search's every world the true layout of the game it plays (``--see-all``), or with
    ``share`` below 1 a layout that puts each hidden card where it truly is with that chance
    (``--see-share``; :func:`partly_true`): an upper bound on what better inference of the hidden
    cards could give it, not a fair player. The game comes from the tournament
    (``play_deals(watch=...)``), never from an observation."""

    def __init__(self, search, share: float = 1.0):
        self.game, self.search, self.share = None, search, share
        search._sample = self.sample  # the one place a search draws its worlds

    def watch(self, game) -> None:
        self.game = game

    def sample(self, position, unseen, needs, worlds: int) -> np.ndarray:
        """``worlds`` copies of the true hands, the searcher (the seat to act) in slot 0 and
        the others in table order, as :func:`agents.worlds.sample_hands` lays them out."""
        n, me = self.game.config.players, self.game.current
        hands = [self.game.hands[(me + slot) % n] for slot in range(n)]
        if self.share < 1.0:
            known = [int(k) for k in position.known]
            return partly_true(hands, known, unseen, needs, worlds, self.share, self.search.rng)
        return np.repeat(np.array([hands], dtype=np.int64), worlds, axis=0)


def partly_true(
    truth: list[int],
    known: list[int],
    unseen: np.ndarray,
    needs: list[int],
    worlds: int,
    share: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """``(worlds, players)`` layouts (slot order, as :func:`agents.worlds.sample_hands`): seat 0's
    hand and every seat's known cards as in ``truth``; each other hidden card of ``truth`` kept
    in its seat with chance ``share``, independently in each world; the unseen cards not kept
    laid out uniformly in the places left (``needs[s]`` hidden cards a seat)."""
    n = len(needs)
    cards = [(c, s) for s in range(1, n) for c in range(64) if (truth[s] & ~known[s]) >> c & 1]
    layouts = np.zeros((worlds, n), dtype=np.int64)
    layouts[:, 0] = truth[0]
    kept = rng.random((worlds, len(cards))) < share
    for world in range(worlds):
        held = [
            [c for (c, s), k in zip(cards, kept[world]) if k and s == seat] for seat in range(n)
        ]
        pool = [int(c) for c in rng.permutation(unseen) if not any(int(c) in h for h in held)]
        for seat in range(1, n):
            more = needs[seat] - len(held[seat])
            chosen, pool = held[seat] + pool[:more], pool[more:]
            layouts[world, seat] = known[seat] | sum(1 << c for c in chosen)
    return layouts


def _sees_setting(sees: float) -> dict:
    return {"see_all": True} if sees == 1.0 else {"see_share": sees} if sees else {}


def _sees_label(sees: float) -> str:
    if sees == 1.0:
        return " (sees every hand)"
    return f" (sees {sees:g} of the hidden cards)" if sees else ""


def _sees_suffix(sees: float) -> str:
    return "_sees_all" if sees == 1.0 else f"_sees_{sees:g}" if sees else ""


def model_others(search, others: str) -> None:
    """``search``'s playouts with ``others`` (a spec with a batched form) in every seat."""
    search.policy = make_batch_agent(others, seed=0)


def _part(args: tuple) -> tuple[list, list[float]]:
    spec, opponent, players, threshold, deals, seed, sees, others = args
    search = make(spec)
    if others:
        model_others(search, others)
    watch = _SeesAll(search, sees).watch if sees else None
    searcher = _Timed(search)
    table = [searcher] + [make(opponent) for _ in range(players - 1)]
    config = Config(players=players, threshold=threshold)
    records = play_deals(table, config, deals, seed=seed, watch=watch)
    return records, searcher.times


def _others_setting(others: str | None) -> dict:
    return {"others": others} if others else {}


def _others_label(others: str | None) -> str:
    return f" (others played out by {others})" if others else ""


def _part_path(
    out: Path, spec: str, part: range, sees: float = 0.0, others: str | None = None
) -> Path:
    folder = spec.replace(":", "_") + _sees_suffix(sees)
    if others:
        # A path in a spec becomes part of a folder name: only its file's stem is kept.
        folder += "_others_" + "_".join(Path(piece).stem for piece in others.split(":"))
    return out / "parts" / folder / f"deals-{part.start}-{part.stop - 1}.json"


def _read_part(path: Path, settings: dict, games: int) -> tuple[list, list[float]] | None:
    """A finished part's games and decision times (seconds), or ``None`` if it is not there;
    ``ValueError`` (one line naming the file) if it is not this run's part."""
    if not path.is_file():
        return None
    problem = f"{path}: not a part of this run; start afresh without --resume or with another --out"
    if path.stat().st_size > MAX_PART_BYTES:
        raise ValueError(f"{problem} (over {MAX_PART_BYTES:,} bytes)")
    try:
        data = json.loads(path.read_text())
        if data["settings"] != settings or len(data["records"]) != games:
            raise ValueError("other settings")
        return [GameRecord.from_dict(r) for r in data["records"]], [float(t) for t in data["times"]]
    except (ValueError, KeyError, TypeError) as error:
        raise ValueError(f"{problem} ({str(error)[:80]})") from None


def measure(
    spec: str,
    opponent: str,
    players: int,
    threshold: int,
    deals: int,
    seed: int,
    workers: int,
    start: int = 0,
    out: Path | None = None,
    resume: bool = False,
    sees: float = 0.0,
    others: str | None = None,
) -> dict:
    """One budget's tournament of deals ``start .. start + deals - 1``: win share (ties
    shared), interval, penalty and timings. ``out``: each finished part is written there
    (atomically); ``resume``: the parts found there are read, not played; ``sees``: the share
    of the hidden cards the search's worlds place where they truly are (:class:`_SeesAll`; 0:
    none, as it plays); ``others``: the spec that plays the other seats of its playouts
    (:func:`model_others`; ``None``: as the budget's spec says)."""
    stop = start + deals
    parts = [range(lo, min(lo + PART, stop)) for lo in range(start, stop, PART)]
    settings = {
        "agent": spec,
        "opponent": opponent,
        "players": players,
        "threshold": threshold,
        "seed": seed,
        **_sees_setting(sees),
        **_others_setting(others),
    }
    found = {}
    if resume and out is not None:
        for part in parts:
            path = _part_path(out, spec, part, sees, others)
            kept = _read_part(path, settings, len(part) * players)
            if kept is not None:
                found[part] = kept
    todo = [part for part in parts if part not in found]
    jobs = [(spec, opponent, players, threshold, part, seed, sees, others) for part in todo]
    with ProcessPoolExecutor(workers) as pool, tqdm(total=deals, unit="deal", desc=spec) as bar:
        bar.update(sum(len(part) for part in found))
        for part, result in zip(todo, pool.map(_part, jobs)):
            found[part] = result
            if out is not None:
                records, times = result
                payload = {
                    "settings": settings,
                    "records": [r.to_dict() for r in records],
                    "times": times,
                }
                path = _part_path(out, spec, part, sees, others)
                write_atomic(path, json.dumps(payload).encode())
            bar.update(len(part))
    results = [found[part] for part in parts]
    records = [r for part, _ in results for r in part]
    times = np.array([t for _, part in results for t in part]) * 1000.0
    wins = sum(seat_shares(r)[r.agents.index(0)] for r in records)
    low, high = wilson(wins, len(records))
    hands = sum(len(r.hands) for r in records)
    penalty = sum(h[r.agents.index(0)] for r in records for h in r.hands) / hands
    return {
        "agent": spec + _sees_label(sees) + _others_label(others),
        "opponent": opponent,
        "players": players,
        "games": len(records),
        "win_share": wins / len(records),
        "ci_low": low,
        "ci_high": high,
        "penalty_per_hand": penalty,
        "median_ms": float(np.median(times)),
        "p90_ms": float(np.percentile(times, 90)),
        "decisions": int(times.size),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--budgets",
        nargs="+",
        default=["16", "64", "256"],
        help="playouts per decision (N) or milliseconds (Nms)",
    )
    p.add_argument("--opponent", default="planner")
    p.add_argument("--players", type=int, default=4)
    p.add_argument("--threshold", type=int, default=15)
    p.add_argument("--deals", type=int, default=100, help="deals per budget (x players games)")
    p.add_argument("--seed", type=int, default=20261201)
    p.add_argument("--start", type=int, default=0, help="first deal (to extend an earlier run)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", type=Path, default=Path("results/search_strength"))
    p.add_argument("--json", type=Path, help="also write the figures to this file")
    p.add_argument(
        "--resume", action="store_true", help="read the parts a stopped run left; play the rest"
    )
    p.add_argument(
        "--see-all",
        action="store_true",
        help="the search's worlds are the true hands: an upper bound, not a fair player",
    )
    p.add_argument(
        "--see-share",
        type=float,
        metavar="P",
        help="each hidden card where it truly is with chance P (0 < P < 1) in each world",
    )
    p.add_argument(
        "--others",
        metavar="SPEC",
        help="the player of every seat of the search's playouts (a spec with a batched form; "
        "default: planner)",
    )
    args = p.parse_args()
    if args.see_share is not None and not 0 < args.see_share < 1:
        p.error(f"--see-share must be a chance between 0 and 1 (exclusive); got {args.see_share}")
    if args.see_share is not None and args.see_all:
        p.error("--see-all and --see-share each choose the worlds: give one of them")
    args.sees = 1.0 if args.see_all else args.see_share or 0.0
    for spec in [f"search:{b}" for b in args.budgets] + [args.opponent]:
        try:
            check_spec(spec)
        except ValueError as error:
            p.error(str(error))
    if args.others:
        _check_others(p, args.others)
    rows = []
    print(
        f"search vs {args.players - 1} x {args.opponent}, {args.players} players, threshold "
        f"{args.threshold}, deals {args.start}-{args.start + args.deals - 1} x {args.players} "
        f"seats, seed {args.seed}"
    )
    for budget in args.budgets:
        try:
            row = measure(
                f"search:{budget}",
                args.opponent,
                args.players,
                args.threshold,
                args.deals,
                args.seed,
                args.workers,
                args.start,
                args.out,
                args.resume,
                args.sees,
                args.others,
            )
        except ValueError as error:
            p.exit(2, f"{p.prog}: error: {error}\n")
        rows.append(row)
        print(
            f"{row['agent']:<14} {100 * row['win_share']:5.1f}% [{100 * row['ci_low']:.1f}, "
            f"{100 * row['ci_high']:.1f}] over {row['games']} games; "
            f"{row['penalty_per_hand']:.2f} cards/hand; decision {row['median_ms']:.1f} ms "
            f"median, {row['p90_ms']:.1f} ms p90",
            flush=True,
        )
    _write(rows, args)


def _check_others(p: argparse.ArgumentParser, others: str) -> None:
    """Exit 2 (one line) unless ``others`` can play the search's playouts: a spec with a
    batched form (built here once, so a model file is read before the tournament, not first in
    a worker)."""
    try:
        make_batch_agent(others)
    except (ValueError, OSError) as error:
        p.error(f"--others: {str(error).splitlines()[0]}")


def _write(rows: list[dict], args: argparse.Namespace) -> None:
    import csv

    from matplotlib.figure import Figure

    args.out.mkdir(parents=True, exist_ok=True)
    settings = {
        "opponent": args.opponent,
        "players": args.players,
        "threshold": args.threshold,
        "deals": f"{args.start}-{args.start + args.deals - 1}",
        "seed": args.seed,
        **_sees_setting(args.sees),
        **_others_setting(args.others),
    }
    command = shell_command("research/search_strength.py")
    report = json.dumps({"command": command, "settings": settings, "budgets": rows}, indent=2)
    for path in [args.out / "search_strength.json"] + ([args.json] if args.json else []):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(report + "\n")
    with open(args.out / "search_strength.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    fig = Figure(figsize=(5.5, 3.6))
    ax = fig.subplots()
    # The budget is the x axis (it fixes the games); the decision time, wall-clock and so
    # machine-dependent, labels each point.
    x = [_budget(r["agent"]) for r in rows]
    y = [100 * r["win_share"] for r in rows]
    err = [
        [100 * (r["win_share"] - r["ci_low"]) for r in rows],
        [100 * (r["ci_high"] - r["win_share"]) for r in rows],
    ]
    ax.errorbar(x, y, yerr=err, marker="o", capsize=4, color="tab:blue", label="search")
    for r, xi, yi in zip(rows, x, y):
        note = f"{r['median_ms']:.0f} ms, {int(r['games'])} games"
        ax.annotate(note, (xi, yi), textcoords="offset points", xytext=(7, -4), fontsize=8)
    ax.axhline(100 / args.players, ls="--", color="grey", label="equal share")
    ax.set_xscale("log", base=2)
    ax.set_xticks(x, [f"{v:g}" for v in x])
    ax.set_xlim(min(x) / 1.5, max(x) * 3)
    ax.set_xlabel("playouts per decision (labels: median decision time, games played)")
    ax.set_ylabel(f"win share vs {args.players - 1} x {args.opponent} (%)")
    ax.set_title(f"{args.players} players, rotated seats, 95% Wilson intervals", fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(args.out / "search_strength.png", dpi=150)


def _budget(spec: str) -> float:
    """The number of a ``search:N`` or ``search:Nms`` spec (a row's label may follow it)."""
    return float(spec.split()[0].split(":")[1].removesuffix("ms"))


if __name__ == "__main__":
    main()
