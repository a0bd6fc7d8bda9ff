"""Tournaments and studies of Odin agents (a thin CLI over the ``odin_lab.evaluation`` package).

    python evaluate.py tournament --agents planner greedy random random --games 2000 \\
        --players 4 --threshold 15 --seed 0 --workers 2 --out results/NAME
    python evaluate.py seating --agent greedy --players 2 3 4 5 6 --games 5000 \\
        --start-rule rotate winner
    python evaluate.py thresholds --agents planner greedy greedy greedy --thresholds 5 10 15 20 30
    python evaluate.py goat --agent planner --players 2 3 4 5 6 --games 2000   # the Goat's study
    python evaluate.py leaderboard --agents search ppo planner shaper greedy random --players 4
    python evaluate.py showcase --out results/showcase      # what `make run` runs
    python evaluate.py replay results/NAME --game 12 [--seat 2]   # one recorded game, told
    python evaluate.py review results/play/seed-7.json --seat 0   # each move against the search
    python evaluate.py watch --agents ppo planner greedy random --seed 0 [--out FILE]
    python evaluate.py exploit --target planner --minutes 10 [--algo ppo] [--players 4]

Agents are specs of ``agents.make``: random, a heuristic name, ppo, ppo:PATH (a model file,
data), search[:N|:Nms], or your own agent as module:Name or path/to/file.py:Name (that runs
your code, by your choice; docs/own-agent.md). The game flags are the fields of
``odin_env.rules.Config``, with its docs and defaults.
Deals are fixed by ``--seed`` and each
deal is played once per seat rotation; results do not depend on ``--workers``, nor on
``--ray [ADDRESS]`` (every command: the games as Ray tasks on a cluster, or on a local Ray
without an address; ``odin_lab.evaluation.distributed``). ``tournament
--engine`` picks how games are played (``auto``: the batched engine when every agent has a
batched form; the results of deterministic agents do not depend on it). Bad input exits with
code 2 and a one-line error, before any game; so does a full disk or an unwritable ``--out``.
A results folder always describes one run: it is written beside itself and moved into place,
so an earlier result there is replaced whole or left whole (``odin_lab.evaluation.results``).
Ctrl-C (or a second one, or SIGTERM) keeps the finished work and says what it kept (exit 130);
a tournament also writes its finished deals as it goes (at most once a minute), a leaderboard
its finished tables, and the seating, thresholds and goat studies each row as it finishes, so
``kill -9`` loses only the work since (``--resume`` plays the rest).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from odin_env.rules import FIRST_PLAYER_RULES, Config
from odin_lab import cli
from odin_lab.commands.common import (
    SPECS,
    check_agent,
    check_counts,
    cli_path,
    config_of,
)

PROG = cli.program("evaluate.py")


def _resume_flag(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--resume", action="store_true",
        help="continue the partial result in --out (after Ctrl-C or a kill) with the same "
        "settings",
    )  # fmt: skip


def _game_flags(
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
    _parallel_flags(p, workers=1)
    p.add_argument("--no-progress", action="store_true", help="hide the progress bar")


def _parallel_flags(p: argparse.ArgumentParser, workers: int) -> None:
    """``--workers`` and ``--ray [ADDRESS]``; ``workers``: the default without Ray."""
    p.add_argument(
        "--workers", type=int,
        help=f"worker processes (default {workers}); with --ray and no address: the CPUs of "
        "the local Ray (default: all)",
    )  # fmt: skip
    p.add_argument(
        "--ray", nargs="?", const="local", metavar="ADDRESS",
        help="play the games as Ray tasks (the same results): on the cluster at ADDRESS "
        "(auto, HOST:PORT or ray://HOST:PORT), or on a local Ray when no address is given; "
        "needs the ray extra",
    )  # fmt: skip
    p.set_defaults(default_workers=workers)


def parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    root = cli.Parser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=SPECS)
    sub = root.add_subparsers(dest="command", required=True)

    t = sub.add_parser("tournament", epilog=SPECS, help="agents play seeded deals from every seat")
    t.add_argument("--agents", nargs="+", required=True, help="one agent spec per seat (see below)")
    t.add_argument("--games", type=int, default=2000)
    t.add_argument("--out", type=cli_path, default=Path("results/tournament"))
    t.add_argument(
        "--engine", choices=("auto", "single", "batched"), default="auto",
        help="batched: many games at once (every agent but search); auto: batched when every "
        "agent allows it; single: one game at a time",
    )  # fmt: skip
    _resume_flag(t)
    _game_flags(t)

    c = sub.add_parser(
        "compare", epilog=SPECS,
        help="two agents in one seat on the same games: their paired difference",
    )  # fmt: skip
    c.add_argument("--agents", nargs=2, required=True, metavar="SPEC", help="the two agents")
    c.add_argument(
        "--against", nargs="+", required=True, metavar="SPEC", help="one spec per other seat"
    )
    c.add_argument("--games", type=int, default=2000, help="games per agent")
    c.add_argument("--out", type=cli_path, default=Path("results/compare"))
    c.add_argument("--engine", choices=("auto", "single", "batched"), default="auto")
    _resume_flag(c)
    _game_flags(c, players_help="seats (2-6); default: one more than --against")

    s = sub.add_parser(
        "seating", epilog=SPECS, help="win rate by seat, the same agent in every seat"
    )
    s.add_argument("--agent", default="greedy", help="the agent spec (default: greedy)")
    s.add_argument("--games", type=int, default=5000, help="games per player count and rule")
    s.add_argument(
        "--first-player", "--start-rule", dest="first_player", nargs="+",
        default=["rotate", "winner"], help=", ".join(FIRST_PLAYER_RULES),
    )  # fmt: skip
    s.add_argument("--out", type=cli_path, default=Path("results/seating"))
    _resume_flag(s)
    _game_flags(s, players_many=True)

    h = sub.add_parser(
        "thresholds", epilog=SPECS, help="how the threshold changes the first agent's results"
    )
    h.add_argument(
        "--agents", nargs="+", default=["planner", "greedy", "greedy", "greedy"],
        help="one agent spec per seat; the first is studied",
    )  # fmt: skip
    h.add_argument("--thresholds", type=int, nargs="+", default=[5, 10, 15, 20, 30])
    h.add_argument("--games", type=int, default=2000, help="games per threshold")
    h.add_argument("--out", type=cli_path, default=Path("results/thresholds"))
    _resume_flag(h)
    _game_flags(h)

    g = sub.add_parser(
        "goat", epilog=SPECS,
        help="what the Grumpy Goat changes (RULES G1-G5): the same agent in every seat, "
        "without and with it, at each player count",
    )  # fmt: skip
    g.add_argument("--agent", default="planner", help="the agent spec (default: planner)")
    g.add_argument(
        "--games", type=int, default=2000, help="games per player count, without and with it"
    )
    g.add_argument("--first-player", choices=FIRST_PLAYER_RULES, default="rotate")
    g.add_argument("--out", type=cli_path, default=Path("results/goat"))
    _resume_flag(g)
    _game_flags(g, players_many=True, goat=False)

    b = sub.add_parser(
        "leaderboard", epilog=SPECS, help="rate many agents over every table of --players"
    )
    b.add_argument(
        "--agents", nargs="+", required=True,
        help="distinct agent specs, at least --players: every table of --players of them plays",
    )  # fmt: skip
    b.add_argument(
        "--games", type=int, default=200,
        help="games per table (rounded up to whole deals, each played from every seat)",
    )  # fmt: skip
    b.add_argument(
        "--tables", type=int,
        help="most tables: with more combinations of agents, a seeded balanced sample of this "
        "many (default: evaluation.leaderboard.MAX_TABLES)",
    )  # fmt: skip
    b.add_argument("--out", type=cli_path, default=Path("results/leaderboard"))
    _resume_flag(b)
    _game_flags(b, players_help="seats per table (2-6); default: 4, or one per agent if fewer")

    w = sub.add_parser("showcase", help="the tournament and seat table that `make run` shows")
    w.add_argument("--out", type=cli_path, default=Path("results/showcase"))
    w.add_argument("--games", type=int, default=200)
    w.add_argument("--seed", type=int, default=0)
    _parallel_flags(w, workers=2)
    w.add_argument("--no-progress", action="store_true")
    from odin_lab.commands.show import show_parsers

    show_parsers(sub)
    _exploit_parser(sub)
    return root


def _exploit_parser(sub: argparse._SubParsersAction) -> None:
    """``exploit``: a best-response probe (``odin_lab.training.exploit``)."""
    x = sub.add_parser(
        "exploit", epilog=SPECS,
        help="train a fresh learner against copies of a frozen agent: how far above the fair "
        "share can it get? (a lower bound on the agent's exploitability; needs the train extra)",
    )  # fmt: skip
    x.add_argument("--target", required=True, help="the agent spec probed (every other seat)")
    x.add_argument("--players", type=int, default=4, help="seats (2-6; default 4)")
    x.add_argument("--algo", help="the learner's algorithm (train.py --algo; default: its default)")
    x.add_argument(
        "--set", nargs="+", default=[], metavar="NAME=VALUE",
        help="the algorithm's settings, as train.py's flags name them (e.g. critic=full)",
    )  # fmt: skip
    x.add_argument(
        "--init", metavar="PATH",
        help="a lab model file the learner starts from (train.py --init): probe a network "
        "from itself, with --set matching its layers",
    )  # fmt: skip
    budget = x.add_mutually_exclusive_group(required=True)
    budget.add_argument("--minutes", type=float, help="training budget, wall-clock minutes")
    budget.add_argument("--steps", type=int, help="training budget, learner decisions")
    x.add_argument("--points", type=int, default=5, help="measurements over the budget")
    x.add_argument("--deals", type=int, default=200, help="deals per point, from every seat")
    x.add_argument("--seed", type=int, default=0, help="seed of the training run")
    x.add_argument("--eval-seed", type=int, help="seed of the evaluation deals (default: fixed)")
    x.add_argument("--workers", type=int, default=1, help="evaluation processes")
    x.add_argument("--out", type=Path, default=Path("results/exploit"))
    x.add_argument("--no-progress", action="store_true")


def exploit(args: argparse.Namespace, prog: str) -> int:
    """``exploit``: the probe; exit code 0, 2 with one line, or 130 (points kept)."""
    try:
        from odin_lab.training.algorithms import parse_settings
        from odin_lab.training.config import DEFAULT_ALGO
        from odin_lab.training.exploit import EVAL_SEED, ProbeSettings, probe
    except ImportError as e:
        return cli.fail(prog, f"the probe trains: install the train extra ({e})")
    try:
        check_agent(args.target)
        if args.out.exists() and not args.out.is_dir():
            raise ValueError(f"--out {args.out} is a file: name a folder (new or existing)")
        args.algo = args.algo or DEFAULT_ALGO
        if args.algo not in _algorithms():
            raise ValueError(f"--algo must be one of {', '.join(_algorithms())}; got {args.algo!r}")
        settings = ProbeSettings(
            args.target, Config(players=args.players), args.algo, args.minutes, args.steps,
            args.points, args.deals, args.seed,
            EVAL_SEED if args.eval_seed is None else args.eval_seed, args.workers,
            parse_settings(args.algo, args.set), args.init,
        )  # fmt: skip
        settings.check()
    except ValueError as e:
        return cli.fail(prog, e)
    from odin_lab.evaluation.results import stop_once

    try:
        # Ctrl-C or a plain kill keeps the points measured, also where a background launch
        # (nohup, setsid) left SIGINT ignored; a second one waits for the point being written.
        with stop_once():
            report = probe(settings, args.out, progress=not args.no_progress)
    except KeyboardInterrupt:
        print(f"\n{prog}: interrupted: the points measured are in {args.out}/", file=sys.stderr)
        return 130
    last = report["points"][-1]
    print(
        f"best response after {last['steps']:,} decisions: {last['win_rate']:.1%} "
        f"[{last['ci_low']:.1%}, {last['ci_high']:.1%}] against {report['players'] - 1} x "
        f"{report['target']} (fair share {report['parity']:.0%}): {args.target} can be "
        f"exploited by at least {max(0.0, last['ci_low'] - report['parity']):.1%} "
        f"(the interval's low end above the fair share)\nwritten under {args.out}/"
    )
    return 0


def _algorithms() -> list[str]:
    from odin_lab.training import ALGORITHMS

    return list(ALGORITHMS)


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
    from odin_lab.evaluation.results import check_writable

    check_writable(args.out)


def validate(args: argparse.Namespace) -> Config | None:
    """Check everything before any game is played; ``ValueError`` names the problem."""
    _check_common(args)
    if args.command in ("tournament", "thresholds", "compare"):
        compared = args.command == "compare"
        specs = [*args.agents, *args.against] if compared else args.agents
        config = check_counts(args, specs[1:] if compared else specs)  # compare: A or B a seat
        for spec in dict.fromkeys(specs):
            check_agent(spec, config)
        if getattr(args, "engine", "auto") == "batched":
            from agents.registry import batch_form_names, has_batch_form

            single = [spec for spec in dict.fromkeys(specs) if not has_batch_form(spec)]
            if single:
                raise ValueError(
                    f"--engine batched needs agents with a batched form "
                    f"(act_batch: {', '.join(batch_form_names())}); "
                    f"none for {', '.join(single)}: use --engine single or auto"
                )
        if args.command == "thresholds":
            for t in args.thresholds:
                try:
                    replace(config, threshold=t)  # Config's own range, before any game
                except ValueError as e:
                    raise ValueError(f"--thresholds: {e}") from None
        return config
    if args.command == "leaderboard":
        from odin_lab.evaluation.leaderboard import check

        default = min(Config().players, len(args.agents))  # Config's 4, or one per agent
        players = args.players if args.players is not None else default
        config = config_of(args, players)
        check(args.agents, players, args.tables)
        for spec in args.agents:
            check_agent(spec, config)
        return config
    if args.command == "goat":
        for n in args.players:
            config_of(args, n)
        check_agent(args.agent, replace(config_of(args, args.players[0]), goat=True))
        return config_of(args, args.players[0])
    if args.command == "seating":
        for n in args.players:
            for rule in args.first_player:
                config_of(args, n, rule)
        check_agent(args.agent, config_of(args, args.players[0]))
        return config_of(args, args.players[0])
    return None


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 done, 2 bad input, 130 interrupted)."""
    args = parser().parse_args(argv)
    prog = f"{PROG} {args.command}"
    if args.command in ("replay", "watch", "review"):
        from odin_lab.commands.show import review, show

        args.game = getattr(args, "game", 0)
        return review(args, prog) if args.command == "review" else show(args, prog)
    if args.command == "exploit":
        return exploit(args, prog)
    try:
        config = validate(args)
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

    from odin_lab.evaluation import results, showcase
    from odin_lab.evaluation.provenance import provenance

    specs = getattr(args, "agents", None) or [getattr(args, "agent", "")]
    specs = [*specs, *getattr(args, "against", [])]  # compare's other seats
    if args.command == "showcase":  # the agents it picks itself
        specs = list(showcase.SHOWCASE_AGENTS)
    with results.stop_once():  # a second Ctrl-C waits for the finished work to be written
        try:
            text = _study(args, config, provenance(specs))
        except KeyboardInterrupt as stop:
            return _interrupted(prog, args.out, stop)
        except results.NotWrittenError as e:
            cli.fail(prog, e)
            return 130 if results.interrupted_by(e) else 2
        except ValueError as e:
            return cli.fail(prog, e)
        print(text)
        print(f"written under {args.out}/")
    return 0


def _study(args: argparse.Namespace, config: Config | None, origin: dict) -> str:
    """Play and write the study of ``args.command``; return its printed text."""
    from odin_lab.evaluation import showcase, studies
    from odin_lab.evaluation.leaderboard import leaderboard

    progress = not args.no_progress
    common = {"progress": progress, "ray": args.ray, "provenance": origin}
    if args.command == "tournament":
        return studies.tournament(
            args.agents, config, args.games, args.seed, args.out, args.workers,
            engine=args.engine, resume=args.resume, **common,
        )[1]  # fmt: skip
    if args.command == "compare":
        from odin_lab.evaluation.compare import compare

        return compare(
            args.agents, args.against, config, args.games, args.seed, args.out, args.workers,
            resume=args.resume, engine=args.engine, **common,
        )[1]  # fmt: skip
    if args.command == "seating":
        return studies.seating(
            args.agent, args.players, args.first_player, args.games, args.seed, args.out,
            config, args.workers, resume=args.resume, **common,
        )[1]  # fmt: skip
    if args.command == "goat":
        from odin_lab.evaluation.goat_study import goat_study

        return goat_study(
            args.agent, args.players, args.games, args.seed, args.out, config, args.workers,
            resume=args.resume, **common,
        )[1]  # fmt: skip
    if args.command == "leaderboard":
        return leaderboard(
            args.agents, config, args.games, args.seed, args.out, args.workers,
            most=args.tables, resume=args.resume, **common,
        )[1]  # fmt: skip
    if args.command == "thresholds":
        return studies.thresholds(
            args.agents, args.thresholds, args.games, args.seed, args.out, config,
            args.workers, resume=args.resume, **common,
        )[1]  # fmt: skip
    return showcase.showcase(args.out, args.workers, args.games, seed=args.seed, **common)


def _interrupted(prog: str, out: Path, stop: KeyboardInterrupt) -> int:
    """After Ctrl-C: one line saying what was kept in ``out`` and how to go on; exit code 130."""
    from odin_lab.evaluation.leaderboard import LeaderboardInterrupted
    from odin_lab.evaluation.results import Interrupted, committed
    from odin_lab.evaluation.tournament import TournamentInterrupted

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
    died = _worker_death(stop)
    if died is not None:  # not a Ctrl-C: the work kept all the same, but the command failed
        print(f"\n{prog}: error: {died}: {said}", file=sys.stderr)
        return 1
    print(f"\n{prog}: interrupted: {said}", file=sys.stderr)
    return 130


def _worker_death(stop: BaseException) -> BaseException | None:
    """The :class:`~odin_lab.evaluation.workers.WorkerDiedError` behind ``stop`` (itself, or the
    exception it was raised from or while handling), if a worker's death stopped the work."""
    from odin_lab.evaluation.workers import WorkerDiedError

    seen: BaseException | None = stop
    while seen is not None:
        if isinstance(seen, WorkerDiedError):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


if __name__ == "__main__":
    cli.restore_interrupts()  # Ctrl-C or `kill` keeps the finished deals
    sys.exit(main())
