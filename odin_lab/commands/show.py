"""``evaluate.py replay``, ``watch`` and ``review``: one game told move by move, or reviewed.

    python evaluate.py replay results/NAME --game 12 [--seat 2]
    python evaluate.py watch --agents ppo planner greedy random --seed 0 [--out FILE]
    python evaluate.py review results/play/seed-7.json [--game 0] [--seat 0] [--rollouts 512]

``review`` scores every decision of one seat with the search, from that seat's observation
(:mod:`odin_lab.evaluation.review`), prints the decisions, the costliest and a summary, and
writes the review as JSON beside the records file (``FILE.review-gG-sS.json``, written whole or
not at all). The same file, seat, rollouts and seed give the same review. ``--seat`` may be left
out for a person's game (the seat of ``human``). Bad input exits 2 with one line naming the
allowed values; Ctrl-C exits 130 with nothing written.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from odin_env.rules import Config
from odin_lab import cli
from odin_lab.commands.common import Subcommand, check_agent, check_counts, cli_path


def _replay_flags(r: argparse.ArgumentParser) -> None:
    r.add_argument(
        "results",
        type=Path,
        help="a records file (tournament.json, a play.py or watch record; docs/records.md) "
        "or a tournament's folder",
    )
    r.add_argument("--game", type=int, default=0, help="which game of the file, from 0")
    _told_flags(r)


def _watch_flags(v: argparse.ArgumentParser) -> None:
    v.add_argument("--agents", nargs="+", required=True, help="one agent spec per seat (see below)")
    v.add_argument("--players", type=int, help="seats (2-6); default: one per agent")
    cli.add_fields(v, Config, skip={"players", "seed"})
    v.add_argument("--seed", type=int, default=0, help="seed of the deal (>= 0)")
    v.add_argument("--out", type=cli_path, help="also save the game as a records file")
    _told_flags(v)


def _told_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--seat", type=int, help="tell it as this seat sees it (default: all open)")
    p.add_argument("--no-colour", action="store_true", help="no ANSI colours")


def show(args: argparse.Namespace, prog: str) -> int:
    """``replay`` and ``watch``: print the game; exit code 0, or 2 with one line."""
    from odin_lab.evaluation.narrate import Style, tell_record, use_colour
    from odin_lab.evaluation.players import built_once, seat_agents
    from odin_lab.evaluation.records import load_records, records_document, records_text
    from odin_lab.evaluation.results import NotWrittenError, check_writable, write_file

    try:
        if args.command == "replay":
            records, source = load_records(args.results), str(args.results)
        else:
            config = check_counts(args, args.agents)
            if args.seed < 0:
                raise ValueError(f"--seed must be an integer >= 0; got {args.seed}")
            if args.out is not None:
                check_writable(args.out, folder=False)
            with built_once():  # the agents checked are the ones that play
                for spec in dict.fromkeys(args.agents):
                    check_agent(spec, build=lambda s: seat_agents([s], batched=False)[0])
                records, source = _watch(args.agents, config, args.seed), ""
        players = records.config.players
        if args.seat is not None and not 0 <= args.seat < players:
            raise ValueError(f"--seat must be 0-{players - 1} ({players} players); got {args.seat}")
        style = Style(use_colour(sys.stdout, args.no_colour))
        game = getattr(args, "game", 0)  # watch: its one game
        lines = list(tell_record(records, game, args.seat, style, source))
    except ValueError as e:
        return cli.fail(prog, e)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted; nothing written", file=sys.stderr)
        return 130
    if args.command == "watch" and args.out is not None:
        document = records_document(
            records.config, records.specs, records.games, extra={"source": "watch"}
        )
        try:
            write_file(args.out, records_text(document).encode())
        except NotWrittenError as e:
            return cli.fail(prog, e)
    try:
        print("\n".join(lines))
        if args.command == "watch" and args.out is not None:
            print(f"saved to {args.out} (python evaluate.py replay {args.out})")
    except BrokenPipeError:  # e.g. piped into head: the reader has seen enough
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


def _watch(specs: list[str], config: Config, seed: int):
    """One new game between ``specs`` (deal 0, rotation 0 of a tournament seeded ``seed``)."""
    from odin_lab.evaluation.players import seat_agents
    from odin_lab.evaluation.records import RecordsFile
    from odin_lab.evaluation.tournament import play_deals

    agents = seat_agents(specs, batched=False)
    record = play_deals(agents, config, 1, seed, rotate=False, engine="single")
    return RecordsFile(config, tuple(specs), tuple(record))


def _review_flags(w: argparse.ArgumentParser) -> None:
    from odin_lab.evaluation.review import MAX_ROLLOUTS, MIN_ROLLOUTS, REVIEW_ROLLOUTS

    w.add_argument(
        "results",
        type=Path,
        help="a records file (a play.py or web game, tournament.json; docs/records.md) or a "
        "tournament's folder",
    )
    w.add_argument("--game", type=int, default=0, help="which game of the file, from 0")
    w.add_argument(
        "--seat",
        type=int,
        help="the seat reviewed, from 0 (default: the person's seat of a play.py or web game)",
    )
    w.add_argument(
        "--rollouts",
        type=int,
        default=REVIEW_ROLLOUTS,
        help=f"playouts per decision, {MIN_ROLLOUTS}-{MAX_ROLLOUTS:,} (default {REVIEW_ROLLOUTS})",
    )
    w.add_argument("--seed", type=int, default=0, help="seed of the search (>= 0; default 0)")


def _person_seat(records, game: int) -> int:
    """The seat of the one ``human`` of game ``game``, else ``ValueError`` asking for --seat."""
    from odin_lab.evaluation.table import HUMAN

    record = records.games[game]
    seats = [s for s, a in enumerate(record.agents) if records.specs[a] == HUMAN]
    if len(seats) != 1:
        n = records.config.players
        raise ValueError(f"--seat is needed: a seat 0-{n - 1} (game {game} has no single person)")
    return seats[0]


def review(args: argparse.Namespace, prog: str) -> int:
    """``review``: print the review and write it beside the file; exit code 0, 2 with one line,
    or 130."""
    from odin_lab.evaluation.records import load_records
    from odin_lab.evaluation.results import NotWrittenError, check_writable, write_file
    from odin_lab.evaluation.review import (
        check_choice,
        check_rollouts,
        review_path,
        review_record,
        review_text,
    )

    try:
        records = load_records(args.results)
        check_choice(records, args.game, 0, "--")
        seat = _person_seat(records, args.game) if args.seat is None else args.seat
        check_choice(records, args.game, seat, "--")
        check_rollouts(args.rollouts, "--")
        if args.seed < 0:
            raise ValueError(f"--seed must be an integer >= 0; got {args.seed}")
        out = review_path(args.results, args.game, seat)
        check_writable(out, "the review", folder=False)  # before a minute of search
        result = review_record(records, args.game, seat, rollouts=args.rollouts, seed=args.seed)
    except ValueError as e:
        return cli.fail(prog, e)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted; nothing written", file=sys.stderr)
        return 130
    document = {"file": str(args.results), **result}
    try:
        write_file(out, (json.dumps(document, indent=1) + "\n").encode())
    except NotWrittenError as e:
        return cli.fail(prog, e)
    print("\n".join(review_text(result, str(args.results))))
    print(f"written to {out}")
    return 0


SHOW = {
    "replay": Subcommand("tell a recorded game move by move", _replay_flags, show, specs=False),
    "watch": Subcommand("play one new game between agents and tell it", _watch_flags, show),
    "review": Subcommand(
        "score each decision of one seat in a recorded game against the search",
        _review_flags,
        review,
        specs=False,
    ),
}
"""``evaluate.py``'s ``replay`` and ``watch`` (one game told move by move,
:mod:`odin_lab.evaluation.narrate`) and ``review`` (:mod:`odin_lab.evaluation.review`)."""


__all__ = ["SHOW", "review", "show"]
