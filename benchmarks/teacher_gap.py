"""How far a player is from the search that teaches expert iteration, decision by decision.

``train.py --algo exit --replay N`` keeps the search's labels of its latest decisions in its
checkpoint: each decision's observation, its searched candidates and their labels. This
benchmark takes the last ``--decisions`` of them that have two candidates or more and searches
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
``by_players``, and each kind of decision, ``by_kind``: see :func:`kind`), its share of the
decisions where it chose as ``labels`` did, and, for a player, the paired difference of its
regret to that of ``labels`` (how much of the teacher's play it has not learnt, in penalty
points a decision) and to that of the first player (a student against its start, say).

    python benchmarks/teacher_gap.py --run runs/exit_s512 --decisions 3000 --seed 20261435 \\
        --players dmc:agents/models/dmc_one.safetensors dmc --workers 2

Without a run (whose replay lives only as long as its folder), ``--games SPEC ...`` draws the
decisions from seeded games of those players, one per seat (:func:`game_decisions`): the first
spec's decisions with two legal actions or more, each cut to the ``--top`` legal actions the
bundled one-pass network ``dmc_one`` values most (the shortlist of ``search:N:net:one``), and
labelled by a search of its own (``--playout``, ``--rollouts``; decision ``k`` seeded
``spawn_seed(seed, k, 1)``), independent of the fresh one. The teacher is then
``search:N:net:one`` itself:

    python benchmarks/teacher_gap.py --games dmc planner planner planner --decisions 3000 \\
        --seed 20261439 --players dmc:agents/models/dmc_one.safetensors dmc --workers 2

The same seed gives the same figures for any ``--workers``.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

from agents.base import legal_actions
from agents.dmc import BUNDLED_DMC_ONE, DMCAgent
from agents.hand import see
from agents.heuristics import HEURISTICS
from agents.registry import SEARCH_MAX_ROLLOUTS, check_spec, make
from agents.search import ROLLOUTS, TOP, Scores, top_actions
from odin_env.observation import views
from odin_env.rules import Config
from odin_env.seeding import spawn_seed
from odin_env.spec import NUM_ACTIONS, PASS
from odin_lab.cli import shell_command
from odin_lab.evaluation.tournament import play_deals
from odin_lab.evaluation.workers import Workers
from odin_lab.files import write_atomic
from odin_lab.training import TrainingError, read_config
from odin_lab.training.checkpoints import CHECKPOINT, load_checkpoint
from odin_lab.training.exit import LEARNER_PLAYOUT, kept_labels, search_rows

PART = 25
"""Decisions a worker searches at a time."""
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


class _Recorder:
    """A player that keeps every observation and mask it is asked to act on with two legal
    actions or more, until it holds ``most``."""

    def __init__(self, agent, most: int):
        self.agent, self.name, self.most, self.seen = agent, agent.name, most, []

    def reset(self, seat: int, seed: int | None = None) -> None:
        self.agent.reset(seat, seed)

    def act(self, observation, mask) -> int:
        if np.count_nonzero(mask) > 1 and len(self.seen) < self.most:
            self.seen.append((observation.copy(), mask.copy()))
        return self.agent.act(observation, mask)


DEALS_AT_ONCE = 25
"""Deals played between checks of whether enough decisions are drawn."""


def game_decisions(
    specs: list[str],
    most: int,
    seed: int,
    top: int,
    playout: str,
    rollouts: int,
    workers: int,
    cache: Path | None = None,
) -> list[tuple[np.ndarray, ...]]:
    """``most`` decisions of the first of ``specs`` (one per seat, rotated seats) in the games
    of seed ``seed`` with two legal actions or more, in the order played: ``(observation,
    candidates, labels)``. The candidates: the ``top`` legal actions the bundled ``dmc_one``
    values most (ties: the lower action; ``0``: every legal one); the labels: minus each
    candidate's mean penalty for the hand, by a search (``playout``, ``rollouts``) of decision
    ``k`` seeded ``spawn_seed(seed, k, 1)``, kept in ``cache`` (:func:`relabel`)."""
    agents = [make(spec) for spec in specs]
    recorder = _Recorder(agents[0], most)
    table, config, start = [recorder, *agents[1:]], Config(players=len(specs)), 0
    while len(recorder.seen) < most:
        play_deals(table, config, range(start, start + DEALS_AT_ONCE), seed=seed, engine="single")
        start += DEALS_AT_ONCE
    shortlist = DMCAgent.load(BUNDLED_DMC_ONE) if top else None
    drawn = []
    for obs, mask in recorder.seen:
        if shortlist is not None and np.count_nonzero(mask) > top:
            mask = top_actions(shortlist.values(obs[None], mask[None])[0], mask, top)
        drawn.append((obs, legal_actions(mask), None))
    teacher = relabel(drawn, playout, rollouts, seed, workers, stream=(1,), cache=cache)
    # A search scores the legal actions of its mask in ascending order: the candidates' order.
    return [
        (obs, candidates, -scores.penalty)
        for (obs, candidates, _), scores in zip(drawn, teacher, strict=True)
    ]


def candidate_mask(candidates: np.ndarray) -> np.ndarray:
    """The action mask whose legal actions are ``candidates``: what the search and the players
    are given."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    mask[candidates] = 1
    return mask


def relabel(
    decisions: list[tuple[np.ndarray, ...]],
    playout: str,
    rollouts: int,
    seed: int,
    workers: int,
    stream: tuple[int, ...] = (),
    cache: Path | None = None,
) -> list:
    """The search's fresh :class:`agents.search.Scores` of each decision's candidates, decision
    ``k`` seeded ``spawn_seed(seed, k, *stream)``, on ``workers`` processes (the same for any
    count).

    With ``cache`` (a folder) the searches are kept there in files of :data:`CACHE_PART`
    decisions, each written whole as it is done: a stopped call loses at most one file's
    searches, and a later call (of as many decisions, or more, or fewer) searches only what the
    folder lacks. Every kept search carries a key of its decision (observation, candidates,
    playout, rollouts and seed); a file whose keys are not those of the decisions asked (another
    table, seed or search) is refused, :class:`CacheError` (one line), and left as it is."""
    rows = []
    for k, (obs, candidates, _) in enumerate(decisions):
        rows.append((obs, candidate_mask(candidates), spawn_seed(seed, k, *stream)))
    parts = [(first, rows[first : first + CACHE_PART]) for first in range(0, len(rows), CACHE_PART)]
    parts = parts if cache else [(0, rows)]
    found = []
    pool = Workers(workers) if workers > 1 else contextlib.nullcontext()
    with tqdm(total=len(rows), desc="searches", unit="decision") as bar, pool:
        for first, part in parts:
            path = cache / f"part-{first // CACHE_PART:06d}.npz" if cache else None
            keys = _keys(part, playout, rollouts) if path else None
            kept = _read_part(path, keys) if path else []
            bar.update(len(kept))
            todo = part[len(kept) :]
            tasks = [(playout, rollouts, todo[i : i + PART]) for i in range(0, len(todo), PART)]
            fresh = []
            for scores in pool.imap(search_rows, tasks) if workers > 1 else map(search_rows, tasks):
                fresh += scores
                bar.update(len(scores))
            if path and fresh:
                _write_part(path, keys[: len(kept) + len(fresh)], kept + fresh)
            found += kept + fresh
    return found


class CacheError(ValueError):
    """A file of a searches cache that cannot be used (one line)."""


CACHE_PART = 2_000
"""Decisions a file of a :func:`relabel` cache holds: the most searches a stop can lose."""
MOST_PART_BYTES = 64 << 20
"""The largest cache file read (one of :data:`CACHE_PART` decisions is a few hundred KB)."""


def _keys(rows: list, playout: str, rollouts: int) -> np.ndarray:
    """A 64-bit key of each ``(observation, mask, seed)`` row's search."""
    keys = np.empty(len(rows), dtype=np.uint64)
    for i, (obs, mask, seed) in enumerate(rows):
        digest = hashlib.blake2b(digest_size=8)
        digest.update(np.ascontiguousarray(obs, dtype=np.float32).tobytes())
        digest.update(np.flatnonzero(mask).astype(np.int64).tobytes())
        digest.update(f"{playout}|{rollouts}|{seed}".encode())
        keys[i] = int.from_bytes(digest.digest(), "little")
    return keys


def _read_part(path: Path, keys: np.ndarray) -> list:
    """The kept searches of ``path`` for the decisions of ``keys`` (a prefix of them: those it
    holds); ``[]`` when there is no such file; :class:`CacheError` for a file that is not a
    part of a cache or holds other decisions' searches."""
    if not path.exists():
        return []
    try:
        if path.stat().st_size > MOST_PART_BYTES:
            raise ValueError(f"larger than {MOST_PART_BYTES >> 20} MB")
        with np.load(path, allow_pickle=False) as file:
            arrays = {name: file[name] for name in ("keys", "sizes", "actions", "win", "penalty",
                                                    "worlds")}  # fmt: skip
        sizes = arrays["sizes"].astype(np.int64)
        if not (arrays["keys"].shape == sizes.shape == arrays["worlds"].shape
                and len(sizes) <= CACHE_PART and (sizes >= 0).all()
                and arrays["actions"].shape == arrays["win"].shape == arrays["penalty"].shape
                == (int(sizes.sum()),)):  # fmt: skip
            raise ValueError("its arrays do not fit together")
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        raise CacheError(f"{path} is not a part of a searches cache: "
                         f"{str(error).splitlines()[0]}") from None  # fmt: skip
    held = min(len(keys), len(sizes))
    if not np.array_equal(arrays["keys"][:held], keys[:held]):
        raise CacheError(f"{path} holds the searches of other decisions (another table, seed, "
                         f"playout or rollouts): give this run a folder of its own")  # fmt: skip
    ends = np.cumsum(sizes[:held])
    return [
        Scores(arrays["actions"][end - n : end], arrays["win"][end - n : end],
               arrays["penalty"][end - n : end], int(arrays["worlds"][i]))
        for i, (end, n) in enumerate(zip(ends, sizes[:held], strict=True))
    ]  # fmt: skip


def _write_part(path: Path, keys: np.ndarray, scores: list) -> None:
    """Write the searches ``scores`` of the decisions of ``keys`` whole to ``path``, or raise
    :class:`CacheError` (one line)."""
    buffer = io.BytesIO()
    np.savez(buffer, keys=keys, sizes=np.array([len(s.actions) for s in scores]),
             actions=np.concatenate([s.actions for s in scores]),
             win=np.concatenate([s.win for s in scores]),
             penalty=np.concatenate([s.penalty for s in scores]),
             worlds=np.array([s.worlds for s in scores]))  # fmt: skip
    try:
        write_atomic(path, buffer.getvalue())
    except OSError as error:  # a full disk, say: the files written before stay whole
        raise CacheError(f"cannot write {path}: {str(error).splitlines()[0]}") from None


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


def kind(observation: np.ndarray, candidates: np.ndarray) -> str:
    """What a decision is: ``lead`` (an empty table), ``follow or pass`` (a combo to beat, pass
    among the candidates), ``follow`` (pass not among them) or ``take`` (the card to take after
    beating a combo)."""
    seen = see(observation, candidate_mask(candidates))
    if seen.take:
        return "take"
    if not seen.table:
        return "lead"
    return "follow or pass" if PASS in candidates else "follow"


def candidate_regrets(scores, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``candidates``' regret under the search's ``scores`` of them, in their order: its
    mean penalty less the best one's, and the best win chance less its own."""
    order = np.searchsorted(scores.actions, candidates)  # the scores in the candidates' order
    penalty, win = scores.penalty[order], scores.win[order]
    return penalty - penalty.min(), win.max() - win


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
                {"chooser": name, key: group, "decisions": int((of == group).sum()),
                 **_mean("regret", values[of == group])}
                for group in np.unique(of).tolist()
            ]  # fmt: skip
    return rows, grouped


def _mean(key: str, values: np.ndarray) -> dict[str, float]:
    error = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else float("nan")
    return {key: float(values.mean()), f"{key}_se": float(error)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--run", type=Path, help="an expert-iteration run folder")
    source.add_argument(
        "--games", nargs="+", metavar="SPEC",
        help="draw the decisions from games of these players, one per seat (the first's)",
    )  # fmt: skip
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
        _check_teacher(parser, args.games, search)
    players = {}
    for spec in args.players:
        try:
            check_spec(spec)
            players[spec] = make(spec)
        except (ValueError, OSError) as error:
            parser.error(f"--players {spec}: {str(error).splitlines()[0]}")
    if args.games:
        try:
            decisions = game_decisions(args.games, args.decisions, args.seed,
                                       workers=args.workers, **search)  # fmt: skip
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
    fresh = relabel(decisions, search["playout"], search["rollouts"], args.seed, args.workers)
    groups = {
        "players": np.array([views(obs)["players"].argmax() + 2 for obs, _, _ in decisions]),
        "kind": np.array([kind(obs, candidates) for obs, candidates, _ in decisions]),
    }
    rows, grouped = regrets(fresh, [c for _, c, _ in decisions], picks, groups)
    again = f"{search['rollouts']} {search['playout']} playouts, seed {args.seed}"
    print(f"{len(decisions):,} decisions of {_source(args)}, searched again ({again}); regret in "
          "penalty points a decision")  # fmt: skip
    print(f"{'chooser':<44} {'regret':>16} {'minus labels':>16} {'minus first':>16} {'agrees':>7}")
    for row in rows:
        paired = [f"{row[key]:+.4f} ± {row[key + '_se']:.4f}" if key in row else ""
                  for key in ("minus_labels", "minus_first")]  # fmt: skip
        agrees = f"{row['share_agreeing']:.1%}" if "share_agreeing" in row else ""
        print(f"{row['chooser']:<44} {row['regret']:.4f} ± {row['regret_se']:.4f} "
              f"{paired[0]:>16} {paired[1]:>16} {agrees:>7}")  # fmt: skip
    report = {
        "command": shell_command("benchmarks/teacher_gap.py", argv),
        "settings": {**({"games": args.games} if args.games else {"run": str(args.run)}),
                     "decisions": len(decisions), "seed": args.seed, **search},
        "rows": rows,
        **grouped,
    }  # fmt: skip
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


def _check_teacher(parser: argparse.ArgumentParser, games: list[str], search: dict) -> None:
    """Exit 2 (one line) for a table or a teacher ``--games`` cannot have."""
    if not 2 <= len(games) <= 6:
        parser.error(f"--games names one player a seat, 2-6 of them; got {len(games)}")
    for spec in games:
        try:
            check_spec(spec)
        except ValueError as error:
            parser.error(f"--games {spec}: {str(error).splitlines()[0]}")
    if search["playout"] not in HEURISTICS:
        parser.error(f"--playout must be one of {', '.join(HEURISTICS)}; got {search['playout']!r}")
    if not 1 <= search["rollouts"] <= SEARCH_MAX_ROLLOUTS:
        parser.error(f"--rollouts must be 1-{SEARCH_MAX_ROLLOUTS:,}; got {search['rollouts']}")
    if search["top"] < 0:
        parser.error(f"--top must be >= 0 (0: every legal action); got {search['top']}")


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
