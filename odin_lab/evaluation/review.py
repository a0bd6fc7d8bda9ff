"""A game review: every decision of one seat in a recorded game, scored by the lab's search from
that seat's observation.

For a finished (or stopped) game of any records file (a person's game from ``play.py`` or the
web app, a tournament's ``tournament.json``), :func:`review_record` replays the record
(:func:`odin_lab.evaluation.records.iter_steps`) and, at every decision of the chosen seat that
was not forced, rebuilds what the seat saw (``odin_env.observation.observe``) and scores every
legal action with the search (:func:`agents.search.score_candidates`): the seat's mean win
chance after it and its mean penalty points for the hand, over the same sampled layouts of the
cards the seat had not seen. Only the observation is read, never another seat's hidden cards.

The search's best action is the highest mean win chance (ties: the lower penalty, then the
lower action, as :mod:`odin_lab.evaluation.coach` ranks a hint). Per decision: ``value`` (the
win chance of the action played), ``best_value`` (of the best), ``loss`` (their difference,
>= 0), and in points: ``penalty``, ``best_penalty`` and ``points_lost`` (the expected penalty of
the action played minus the best's). ``costliest``: the steps of the (at most
:data:`COSTLIEST`) decisions that lost the most win chance. ``summary``: ``decisions``,
``agreed`` (the share of decisions where the action played was the best), ``points_lost_per_hand``
(the expected points lost, summed, per hand of the game), ``win_lost`` (the win chance lost,
summed), ``hands``, ``hinted``.

A decision's ``step`` is its index in the record's list of moves (``actions``: the decisions that
were not forced); ``frame`` its index among all decisions, forced ones included (the web replay's
frame showing the position before it); ``hinted`` whether the person asked for a hint there (the
records file's ``"hints"``). The budget is a rollout count (:data:`REVIEW_ROLLOUTS` per
decision), and each decision's sampling is seeded from the review's seed and its step: the same
file, seat and seed give the same review on any machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from agents.search import score_candidates
from odin_env.observation import observe
from odin_env.seeding import spawn_seed
from odin_lab.evaluation.coach import hint_json, move_label
from odin_lab.evaluation.records import RecordsFile, Step, iter_steps

REVIEW_ROLLOUTS = 512
"""Playouts per decision of a review unless told otherwise."""
MIN_ROLLOUTS, MAX_ROLLOUTS = 16, 100_000
"""The rollout budgets a review may be given."""
COSTLIEST = 5
"""Decisions listed as the costliest."""


def check_choice(records: RecordsFile, game: object, seat: object, flag: str = "") -> None:
    """``ValueError`` naming the allowed values when ``game`` is not a game index of
    ``records`` or ``seat`` not a seat of its table; ``flag``: the prefix of the names in the
    message (``"--"`` for a command line)."""
    count, n = len(records.games), records.config.players
    if not count:
        raise ValueError("the records file holds no games")
    if isinstance(game, bool) or not isinstance(game, int) or not 0 <= game < count:
        raise ValueError(
            f"{flag}game must be 0-{count - 1} (the file holds {count} "
            f"game{'s' * (count > 1)}); got {game!r:.40}"
        )
    if isinstance(seat, bool) or not isinstance(seat, int) or not 0 <= seat < n:
        raise ValueError(f"{flag}seat must be 0-{n - 1} ({n} players); got {seat!r:.40}")


def check_rollouts(rollouts: object, flag: str = "") -> int:
    """``rollouts`` if it is an integer in ``MIN_ROLLOUTS .. MAX_ROLLOUTS``, else
    ``ValueError`` naming the range."""
    if (
        isinstance(rollouts, bool)
        or not isinstance(rollouts, int)
        or not MIN_ROLLOUTS <= rollouts <= MAX_ROLLOUTS
    ):
        allowed = f"{MIN_ROLLOUTS}-{MAX_ROLLOUTS:,}"
        raise ValueError(f"{flag}rollouts must be an integer {allowed}; got {rollouts!r:.40}")
    return rollouts


def hints_of(records: RecordsFile, game: int) -> set[int]:
    """The steps of game ``game`` at which the person asked for a hint (a person's records file
    of one game keeps them under ``"hints"``; other files have none)."""
    hints = records.extra.get("hints")
    if game != 0 or not isinstance(hints, list):
        return set()
    return {h for h in hints if isinstance(h, int) and not isinstance(h, bool)}


def review_steps(
    steps: Iterable[Step],
    seat: int,
    *,
    rollouts: int = REVIEW_ROLLOUTS,
    seed: int = 0,
    hinted: Iterable[int] = (),
    progress: Callable[[int], None] | None = None,
) -> dict:
    """The review of ``seat`` over a replayed game's steps (``iter_steps``' output): the
    ``decisions``, ``costliest`` and ``summary`` of the module docstring. ``progress(step)`` is
    called after each decision scored. Reads each step's state only through ``seat``'s
    observation and legal actions."""
    hinted = set(hinted)
    decisions, step_index, hands, last = [], -1, 1, None
    for frame, step in enumerate(steps):
        last = step
        if step.action < 0:
            break
        if step.forced:
            continue
        step_index += 1
        if step.seat != seat:
            continue
        game = step.game
        scores = score_candidates(
            observe(game, seat),
            game.legal_mask(),
            rollouts=rollouts,
            seed=spawn_seed(seed, step_index),
        )
        best = hint_json(scores)["best"]
        played, top = scores.of(step.action), scores.of(best)
        decisions.append(
            {
                "step": step_index,
                "frame": frame,
                "hand": game.hand_number,
                "action": step.action,
                "label": move_label(step.action)[1],
                "best_action": best,
                "best_label": move_label(best)[1],
                "value": round(float(scores.win[played]), 4),
                "best_value": round(float(scores.win[top]), 4),
                "loss": round(float(scores.win[top] - scores.win[played]), 4),
                "penalty": round(float(scores.penalty[played]), 3),
                "best_penalty": round(float(scores.penalty[top]), 3),
                "points_lost": round(float(scores.penalty[played] - scores.penalty[top]), 3),
                "hinted": step_index in hinted,
                "worlds": scores.worlds,
            }
        )
        if progress is not None:
            progress(step_index)
    if last is not None:
        final = last.game
        # Every hand the game reached, the one a stopped game stopped in too.
        hands = max(1, len(final.history) + (0 if final.is_over else 1))
    return {
        "decisions": decisions,
        "costliest": costliest(decisions),
        "summary": summary(decisions, hands),
    }


def costliest(decisions: Sequence[dict], most: int = COSTLIEST) -> list[int]:
    """The steps of the decisions that lost win chance, the largest loss first (ties: the more
    points lost, then the earlier step), at most ``most``."""
    lost = [d for d in decisions if d["loss"] > 0]
    lost.sort(key=lambda d: (-d["loss"], -d["points_lost"], d["step"]))
    return [d["step"] for d in lost[:most]]


def summary(decisions: Sequence[dict], hands: int) -> dict:
    """The review's totals (see the module docstring); ``hands``: the hands of the game."""
    count = len(decisions)
    agreed = sum(d["action"] == d["best_action"] for d in decisions)
    return {
        "decisions": count,
        "agreed": round(agreed / count, 4) if count else 0.0,
        "points_lost_per_hand": round(sum(d["points_lost"] for d in decisions) / hands, 3),
        "win_lost": round(sum(d["loss"] for d in decisions), 4),
        "hands": hands,
        "hinted": sum(d["hinted"] for d in decisions),
    }


def review_record(
    records: RecordsFile,
    game: int,
    seat: int,
    *,
    rollouts: int = REVIEW_ROLLOUTS,
    seed: int = 0,
    progress: Callable[[int], None] | None = None,
) -> dict:
    """The review of ``seat`` in game ``game`` of a loaded records file: ``game``, ``seat``,
    ``agent`` (the seat's agent spec), ``players``, ``rollouts``, ``seed``, then
    :func:`review_steps`' keys. ``ValueError`` with one line for a game or seat out of range, a
    bad budget, or a record that does not replay."""
    check_choice(records, game, seat)
    check_rollouts(rollouts)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed!r:.40}")
    record = records.games[game]
    head = {
        "game": game,
        "seat": seat,
        "agent": records.specs[record.agents[seat]],
        "players": records.config.players,
        "rollouts": rollouts,
        "seed": seed,
    }
    body = review_steps(
        iter_steps(record, records.config),
        seat,
        rollouts=rollouts,
        seed=seed,
        hinted=hints_of(records, game),
        progress=progress,
    )
    return {**head, **body}


def review_path(source: Path, game: int, seat: int) -> Path:
    """Where a review is written: beside the records file (``tournament.json`` for a folder),
    named after it, the game and the seat: ``game-x.review-g0-s1.json``."""
    source = Path(source)
    if source.is_dir():
        source = source / "tournament.json"
    return source.with_name(f"{source.stem}.review-g{game}-s{seat}.json")


def review_text(review: dict, source: str = "") -> list[str]:
    """The review as lines for a terminal: a heading, one line per decision (the costliest
    marked ``!``), the costliest decisions and the summary."""
    where = f" of {source}" if source else ""
    lines = [
        f"Review of game {review['game']}{where}, seat {review['seat']} ({review['agent']}): "
        f"{review['rollouts']} playouts per decision, seed {review['seed']}",
        f"{'step':>5} {'hand':>4}  {'played':<16} {'search':<16} {'win':>5} {'best':>5} "
        f"{'loss':>5} {'points':>6}",
    ]
    worst = set(review["costliest"])
    by_step = {d["step"]: d for d in review["decisions"]}
    for d in review["decisions"]:
        mark = "!" if d["step"] in worst else ("h" if d["hinted"] else " ")
        same = "=" if d["action"] == d["best_action"] else d["best_label"]
        lines.append(
            f"{d['step']:>5} {d['hand']:>4} {mark}{d['label']:<16} {same:<16} "
            f"{d['value']:>5.0%} {d['best_value']:>5.0%} {d['loss']:>5.0%} "
            f"{d['points_lost']:>+6.1f}"
        )
    if worst:
        lines.append("Costliest:")
        for step in review["costliest"]:
            d = by_step[step]
            lines.append(
                f"  step {step} (hand {d['hand']}): played {d['label']}, the search plays "
                f"{d['best_label']}: {d['loss']:.0%} win chance lost, "
                f"{d['points_lost']:+.1f} points"
            )
    s = review["summary"]
    lines.append(
        f"Summary: {s['decisions']} decisions, {s['agreed']:.0%} agreed with the search, "
        f"{s['points_lost_per_hand']:.2f} points lost per hand over {s['hands']} "
        f"hand{'s' * (s['hands'] != 1)}"
        + (f"; a hint asked at {s['hinted']}" if s["hinted"] else "")
    )
    return lines


__all__ = [
    "COSTLIEST", "MAX_ROLLOUTS", "MIN_ROLLOUTS", "REVIEW_ROLLOUTS", "check_choice",
    "check_rollouts", "costliest", "hints_of", "review_path", "review_record", "review_steps",
    "review_text", "summary",
]  # fmt: skip
