"""How much the other seats' plays and passes tell about their hidden cards, under an exact
model of how they play: the worlds :class:`agents.posterior.HandPosterior` hands a search
(``search:N:post``) against uniformly sampled ones, scored against the true hands.

A ``planner`` observer plays every game of ``--deals`` deals (rotated seats) against
``--opponent`` in the other seats; the posterior replays those seats under ``--model`` (a
batched player; with the default ``planner`` against ``planner`` the model is exact, and every
layout it keeps could have produced the whole hand so far), with ``--rounds`` rounds of card
exchanges a decision. At each of the observer's real decisions, the first ``--worlds`` of its
layouts and as many uniform ones are scored by *placement*: the share of the other seats' hidden
cards that a world puts in the seat that really holds them (1 for the true layout). Printed and
written to ``--out``/layout_inference.json: both means over the decisions, their paired
difference with its standard error, and the layouts by how many intervals of the hand they
agree with (age: 0 at the hand's first decision or where it had to start again), each against
the uniform worlds of the decisions that had layouts of that age.

    python benchmarks/layout_inference.py --sampler post --deals 25 --seed 20261425

``--sampler`` has one choice left, ``post``: the tracker (``track``), which kept the layouts
that agreed with the turns since they were made, was retired in favour of the posterior (run
it at commit 085aa4c).

The same seed gives the same figures. Nothing here plays better: it measures what inference
of the hidden cards from the seats' actions can give a search (``search_strength.py --see-all``
gives the other end, every hand known).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from agents.posterior import PARTICLES, ROUNDS, HandPosterior
from agents.registry import check_spec, has_batch_form, make, make_batch_agent
from agents.worlds import position, sample_hands
from odin_env.rules import Config
from odin_lab.cli import shell_command
from odin_lab.evaluation.tournament import play_deals
from odin_lab.files import write_atomic

AGES = (0, 1, 2, 3)
"""Age buckets of the report: worlds that survived 0, 1, 2 and 3 or more replays."""


def placement(worlds: np.ndarray, truth: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Each world's share of the other seats' hidden cards (not in ``known``) placed in the seat
    that holds them in ``truth`` (slot order, the observer in slot 0); NaN with none hidden."""
    hidden = truth[1:] & ~known[1:]
    total = int(np.bitwise_count(hidden).sum())
    hits = np.bitwise_count(worlds[:, 1:] & hidden[None, :]).sum(axis=1)
    return hits / total if total else np.full(len(worlds), np.nan)


class _Observer:
    """``planner`` in one seat, with a posterior beside it scored against the true hands (which
    come from the tournament's ``watch``, never from an observation)."""

    def __init__(self, posterior, worlds: int, seed: int):
        self.player, self.worlds, self.posterior = make("planner"), worlds, posterior
        self.rng = np.random.default_rng(seed)
        self.game = None
        self.rows: list[tuple[float, float]] = []
        self.ages: dict[int, list[tuple[float, float]]] = {age: [] for age in AGES}
        self.survivors: list[int] = []

    def watch(self, game) -> None:
        self.game = game

    def reset(self, seat: int, seed: int | None = None) -> None:
        self.posterior.reset()
        self.player.reset(seat, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        self.posterior.observe(observation, self.rng)
        game, _, unseen, needs = position(observation, None)
        n, me = len(needs), self.game.current
        truth = np.array([self.game.hands[(me + k) % n] for k in range(n)], dtype=np.int64)
        known = np.array(game.known, dtype=np.int64)
        if sum(needs):
            tracked = placement(self.posterior.hands[: self.worlds], truth, known)
            uniform = placement(sample_hands(game, unseen, needs, self.worlds, self.rng), truth,
                                known)  # fmt: skip
            self.rows.append((float(tracked.mean()), float(uniform.mean())))
            every = placement(self.posterior.hands, truth, known)
            ages = self.posterior.ages
            for age in AGES:
                chosen = ages >= age if age == AGES[-1] else ages == age
                if chosen.any():  # paired with the uniform worlds of the same decision
                    self.ages[age].append((float(every[chosen].mean()), float(uniform.mean())))
            self.survivors.append(self.posterior.survivors())
        action = self.player.act(observation, action_mask)
        self.posterior.decided(action)
        return action


def measure(opponent: str, model: str, players: int, deals: int, seed: int, particles: int,
            worlds: int, rounds: int = ROUNDS) -> dict:  # fmt: skip
    """The figures of the module docstring for one table."""
    policy = make_batch_agent(model, seed=seed)
    observer = _Observer(HandPosterior(policy, particles, rounds), worlds, seed)
    table = [observer] + [make(opponent, seed=seed + s) for s in range(1, players)]
    play_deals(table, Config(players=players), deals, seed=seed, watch=observer.watch)
    rows = np.array(observer.rows)
    difference = rows[:, 0] - rows[:, 1]
    return {
        "decisions": len(rows),
        "tracked": float(rows[:, 0].mean()),
        "uniform": float(rows[:, 1].mean()),
        "difference": float(difference.mean()),
        "difference_se": float(difference.std(ddof=1) / np.sqrt(len(rows))),
        "survivors_median": float(np.median(observer.survivors)),
        "by_age": [
            {
                "age": f"{age}+" if age == AGES[-1] else str(age),
                "decisions": len(pairs),
                "placement": float(np.mean([a for a, _ in pairs])) if pairs else None,
                "uniform": float(np.mean([b for _, b in pairs])) if pairs else None,
            }
            for age, pairs in observer.ages.items()
        ],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--opponent", default="planner", help="the agent in the other seats")
    parser.add_argument("--model", default="planner", help="the batched agent the replays use")
    parser.add_argument("--players", type=int, default=4)
    parser.add_argument("--deals", type=int, default=25, help="deals, each played once a seat")
    parser.add_argument("--seed", type=int, default=20261425)
    parser.add_argument(
        "--sampler",
        choices=("post",),
        default="post",
        help="post: agents.posterior, layouts that agree with the whole hand (search:N:post); "
        "the tracker (track) was retired",
    )
    parser.add_argument("--particles", type=int, default=PARTICLES, help="layouts kept")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="exchange rounds a decision")
    parser.add_argument("--worlds", type=int, default=128, help="worlds scored a decision")
    parser.add_argument("--out", type=Path, default=Path("results/layout_inference"))
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    try:
        check_spec(args.opponent)
        check_spec(args.model)
    except ValueError as error:
        parser.error(str(error).splitlines()[0])
    if not has_batch_form(args.model):
        parser.error(f"--model must be an agent with a batched form; got {args.model!r}")
    if not 2 <= args.players <= 6:
        parser.error(f"--players must be a table size 2-6; got {args.players}")
    for name in ("deals", "particles", "worlds"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be >= 1; got {getattr(args, name)}")
    if args.rounds < 0:
        parser.error(f"--rounds must be >= 0; got {args.rounds}")
    row = measure(args.opponent, args.model, args.players, args.deals, args.seed,
                  args.particles, args.worlds, args.rounds)  # fmt: skip
    print(f"placement of the hidden cards, {args.model} as the model of {args.opponent} "
          f"({args.players} players, {row['decisions']:,} decisions, "
          f"seed {args.seed})")  # fmt: skip
    print(f"  tracked {row['tracked']:.4f}  uniform {row['uniform']:.4f}  difference "
          f"{row['difference']:+.4f} +- {row['difference_se']:.4f} (SE)  "
          f"survivors a decision {row['survivors_median']:.0f} (median)")  # fmt: skip
    for cell in row["by_age"]:
        shown = "-"
        if cell["placement"] is not None:
            shown = f"{cell['placement']:.4f} (uniform at the same decisions {cell['uniform']:.4f})"
        print(f"  worlds of age {cell['age']:<3} at {cell['decisions']:>6,} decisions: {shown}")
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {"command": shell_command("benchmarks/layout_inference.py", argv),
               "settings": {k: getattr(args, k) for k in ("opponent", "model", "players",
                                                          "deals", "seed", "sampler",
                                                          "particles", "rounds", "worlds")},
               **row}  # fmt: skip
    text = json.dumps(payload, indent=2) + "\n"
    write_atomic(args.out / "layout_inference.json", text.encode())
    print(f"wrote {args.out / 'layout_inference.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
