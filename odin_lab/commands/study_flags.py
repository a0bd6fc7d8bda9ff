"""The flags of ``evaluate.py``'s studies (:mod:`odin_lab.commands.studies`): one function a
study, and the game's, the workers' and the resume flags they share."""

from __future__ import annotations

import argparse
from pathlib import Path

from odin_env.rules import FIRST_PLAYER_RULES, Config
from odin_lab import cli
from odin_lab.commands.common import cli_path
from odin_lab.evaluation.failures import DECISION_LIMIT_S, MAX_DECISION_LIMIT_S


def resume_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--resume",
        action="store_true",
        help="continue the partial result in --out (after Ctrl-C or a kill) with the same settings",
    )


def game_flags(
    p: argparse.ArgumentParser,
    players_many: bool = False,
    players_help: str = "seats (2-6); default: one per agent",
    goat: bool = True,
) -> None:
    if players_many:
        p.add_argument(
            "--players", type=int, nargs="+", default=[2, 3, 4, 5, 6], help="player counts"
        )
    else:
        p.add_argument("--players", type=int, help=players_help)
    skip = {"players", "seed"} | ({"first_player"} if players_many else set())
    cli.add_fields(p, Config, skip=skip | (set() if goat else {"goat"}))
    p.add_argument("--seed", type=int, default=0, help="seed of the deals (>= 0)")
    parallel_flags(p, workers=1)
    p.add_argument(
        "--decision-limit",
        type=float,
        default=DECISION_LIMIT_S,
        metavar="SECONDS",
        help=f"stop the games when an agent takes longer on one decision (0: no limit; at most "
        f"{MAX_DECISION_LIMIT_S:,.0f}; default {DECISION_LIMIT_S:g})",
    )
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def parallel_flags(p: argparse.ArgumentParser, workers: int) -> None:
    """``--workers`` and ``--ray [ADDRESS]``; ``workers``: the default without Ray."""
    p.add_argument(
        "--workers",
        type=int,
        help=f"worker processes (default {workers}); with --ray and no address: the CPUs of "
        "the local Ray (default: all)",
    )
    p.add_argument(
        "--ray",
        nargs="?",
        const="local",
        metavar="ADDRESS",
        help="play the games as Ray tasks (the same results): on the cluster at ADDRESS "
        "(auto, HOST:PORT or ray://HOST:PORT), or on a local Ray when no address is given; "
        "needs the ray extra",
    )
    p.set_defaults(default_workers=workers)


def tournament_flags(t: argparse.ArgumentParser) -> None:
    t.add_argument("--agents", nargs="+", required=True, help="one agent spec per seat (see below)")
    t.add_argument("--games", type=int, default=2000)
    t.add_argument("--out", type=cli_path, default=Path("results/tournament"))
    t.add_argument(
        "--engine",
        choices=("auto", "single", "batched"),
        default="auto",
        help="batched: many games at once (every agent but search); auto: batched when every "
        "agent allows it; single: one game at a time",
    )
    resume_flag(t)
    game_flags(t)


def compare_flags(c: argparse.ArgumentParser) -> None:
    c.add_argument("--agents", nargs=2, required=True, metavar="SPEC", help="the two agents")
    c.add_argument(
        "--against", nargs="+", required=True, metavar="SPEC", help="one spec per other seat"
    )
    c.add_argument("--games", type=int, default=2000, help="games per agent")
    c.add_argument("--out", type=cli_path, default=Path("results/compare"))
    c.add_argument("--engine", choices=("auto", "single", "batched"), default="auto")
    resume_flag(c)
    game_flags(c, players_help="seats (2-6); default: one more than --against")


def seating_flags(s: argparse.ArgumentParser) -> None:
    s.add_argument("--agent", default="greedy", help="the agent spec (default: greedy)")
    s.add_argument("--games", type=int, default=5000, help="games per player count and rule")
    s.add_argument(
        "--first-player",
        "--start-rule",
        dest="first_player",
        nargs="+",
        default=["rotate", "winner"],
        help=", ".join(FIRST_PLAYER_RULES),
    )
    s.add_argument("--out", type=cli_path, default=Path("results/seating"))
    resume_flag(s)
    game_flags(s, players_many=True)


def thresholds_flags(h: argparse.ArgumentParser) -> None:
    h.add_argument(
        "--agents",
        nargs="+",
        default=["planner", "greedy", "greedy", "greedy"],
        help="one agent spec per seat; the first is studied",
    )
    h.add_argument("--thresholds", type=int, nargs="+", default=[5, 10, 15, 20, 30])
    h.add_argument("--games", type=int, default=2000, help="games per threshold")
    h.add_argument("--out", type=cli_path, default=Path("results/thresholds"))
    resume_flag(h)
    game_flags(h)


def goat_flags(g: argparse.ArgumentParser) -> None:
    g.add_argument("--agent", default="planner", help="the agent spec (default: planner)")
    g.add_argument(
        "--games", type=int, default=2000, help="games per player count, without and with it"
    )
    g.add_argument("--first-player", choices=FIRST_PLAYER_RULES, default="rotate")
    g.add_argument("--out", type=cli_path, default=Path("results/goat"))
    resume_flag(g)
    game_flags(g, players_many=True, goat=False)


def leaderboard_flags(b: argparse.ArgumentParser) -> None:
    b.add_argument(
        "--agents",
        nargs="+",
        required=True,
        help="distinct agent specs, at least --players: every table of --players of them plays",
    )
    b.add_argument(
        "--games",
        type=int,
        default=200,
        help="games per table (rounded up to whole deals, each played from every seat)",
    )
    b.add_argument(
        "--tables",
        type=int,
        help="most tables: with more combinations of agents, a seeded balanced sample of this "
        "many (default: evaluation.leaderboard.MAX_TABLES)",
    )
    b.add_argument("--out", type=cli_path, default=Path("results/leaderboard"))
    resume_flag(b)
    game_flags(b, players_help="seats per table (2-6); default: 4, or one per agent if fewer")


def showcase_flags(w: argparse.ArgumentParser) -> None:
    w.add_argument("--out", type=cli_path, default=Path("results/showcase"))
    w.add_argument("--games", type=int, default=200)
    w.add_argument("--seed", type=int, default=0)
    parallel_flags(w, workers=2)
    w.add_argument("--no-progress", action="store_true")
