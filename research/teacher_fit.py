"""Can a network learn the search's choices? A student fitted on the search's labels, scored on
decisions it never saw.

``teacher_gap.py`` measures how far a network's picks are from those of the search that teaches
expert iteration, and expert iteration closes little of that gap (docs/training.md). This
script asks why without a training run. It draws ``--decisions`` labelled decisions from
seeded games of ``--games`` (``labels.game_decisions``: the first spec's decisions with
a choice, cut to the ``--top`` legal actions the bundled ``dmc_one`` values most, labelled by a
search of ``--rollouts`` ``--playout`` playouts) and ``--held-out`` more from other games of the
same table (seed ``spawn_seed(seed, 1)``), which it searches once more with an independent seed
(decision ``k``: ``spawn_seed(spawn_seed(seed, 1), k)``), as ``teacher_gap.py`` does. It fits a
copy of ``--student`` (a DMC model file read once) to the first set for ``--epochs`` epochs, and
before the fit and after each epoch scores the student's picks among each decision's candidates:

- on the held-out decisions, its *regret* under the fresh labels (the fresh mean penalty of its
  pick less that of the fresh best, penalty points a decision): what it learnt that carries to
  positions it has not seen; the teacher's own regret there (the candidate its labels rank
  first) is the floor;
- on the training decisions, how often it picks as their labels do: how far it fits what it was
  given.

``--loss rank`` is a listwise ranking loss (ListNet, Cao et al., ICML 2007): the cross-entropy
between ``softmax(labels / tau)`` and ``softmax(Q / tau)`` over each decision's candidates, which
teaches the order and the gaps within the list, not their level. ``--loss mse`` is the
regression expert iteration's ``--relative`` made (retired: docs/findings/expert-iteration.md):
the labels shifted so that their mean is the student's start value of the list. Both add
``--anchor`` times the mean squared change of the candidates' values from the start, which keeps
the list's level, and so its place among the legal actions left off it. ``--save PATH`` writes
the fitted student as a model file, to be played (``dmc:PATH``).

    python research/teacher_fit.py --games dmc:agents/models/dmc_one.safetensors planner \\
        planner planner --decisions 20000 --held-out 3000 --seed 933 --workers 2

The same seed gives the same figures for any ``--workers``, and on Ray: ``--ray [ADDRESS]`` runs the
searches as Ray tasks across a cluster (docs/ray.md). ``--labels DIR`` keeps the searches
(the labels, the held-out decisions' own and fresh ones) in ``DIR``, a file of
``labels.CACHE_PART`` decisions at a time: a stopped run loses at most a file of them, and
a later run of the same games, seed and search reuses them, also with more ``--decisions`` (it
searches only the new ones) or fewer (the first of them: a learning curve in the number of labels
costs the largest run's searches). Needs torch (the train extra).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from agents.dmc import BUNDLED_DMC_ONE, DMCAgent, play_symmetries, read_dmc_model
from agents.search import ROLLOUTS, TOP
from odin_env.seeding import spawn_seed
from odin_lab.cli import shell_command
from odin_lab.evaluation.distributed import LOCAL, connect
from odin_lab.files import write_atomic, write_model
from odin_lab.training.labels import (
    CacheError,
    candidate_mask,
    candidate_regrets,
    check_teacher,
    game_decisions,
    kind,
    relabel,
)

ROOT = Path(__file__).resolve().parents[1]
LOSSES = ("rank", "mse")
HELD_OUT = 1
"""Sub-stream of ``--seed``: the held-out decisions' games (and their fresh searches)."""
FIT = 2
"""Sub-stream of ``--seed``: the order of the fit's minibatches."""
MOST_EPOCHS = 1000
MOST_WORKERS = 64
MOST = 10_000_000
"""Most decisions (to fit on, to score on, a minibatch)."""


def fit(
    student: tuple[dict, dict], decisions: list, settings: dict, seed: int, after_epoch
) -> dict:
    """Fit a copy of ``student`` (``(info, state)`` of a DMC model) to ``decisions``
    (``(observation, candidates, labels)``) by ``settings`` (``loss``, ``tau``, ``anchor``,
    ``epochs``, ``learning_rate``, ``batch_size``); call ``after_epoch(epoch, state, loss)``
    after each epoch with the student's arrays. Return the fitted arrays. Deterministic for a
    seed (one torch thread)."""
    import torch as th

    from odin_lab.training.qnet import QNetwork

    info, state = student
    th.set_num_threads(1)
    net = QNetwork(info["architecture"]["net"])
    net.load_state_dict({k: th.from_numpy(np.array(v, dtype=np.float32)) for k, v in state.items()})
    start = DMCAgent(state, info)
    sizes = np.array([len(c) for _, c, _ in decisions])
    ends = np.cumsum(sizes)
    obs = th.as_tensor(np.stack([o for o, _, _ in decisions]))
    actions = th.as_tensor(np.concatenate([c for _, c, _ in decisions]).astype(np.int64))
    labels = th.as_tensor(np.concatenate([y for _, _, y in decisions]).astype(np.float32))
    rows = np.repeat(np.arange(len(decisions)), sizes)
    before = th.as_tensor(start.pair_values(obs.numpy(), rows, actions.numpy()))
    optimizer = th.optim.Adam(net.parameters(), lr=settings["learning_rate"])
    order = th.Generator().manual_seed(seed)
    for epoch in range(1, settings["epochs"] + 1):
        losses = []
        for batch in th.randperm(len(decisions), generator=order).split(settings["batch_size"]):
            pairs = th.as_tensor(
                np.concatenate([np.arange(e - n, e) for e, n in zip(ends[batch], sizes[batch])])
            )
            group = th.as_tensor(np.repeat(np.arange(len(batch)), sizes[batch]))
            q = net(obs[batch], actions[pairs], group)
            loss = _loss(q, labels[pairs], before[pairs], group, len(batch), settings)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
        fitted = {k: v.detach().numpy().copy() for k, v in net.state_dict().items()}
        after_epoch(epoch, fitted, float(np.mean(losses)))
    return fitted


def _loss(q, labels, before, group, count: int, settings: dict):
    """The minibatch's loss (the module docstring): ``q``, ``labels`` and ``before`` (the
    start's values) of its candidates, ``group`` each candidate's decision (of ``count``)."""
    import torch as th

    def mean(x):
        return th.zeros(count).index_add_(0, group, x) / th.bincount(group, minlength=count)

    def log_softmax(x):
        top = th.zeros(count).scatter_reduce(0, group, x.detach(), "amax", include_self=False)
        shifted = x - top[group]
        return shifted - th.log(th.zeros(count).index_add_(0, group, th.exp(shifted)))[group]

    if settings["loss"] == "rank":
        target = th.exp(log_softmax(labels / settings["tau"]))
        main = -(target * log_softmax(q / settings["tau"])).sum() / count
    else:
        target = labels - mean(labels)[group] + mean(before)[group]
        main = ((q - target) ** 2).mean()
    return main + settings["anchor"] * ((q - before) ** 2).mean()


def picks(agent: DMCAgent, decisions: list) -> np.ndarray:
    """The student's pick of each decision, an index into its candidates."""
    obs = np.stack([o for o, _, _ in decisions])
    masks = np.stack([candidate_mask(c) for _, c, _ in decisions])
    chosen = agent.act_batch(obs, masks)
    return np.array([int(np.flatnonzero(c == a)[0]) for (_, c, _), a in zip(decisions, chosen)])


def regret_row(
    picked: np.ndarray, lost: list[np.ndarray], kinds: np.ndarray, start: np.ndarray | None = None
) -> tuple[dict[str, float], np.ndarray]:
    """Mean regret (and its standard error) of ``picked`` under ``lost`` (each held-out
    decision's fresh regret of each candidate), overall and by kind of decision, and with
    ``start`` (the regrets of another pick of the same decisions) the paired difference to it;
    and the regret of each decision."""
    regret = np.array([loss[p] for loss, p in zip(lost, picked)])
    out = _mean("regret", regret)
    if start is not None:
        out.update(_mean("minus_start", regret - start))
    for name in np.unique(kinds).tolist():
        out[f"regret_{name.replace(' ', '_')}"] = float(regret[kinds == name].mean())
    return out, regret


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--games",
        nargs="+",
        metavar="SPEC",
        required=True,
        help="the decisions' games: one player a seat (the first's decisions)",
    )
    parser.add_argument("--decisions", type=int, default=20000, help="decisions to fit on")
    parser.add_argument("--held-out", type=int, default=3000, help="decisions to score on")
    parser.add_argument("--playout", default="planner", help="the search's playout policy")
    parser.add_argument("--rollouts", type=int, default=ROLLOUTS, help="playouts a decision")
    parser.add_argument("--top", type=int, default=TOP, help="candidates, by dmc_one (0: all)")
    parser.add_argument("--student", type=Path, default=BUNDLED_DMC_ONE, help="a DMC model file")
    parser.add_argument("--loss", default="rank", help=f"one of {', '.join(LOSSES)}")
    parser.add_argument("--tau", type=float, default=0.5, help="rank's temperature, penalty points")
    parser.add_argument("--anchor", type=float, default=1.0, help="weight of staying at the start")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--learning-rate", type=float, default=3e-4)
    parser.add_argument("--batch-size", type=int, default=128, help="decisions a minibatch")
    parser.add_argument("--seed", type=int, default=933)
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
    parser.add_argument("--save", type=Path, help="write the fitted student here (a model file)")
    parser.add_argument(
        "--labels",
        type=Path,
        help="keep the searches in this folder: a stop loses at most a file of "
        "them, and a later run of the same games and seed reuses them",
    )
    parser.add_argument("--out", type=Path, default=Path("results/teacher_fit"))
    argv = sys.argv[1:] if argv is None else argv
    args = parser.parse_args(argv)
    settings = _check(parser, args)
    try:
        student = read_dmc_model(args.student)
    except (OSError, ValueError) as error:
        parser.error(f"--student {args.student}: {str(error).splitlines()[0]}")
    if play_symmetries(student[0]) != 1:
        parser.error(
            f"--student must be a network read once (symmetries 1, as dmc_one); "
            f"{args.student} reads {play_symmetries(student[0])} labellings"
        )
    if args.ray is not None:
        try:
            connect(args.ray, args.workers)  # before any search is made or written
        except ValueError as error:
            parser.error(str(error))
    search = {"playout": args.playout, "rollouts": args.rollouts, "top": args.top}
    held_seed = spawn_seed(args.seed, HELD_OUT)
    parts = ("train", "held", "fresh")
    cache = {part: args.labels / part if args.labels else None for part in parts}
    try:
        train = game_decisions(
            args.games,
            args.decisions,
            args.seed,
            workers=args.workers,
            cache=cache["train"],
            ray=args.ray,
            **search,
        )
        held = game_decisions(
            args.games,
            args.held_out,
            held_seed,
            workers=args.workers,
            cache=cache["held"],
            ray=args.ray,
            **search,
        )
        fresh = relabel(
            held,
            args.playout,
            args.rollouts,
            held_seed,
            args.workers,
            cache=cache["fresh"],
            ray=args.ray,
        )
    except CacheError as error:  # a cache's unusable file, or one it cannot write
        parser.error(f"--labels: {error}")
    except (ValueError, OSError) as error:  # a player that cannot be built, or plays there
        parser.error(f"--games: {str(error).splitlines()[0]}")
    # each held-out candidate's fresh regret, in the candidates' order
    lost = [candidate_regrets(scores, c)[0] for scores, (_, c, _) in zip(fresh, held, strict=True)]
    kinds = np.array([kind(obs, candidates) for obs, candidates, _ in held])
    chosen = picks(DMCAgent(student[1], student[0]), held)
    start = regret_row(chosen, lost, kinds)[1]
    teacher = regret_row(np.array([int(np.argmax(y)) for _, _, y in held]), lost, kinds, start)[0]
    taught = np.array([int(np.argmax(y)) for _, _, y in train])
    epochs = []

    def score(epoch: int, state: dict, loss: float | None) -> None:
        agent = DMCAgent(state, student[0])
        row = {"epoch": epoch, **({} if loss is None else {"loss": loss})}
        row.update(regret_row(picks(agent, held), lost, kinds, start)[0])
        row["share_as_labels"] = float(np.mean(picks(agent, train) == taught))
        epochs.append(row)
        print(
            f"epoch {epoch:>3}: held-out regret {row['regret']:.4f} ± {row['regret_se']:.4f}, "
            f"{row['minus_start']:+.4f} ± {row['minus_start_se']:.4f} on the start (teacher "
            f"{teacher['regret']:.4f}); picks as its training labels "
            f"{row['share_as_labels']:.1%}",
            flush=True,
        )

    score(0, student[1], None)
    fitted = fit(student, train, settings, spawn_seed(args.seed, FIT), score)
    report = {
        "command": shell_command("research/teacher_fit.py", argv),
        "settings": {
            "games": args.games,
            "decisions": len(train),
            "held_out": len(held),
            "seed": args.seed,
            "student": _shown(args.student),
            **search,
            **settings,
        },
        "teacher": teacher,
        "epochs": epochs,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    write_atomic(args.out / "teacher_fit.json", (json.dumps(report, indent=2) + "\n").encode())
    _plot(report, args.out)
    if args.save:
        write_model(args.save, fitted, {**student[0], "provenance": {"command": report["command"]}})
        print(f"wrote {args.save}")
    print(f"wrote {args.out / 'teacher_fit.json'} and teacher_fit.png")
    return 0


def _mean(key: str, values: np.ndarray) -> dict[str, float]:
    error = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return {key: float(values.mean()), f"{key}_se": float(error)}


def _shown(path: Path) -> str:
    """``path`` as the report shows it: from the repository's root when it lies there."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def _check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> dict:
    """Exit 2 (one line) for a setting out of range; the fit's settings."""
    try:
        check_teacher(args.games, args.playout, args.rollouts, args.top)
    except ValueError as error:
        parser.error(str(error))
    ranges = {"decisions": (1, MOST), "held_out": (2, MOST), "epochs": (1, MOST_EPOCHS),
              "batch_size": (1, MOST)}  # fmt: skip
    for name, (low, high) in ranges.items():
        if not low <= getattr(args, name) <= high:
            parser.error(
                f"--{name.replace('_', '-')} must be {low}-{high:,}; got {getattr(args, name)}"
            )
    if args.loss not in LOSSES:
        parser.error(f"--loss must be one of {', '.join(LOSSES)}; got {args.loss!r}")
    for name in ("tau", "learning_rate"):
        if not (np.isfinite(getattr(args, name)) and getattr(args, name) > 0):
            parser.error(f"--{name.replace('_', '-')} must be > 0; got {getattr(args, name)}")
    if not (np.isfinite(args.anchor) and args.anchor >= 0):
        parser.error(f"--anchor must be >= 0; got {args.anchor}")
    if not 1 <= args.workers <= MOST_WORKERS:
        parser.error(f"--workers must be 1-{MOST_WORKERS}; got {args.workers}")
    if args.seed < 0:
        parser.error(f"--seed must be >= 0; got {args.seed}")
    keys = ("loss", "tau", "anchor", "epochs", "learning_rate", "batch_size")
    return {key: getattr(args, key) for key in keys}


def _plot(report: dict, out: Path) -> None:
    from matplotlib.figure import Figure

    rows = report["epochs"]
    epochs = [row["epoch"] for row in rows]
    fig = Figure(figsize=(7.0, 3.6))
    ax = fig.subplots()
    ax.errorbar(
        epochs,
        [row["regret"] for row in rows],
        yerr=[1.96 * row["regret_se"] for row in rows],
        marker="o",
        label="the student, held out",
    )
    ax.axhline(report["teacher"]["regret"], color="tab:green", ls="--", label="the teacher")
    ax.set_xlabel("epochs of fitting")
    ax.set_ylabel("regret (penalty points a decision)")
    twin = ax.twinx()
    twin.plot(
        epochs,
        [row["share_as_labels"] for row in rows],
        color="tab:red",
        marker="s",
        label="picks as its training labels",
    )
    twin.set_ylabel("share of training decisions")
    ax.set_ylim(bottom=0)  # the teacher's line apart from the share's curve, which starts low
    twin.set_ylim(0.5, 1)
    handles = ax.get_legend_handles_labels()[0] + twin.get_legend_handles_labels()[0]
    ax.legend(handles=handles, fontsize=8, loc="lower right")
    settings = report["settings"]
    ax.set_title(
        f"{settings['student'].split('/')[-1]} fitted on {settings['decisions']:,} "
        f"labels ({settings['loss']})",
        fontsize=10,
    )
    fig.tight_layout()
    temporary = out / "teacher_fit.tmp.png"
    fig.savefig(temporary, dpi=150)
    temporary.replace(out / "teacher_fit.png")


if __name__ == "__main__":
    sys.exit(main())
