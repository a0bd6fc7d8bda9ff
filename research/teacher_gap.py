"""How far a player is from the search that teaches expert iteration, decision by decision.

``train.py --algo exit --replay N`` keeps the search's labels of its latest decisions in its
checkpoint: each decision's observation, its searched candidates and their labels. This
script takes the last ``--decisions`` of them that have two candidates or more and searches
each once more, with an independent seed (the run's ``playout`` and ``rollouts``; decision ``k``
of those taken is seeded ``spawn_seed(seed, k)``). A choice among a decision's candidates is
then scored by those fresh labels: its *regret*, the fresh mean penalty for the hand of the
candidate chosen less that of the fresh best (``regret``, penalty points, 0 at best), and the
same in win chance (``regret_chance``, 0-1). The fresh labels are independent of the kept
ones, so the teacher's own choice is scored without its own noise. Rows, printed and written to
``--out``/teacher_gap.json (with a plot, teacher_gap.png):

- ``labels``: the candidate the run's kept labels rank first (the teacher);
- ``random``: a uniform candidate (the mean over the candidates);
- each ``--players`` spec: its choice among the candidates, from the observation alone (built
  once; ``act`` is given the candidates as its mask);

each with its mean and standard error over the decisions (and within each table size,
``by_players``, and each kind of decision, ``by_kind``: see ``labels.kind``), its share of the
decisions where it chose as ``labels`` did, and, for a player, the paired difference of its
regret to that of ``labels`` (how much of the teacher's play it has not learnt, in penalty
points a decision) and to that of the first player (a student against its start, say).

    python research/teacher_gap.py --run runs/exit_s512 --decisions 3000 --seed 20261435 \\
        --players dmc:agents/models/dmc_one.safetensors dmc --workers 2

Without a run (whose replay lives only as long as its folder), ``--games SPEC ...`` draws the
decisions from seeded games of those players, one per seat (``game_decisions`` of
:mod:`odin_lab.training.labels`): the first spec's decisions with two legal actions or more,
each cut to the ``--top`` legal actions the bundled one-pass network ``dmc_one`` values most
(the shortlist of ``search``), and labelled by a search of its own (``--playout``,
``--rollouts``; decision ``k`` seeded ``spawn_seed(seed, k, 1)``), independent of the fresh
one. The teacher is then ``search`` itself:

    python research/teacher_gap.py --games dmc planner planner planner --decisions 3000 \\
        --seed 20261439 --players dmc:agents/models/dmc_one.safetensors dmc --workers 2

The same seed gives the same figures for any ``--workers``, and on Ray: ``--ray [ADDRESS]`` runs
the searches as Ray tasks across a cluster (docs/ray.md).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from agents.registry import check_spec, make
from agents.search import ROLLOUTS, TOP
from odin_env.observation import views
from odin_lab.cli import shell_command
from odin_lab.evaluation.distributed import LOCAL, connect
from odin_lab.files import write_atomic
from odin_lab.training import TrainingError, read_config
from odin_lab.training.checkpoints import CHECKPOINT, load_checkpoint
from odin_lab.training.exit import LEARNER_PLAYOUT, kept_labels
from odin_lab.training.labels import (
    candidate_mask,
    candidate_regrets,
    check_teacher,
    game_decisions,
    kind,
    relabel,
)

MOST_WORKERS = 64


def kept_decisions(run: Path, last: int) -> tuple[dict, list[tuple[np.ndarray, ...]]]:
    """The run's settings (``config.json``) and the last ``last`` decisions of its checkpoint's
    replay with two candidates or more, oldest first: ``(observation, candidates, labels)``.
    ``TrainingError`` (one line) for a run that is not a readable expert-iteration run with a
    replay, whose playouts are the heuristic that ``search_rows`` can replay."""
    config = read_config(run)
    if config.algo != "exit":
        raise TrainingError(
            f"--run must be an expert-iteration run (--algo exit); {run} is {config.algo}"
        )
    settings = config.algo_config
    if settings.teacher or settings.playout == LEARNER_PLAYOUT:
        what = "a teacher network" if settings.teacher else "the learner's network"
        raise TrainingError(
            f"--run {run} was labelled by {what}, which its checkpoint does not keep as it was; "
            "a run whose searches play out a heuristic (--playout planner, say) is needed"
        )
    tensors, _, _ = load_checkpoint(run, config)
    if "replay/obs" not in tensors:
        raise TrainingError(f"--run {run}'s {CHECKPOINT} keeps no labels: it ran without --replay")
    try:
        kept = [decision for decision in kept_labels(tensors) if len(decision[1]) > 1]
    except ValueError as error:
        raise TrainingError(f"--run {run}'s {CHECKPOINT}: {error}") from None
    return {"playout": settings.playout, "rollouts": settings.rollouts}, kept[-last:]


def choices(decisions: list, players: dict[str, object]) -> dict[str, list[int]]:
    """Each chooser's pick (an index into the decision's candidates): ``labels``, then each
    player's; ``ValueError`` (one line) for a player that picks outside the candidates (one
    that does not keep to the mask it is given, as ``planner`` does not)."""
    picks: dict[str, list[int]] = {"labels": [], **{name: [] for name in players}}
    for obs, candidates, labels in decisions:
        picks["labels"].append(int(np.argmax(labels)))
        mask = candidate_mask(candidates)
        for name, player in players.items():
            action = player.act(obs, mask)
            found = np.flatnonzero(candidates == action)
            if found.size == 0:
                raise ValueError(
                    f"--players {name} chose action {action}, not one of the candidates "
                    f"{candidates.tolist()} it was given as its mask; score players that keep "
                    "to their mask (the networks)"
                )
            picks[name].append(int(found[0]))
    return picks


def regrets(
    fresh: list, candidates: list, picks: dict[str, list[int]], groups: dict[str, np.ndarray]
) -> tuple[list[dict], dict[str, list[dict]]]:
    """Each chooser's row (see the module docstring), and its rows within each group of the
    decisions: ``fresh`` scores of each decision's ``candidates``, ``picks`` of
    :func:`choices`, ``groups`` each decision's value of a grouping (``players``: its table
    size, say), written as ``by_<grouping>``. A figure's ``_se`` is its standard error."""
    loss = {name: [] for name in ("random", *picks)}
    loss_win = {name: [] for name in loss}
    for k, (scores, kept) in enumerate(zip(fresh, candidates, strict=True)):
        lost, lost_win = candidate_regrets(scores, kept)
        loss["random"].append(lost.mean())
        loss_win["random"].append(lost_win.mean())
        for name, picked in picks.items():
            loss[name].append(lost[picked[k]])
            loss_win[name].append(lost_win[picked[k]])
    loss = {name: np.array(values) for name, values in loss.items()}
    players = [name for name in picks if name != "labels"]
    rows, grouped = [], {f"by_{key}": [] for key in groups}
    for name, values in loss.items():
        row = {"chooser": name, **_mean("regret", values)}
        row.update(_mean("regret_chance", np.array(loss_win[name])))
        if name in players:
            row.update(_mean("minus_labels", values - loss["labels"]))
        if name in players[1:]:  # against the first player, on the same decisions
            row.update(_mean("minus_first", values - loss[players[0]]))
        if name in picks:
            row["share_agreeing"] = float(np.mean(np.equal(picks[name], picks["labels"])))
        rows.append(row)
        for key, of in groups.items():
            grouped[f"by_{key}"] += [
                {
                    "chooser": name,
                    key: group,
                    "decisions": int((of == group).sum()),
                    **_mean("regret", values[of == group]),
                }
                for group in np.unique(of).tolist()
            ]
    return rows, grouped


def _mean(key: str, values: np.ndarray) -> dict[str, float]:
    error = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return {key: float(values.mean()), f"{key}_se": float(error)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", type=Path, help="an expert-iteration run folder")
    source.add_argument(
        "--games",
        nargs="+",
        metavar="SPEC",
        help="draw the decisions from games of these players, one per seat (the first's)",
    )
    parser.add_argument(
        "--decisions", type=int, default=3000, help="the last N kept decisions (the first N drawn)"
    )
    teacher = parser.add_argument_group("the teacher of --games (a run's are its own)")
    teacher.add_argument("--playout", help="the search's playout policy (default planner)")
    teacher.add_argument("--rollouts", type=int, help=f"playouts a decision (default {ROLLOUTS})")
    teacher.add_argument("--top", type=int, help=f"candidates, by dmc_one (default {TOP}; 0: all)")
    parser.add_argument("--players", nargs="*", default=[], help="agent specs to score")
    parser.add_argument("--seed", type=int, default=20261435, help="the fresh searches' seed")
    parser.add_argument("--workers", type=int, default=1, help="processes for the searches")
    parser.add_argument(
        "--ray",
        nargs="?",
        const=LOCAL,
        metavar="ADDRESS",
        help="run the searches as Ray tasks (the same labels): on the cluster at ADDRESS (auto, "
        "HOST:PORT or ray://HOST:PORT), or on a local Ray of --workers CPUs when no address is "
        "given; needs the ray extra",
    )
    parser.add_argument("--out", type=Path, default=Path("results/teacher_gap"))
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    if args.decisions < 1:
        parser.error(f"--decisions must be >= 1; got {args.decisions}")
    if not 1 <= args.workers <= MOST_WORKERS:
        parser.error(f"--workers must be 1-{MOST_WORKERS}; got {args.workers}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0; got {args.seed}")
    chosen = [f"--{k}" for k in ("playout", "rollouts", "top") if getattr(args, k) is not None]
    if args.run and chosen:
        parser.error(f"{', '.join(chosen)}: a run's searches are its own; give them with --games")
    search = {
        "playout": args.playout or "planner",
        "rollouts": ROLLOUTS if args.rollouts is None else args.rollouts,
        "top": TOP if args.top is None else args.top,
    }
    if args.games:
        try:
            check_teacher(args.games, **search)
        except ValueError as error:
            parser.error(str(error))
    players = {}
    for spec in args.players:
        if spec in ("labels", "random"):  # rows of their own: a player of that name would clash
            parser.error(f"--players {spec}: the report's {spec!r} row is there already")
        try:
            check_spec(spec)
            players[spec] = make(spec)
        except (ValueError, OSError) as error:
            parser.error(f"--players {spec}: {str(error).splitlines()[0]}")
    if args.ray is not None:
        try:
            connect(args.ray, args.workers)  # before any search is made
        except ValueError as error:
            parser.error(str(error))
    if args.games:
        try:
            decisions = game_decisions(
                args.games, args.decisions, args.seed, workers=args.workers, ray=args.ray, **search
            )
        except (ValueError, OSError) as error:  # a player that cannot be built, or plays there
            parser.error(f"--games: {str(error).splitlines()[0]}")
    else:
        try:
            search, decisions = kept_decisions(args.run, args.decisions)
        except TrainingError as error:
            parser.error(f"--run: {str(error).splitlines()[0]}")
    if not decisions:
        parser.error(f"--run {args.run} keeps no decision with two candidates or more")
    try:
        picks = choices(decisions, players)
    except ValueError as error:
        parser.error(str(error))
    fresh = relabel(
        decisions, search["playout"], search["rollouts"], args.seed, args.workers, ray=args.ray
    )
    groups = {
        "players": np.array([views(obs)["players"].argmax() + 2 for obs, _, _ in decisions]),
        "kind": np.array([kind(obs, candidates) for obs, candidates, _ in decisions]),
    }
    rows, grouped = regrets(fresh, [c for _, c, _ in decisions], picks, groups)
    again = f"{search['rollouts']} {search['playout']} playouts, seed {args.seed}"
    print(
        f"{len(decisions):,} decisions of {_source(args)}, searched again ({again}); regret in "
        "penalty points a decision"
    )
    print(f"{'chooser':<44} {'regret':>16} {'minus labels':>16} {'minus first':>16} {'agrees':>7}")
    for row in rows:
        paired = [
            f"{row[key]:+.4f} ± {row[key + '_se']:.4f}" if key in row else ""
            for key in ("minus_labels", "minus_first")
        ]
        agrees = f"{row['share_agreeing']:.1%}" if "share_agreeing" in row else ""
        print(
            f"{row['chooser']:<44} {row['regret']:.4f} ± {row['regret_se']:.4f} "
            f"{paired[0]:>16} {paired[1]:>16} {agrees:>7}"
        )
    report = {
        "command": shell_command("research/teacher_gap.py", argv),
        "settings": {
            **({"games": args.games} if args.games else {"run": str(args.run)}),
            "decisions": len(decisions),
            "seed": args.seed,
            **search,
        },
        "rows": rows,
        **grouped,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "teacher_gap.json", (json.dumps(report, indent=2) + "\n").encode())
    _plot(rows, args)
    print(f"wrote {args.out / 'teacher_gap.json'} and teacher_gap.png")
    return 0


def _source(args: argparse.Namespace) -> str:
    """Where the decisions came from, in words."""
    if args.games:
        return f"{args.games[0]}'s decisions in games of {' '.join(args.games)}"
    return f"{args.run.name}'s kept decisions"


def _plot(rows: list[dict], args: argparse.Namespace) -> None:
    from matplotlib.figure import Figure

    shown = [row for row in rows if row["chooser"] != "random"]
    fig = Figure(figsize=(7.0, 0.5 * len(shown) + 1.4))
    ax = fig.subplots()
    means = [row["regret"] for row in shown]
    errors = [1.96 * row["regret_se"] for row in shown]
    ax.barh(range(len(shown)), means, xerr=errors, color="tab:blue", alpha=0.8)
    ax.set_yticks(range(len(shown)), [row["chooser"] for row in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("regret among the candidates (penalty points a decision)", fontsize=9)
    ax.set_title(f"{_source(args)}, searched again", fontsize=10)
    fig.tight_layout()
    temporary = args.out / "teacher_gap.tmp.png"
    fig.savefig(temporary, dpi=150)
    temporary.replace(args.out / "teacher_gap.png")


if __name__ == "__main__":
    sys.exit(main())
