"""``evaluate.py``'s studies: ``tournament``, ``compare``, ``seating``, ``thresholds``, ``goat``,
``leaderboard`` and ``showcase`` (each a study of :mod:`odin_lab.evaluation`).

Every study runs the same way (:func:`_run`): its check before any game (the flags, the game,
the agents built, each once for the whole command: :func:`odin_lab.evaluation.players.built_once`),
then Ray when asked, then the study itself, its table printed and its folder written; Ctrl-C
keeps the finished work and says what it kept (exit 130).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from pathlib import Path

from odin_env.rules import Config
from odin_lab import cli
from odin_lab.commands.common import Subcommand, check_agent, check_counts, config_of
from odin_lab.commands.study_flags import (
    compare_flags,
    goat_flags,
    leaderboard_flags,
    seating_flags,
    showcase_flags,
    thresholds_flags,
    tournament_flags,
)
from odin_lab.evaluation.failures import FAILURE_FILE

# -- checks, before any game ---------------------------------------------------------------------


def _check_common(args: argparse.Namespace) -> None:
    from odin_lab.evaluation.limits import MAX_GAMES, MAX_WORKERS

    if not 1 <= getattr(args, "games", 1) <= MAX_GAMES:
        raise ValueError(f"--games must be 1-{MAX_GAMES:,} (the lab's limit); got {args.games}")
    if args.workers is not None and not 1 <= args.workers <= MAX_WORKERS:
        raise ValueError(f"--workers must be 1-{MAX_WORKERS} (the lab's limit); got {args.workers}")
    if args.ray is not None:
        from odin_lab.evaluation.distributed import require_ray

        require_ray()
    if args.seed < 0:
        raise ValueError(f"--seed must be an integer >= 0; got {args.seed}")
    if hasattr(args, "decision_limit"):
        from odin_lab.evaluation.failures import set_decision_limit

        set_decision_limit(args.decision_limit)
    from odin_lab.evaluation.results import check_writable

    check_writable(args.out)


def _build(specs: Sequence[str], config: Config, engine: str = "auto") -> None:
    """Build each agent of ``specs`` as the study's tournaments will seat it (batched forms when
    ``engine`` picks the batched engine for them all), kept for them; ``ValueError`` naming the
    agent (or ``--engine batched`` for agents without a batched form)."""
    from agents.registry import has_batch_form
    from odin_lab.evaluation.players import seat_agents, use_batched

    distinct = list(dict.fromkeys(specs))
    batched = use_batched(engine, distinct, [has_batch_form(s) for s in distinct], "--engine")
    for spec in distinct:
        check_agent(spec, config, lambda s: seat_agents([s], batched)[0])


def _check_seats(args: argparse.Namespace) -> Config:
    """``tournament``, ``thresholds`` and ``compare``: one spec per seat (compare: A or B in
    the first)."""
    compared = args.command == "compare"
    specs = [*args.agents, *args.against] if compared else args.agents
    config = check_counts(args, specs[1:] if compared else specs)
    _build(specs, config, getattr(args, "engine", "auto"))  # thresholds: auto
    if args.command == "thresholds":
        for t in args.thresholds:
            try:
                replace(config, threshold=t)  # Config's own range, before any game
            except ValueError as e:
                raise ValueError(f"--thresholds: {e}") from None
    return config


def _check_leaderboard(args: argparse.Namespace) -> Config:
    from odin_lab.evaluation.leaderboard import check

    default = min(Config().players, len(args.agents))  # Config's 4, or one per agent
    players = args.players if args.players is not None else default
    config = config_of(args, players)
    check(args.agents, players, args.tables)
    _build(args.agents, config)
    return config


def _check_goat(args: argparse.Namespace) -> Config:
    for n in args.players:
        config_of(args, n)
    _build([args.agent], replace(config_of(args, args.players[0]), goat=True))
    return config_of(args, args.players[0])


def _check_seating(args: argparse.Namespace) -> Config:
    for n in args.players:
        for rule in args.first_player:
            config_of(args, n, rule)
    _build([args.agent], config_of(args, args.players[0]))
    return config_of(args, args.players[0])


# -- the studies ---------------------------------------------------------------------------------


def _tournament(args: argparse.Namespace, config: Config, common: dict) -> str:
    from odin_lab.evaluation import studies

    return studies.tournament(
        args.agents,
        config,
        args.games,
        args.seed,
        args.out,
        args.workers,
        engine=args.engine,
        resume=args.resume,
        **common,
    )[1]


def _compare(args: argparse.Namespace, config: Config, common: dict) -> str:
    from odin_lab.evaluation.compare import compare

    return compare(
        args.agents,
        args.against,
        config,
        args.games,
        args.seed,
        args.out,
        args.workers,
        resume=args.resume,
        engine=args.engine,
        **common,
    )[1]


def _seating(args: argparse.Namespace, config: Config, common: dict) -> str:
    from odin_lab.evaluation import studies

    return studies.seating(
        args.agent,
        args.players,
        args.first_player,
        args.games,
        args.seed,
        args.out,
        config,
        args.workers,
        resume=args.resume,
        **common,
    )[1]


def _thresholds(args: argparse.Namespace, config: Config, common: dict) -> str:
    from odin_lab.evaluation import studies

    return studies.thresholds(
        args.agents,
        args.thresholds,
        args.games,
        args.seed,
        args.out,
        config,
        args.workers,
        resume=args.resume,
        **common,
    )[1]


def _goat(args: argparse.Namespace, config: Config, common: dict) -> str:
    from odin_lab.evaluation.goat_study import goat_study

    return goat_study(
        args.agent,
        args.players,
        args.games,
        args.seed,
        args.out,
        config,
        args.workers,
        resume=args.resume,
        **common,
    )[1]


def _leaderboard(args: argparse.Namespace, config: Config, common: dict) -> str:
    from odin_lab.evaluation.leaderboard import leaderboard

    return leaderboard(
        args.agents,
        config,
        args.games,
        args.seed,
        args.out,
        args.workers,
        most=args.tables,
        resume=args.resume,
        **common,
    )[1]


def _showcase(args: argparse.Namespace, config: Config | None, common: dict) -> str:
    from odin_lab.evaluation import showcase

    return showcase.showcase(args.out, args.workers, args.games, seed=args.seed, **common)


def _played(args: argparse.Namespace) -> list[str]:
    """The agent specs a study plays (for its provenance)."""
    if args.command == "showcase":  # the agents it picks itself
        from odin_lab.evaluation import showcase

        return list(showcase.SHOWCASE_AGENTS)
    specs = getattr(args, "agents", None) or [getattr(args, "agent", "")]
    return [*specs, *getattr(args, "against", [])]  # compare's other seats


# -- running one ---------------------------------------------------------------------------------


def _run(check: Callable, play: Callable, args: argparse.Namespace, prog: str) -> int:
    """Check, then play and write a study; return the exit code (0 done, 2 bad input, 130
    interrupted, 1 a worker died)."""
    from odin_lab.evaluation.players import built_once

    with built_once():  # the agents built by the check are the ones the games seat
        try:
            _check_common(args)
            config = check(args)
        except ValueError as e:
            return cli.fail(prog, e)
        if args.workers is None:  # a local Ray takes every CPU unless told otherwise
            args.workers = (os.cpu_count() or 1) if args.ray is not None else args.default_workers
        if args.ray is not None:
            from odin_lab.evaluation.distributed import connect

            try:
                connect(args.ray, args.workers)  # before anything is played or written
            except ValueError as e:
                return cli.fail(prog, e)
        return _play(play, args, prog, config)


def _play(play: Callable, args: argparse.Namespace, prog: str, config: Config | None) -> int:
    from odin_lab.evaluation import results
    from odin_lab.evaluation.provenance import provenance

    common = {"progress": not args.no_progress, "ray": args.ray}
    common["provenance"] = provenance(_played(args))
    with results.stop_once():  # a second Ctrl-C waits for the finished work to be written
        try:
            text = play(args, config, common)
        except KeyboardInterrupt as stop:
            return _interrupted(prog, args.out, stop)
        except results.NotWrittenError as e:
            cli.fail(prog, e)
            return 130 if results.interrupted_by(e) else 2
        except ValueError as e:
            return cli.fail(prog, e)
        print(text)
        print(f"written under {args.out}/")
        (Path(args.out) / FAILURE_FILE).unlink(missing_ok=True)  # an earlier failure's, now played
    return 0


def _interrupted(prog: str, out: Path, stop: KeyboardInterrupt) -> int:
    """After Ctrl-C: one line saying what was kept in ``out`` and how to go on; exit code 130."""
    from odin_lab.evaluation.leaderboard import LeaderboardInterrupted
    from odin_lab.evaluation.results import Interrupted, committed
    from odin_lab.evaluation.tournament import PlayerFailed, TournamentInterrupted
    from odin_lab.evaluation.workers import WorkerDiedError

    unchanged = f"nothing written (an earlier result in {out}/ is unchanged)"
    if isinstance(stop, TournamentInterrupted) and stop.deals_done:
        said = (
            f"the {stop.deals_done} deals finished are in {out}/ (marked partial); "
            "add --resume to play the rest"
        )
    elif isinstance(stop, LeaderboardInterrupted) and stop.written:
        said = (
            f"the {stop.tables_done} tables finished (of {stop.tables_planned}) are in {out}/ "
            "(marked partial); add --resume to play the rest"
        )
    elif isinstance(stop, Interrupted) and stop.kept:
        said = f"{stop.kept} are in {out}/ (marked partial); add --resume to play the rest"
    elif not isinstance(stop, (TournamentInterrupted, LeaderboardInterrupted, Interrupted)) and (
        Path(out) in committed
    ):
        said = f"after the whole result was written to {out}/"
    else:
        before = "before a deal finished; " if isinstance(stop, TournamentInterrupted) else ""
        said = f"{before}{unchanged}"
    failure = _cause(stop, PlayerFailed)
    if failure is not None:  # the agent's fault: bad input, exit 2, its traceback kept
        said = said.replace("nothing written", "no result written")  # but the traceback
        print(
            f"{prog}: error: {failure.failure}: {said}; {_failure_file(out, failure)}",
            file=sys.stderr,
        )
        return 2
    died = _cause(stop, WorkerDiedError)
    if died is not None:  # not a Ctrl-C: the work kept all the same, but the command failed
        print(f"\n{prog}: error: {died}: {said}", file=sys.stderr)
        return 1
    print(f"\n{prog}: interrupted: {said}", file=sys.stderr)
    return 130


def _cause(stop: BaseException, kind: type) -> BaseException | None:
    """The exception of ``kind`` behind ``stop`` (itself, or one it was raised from or while
    handling): what stopped the work when it was not Ctrl-C (a worker's death, an agent's
    failure)."""
    seen: BaseException | None = stop
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def _failure_file(out: Path, failure) -> str:
    """Write a failed agent's traceback to ``out/failure.txt``; say where (or why not)."""
    from odin_lab.files import write_atomic

    path = Path(out) / FAILURE_FILE
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomic(path, failure.failure.details.encode())
    except OSError as e:
        return f"its traceback could not be written to {path} ({e.strerror or e})"
    return f"its traceback is in {path}"


def _subcommand(
    summary: str, flags: Callable, check: Callable, play: Callable, specs: bool = True
) -> Subcommand:
    """The subcommand of a study: ``check(args)`` returns its game (``ValueError`` naming a bad
    flag, before any game); ``play(args, config, common)`` plays it and returns its printed
    table (``common``: ``progress``, ``ray`` and ``provenance``)."""
    return Subcommand(summary, flags, partial(_run, check, play), specs)


STUDIES: dict[str, Subcommand] = {
    "tournament": _subcommand(
        "agents play seeded deals from every seat", tournament_flags, _check_seats, _tournament
    ),
    "compare": _subcommand(
        "two agents in one seat on the same games: their paired difference",
        compare_flags,
        _check_seats,
        _compare,
    ),
    "seating": _subcommand(
        "win rate by seat, the same agent in every seat", seating_flags, _check_seating, _seating
    ),
    "thresholds": _subcommand(
        "how the threshold changes the first agent's results",
        thresholds_flags,
        _check_seats,
        _thresholds,
    ),
    "goat": _subcommand(
        "what the Grumpy Goat changes (RULES G1-G5): the same agent in every seat, without and "
        "with it, at each player count",
        goat_flags,
        _check_goat,
        _goat,
    ),
    "leaderboard": _subcommand(
        "rate many agents over every table of --players",
        leaderboard_flags,
        _check_leaderboard,
        _leaderboard,
    ),
    "showcase": _subcommand(
        "the tournament and seat table that `make run` shows",
        showcase_flags,
        lambda args: None,
        _showcase,
        specs=False,
    ),
}
"""The studies of ``evaluate.py``, by subcommand, in the order of its help."""


__all__ = ["STUDIES"]
