"""Play Odin against the lab's agents in the terminal (a thin CLI over
``odin_lab.evaluation.play``).

    python play.py --opponents ppo ppo ppo
    python play.py --opponents random --threshold 5 --seat 1 --seed 7 --out results/mine.json

Type a move as card names (``R3 Y3``; ``Goat``, with ``--goat``), a number from the menu,
``pass`` or ``take Y5``;
``hint`` shows the search's view of each move (your win chance and expected penalty),
``help`` explains, ``quit`` stops. The game is saved as a records file (default
``results/play/seed-SEED.json``) that ``python evaluate.py replay FILE`` tells; a game stopped
early (``quit``, Ctrl-C, end of input) is saved too, marked unfinished. Game flags are the
fields of ``odin_env.rules.Config``. Bad flags exit 2 with one line, an ``--out`` that cannot be
written too (checked before the game); Ctrl-C exits 130, and a second one waits for the save.
A full disk at the end is one line (exit 2, or 130 after Ctrl-C), an earlier file left whole.
An agent that fails (raises, answers a non-integer or illegal action, or outlasts
``odin_lab.evaluation.failures``' decision limit) is one line naming it, exit 2, the unfinished
game saved.
"""

from __future__ import annotations

import argparse
import secrets
import sys
from dataclasses import fields
from pathlib import Path

from odin_env.rules import Config
from odin_lab import cli
from odin_lab.commands.common import cli_path

PROG = cli.program("play.py")
GAME_FLAGS = [f.name for f in fields(Config) if f.name != "seed"]
"""The game settings taken as flags (``--players``, ``--threshold``, ...)."""


def parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    from agents.registry import spec_help

    p = cli.Parser(
        prog=PROG, description=__doc__.split("\n\n")[0], epilog=f"Agent specs: {spec_help()}."
    )
    p.add_argument(
        "--opponents",
        nargs="+",
        required=True,
        help="one agent spec per other seat (random, greedy, planner, ppo, ...; see below)",
    )
    p.add_argument("--seat", type=int, default=0, help="your seat, 0 .. players - 1 (default 0)")
    p.add_argument("--seed", type=int, help="seed of the deals (>= 0; default: drawn and shown)")
    p.add_argument(
        "--out", type=cli_path, help="records file (default results/play/seed-SEED.json)"
    )
    p.add_argument("--no-colour", action="store_true", help="no ANSI colours")
    cli.add_fields(p, Config, skip={"seed"}, defaults={"players": "one more than the opponents"})
    return p


def main(argv: list[str] | None = None) -> int:
    """Run a session; return the exit code (0 done or quit, 2 bad input, 130 Ctrl-C)."""
    args = parser().parse_args(argv)
    try:
        config = Config(**{"players": len(args.opponents) + 1, **cli.given(args, GAME_FLAGS)})
        from agents.registry import check_spec
        from odin_lab.commands.common import check_agent
        from odin_lab.evaluation.play import check_setup

        check_setup(config, args.seat, args.opponents)
        for spec in dict.fromkeys(args.opponents):
            check_spec(spec)
            if config.goat:  # an agent that does not play the Goat is refused before the game
                check_agent(spec, config)
        if args.seed is not None and args.seed < 0:
            raise ValueError(f"--seed must be an integer >= 0; got {args.seed}")
        seed = secrets.randbelow(2**31) if args.seed is None else args.seed
        out = args.out or Path("results/play") / f"seed-{seed}.json"
        from odin_lab.evaluation.results import check_writable

        check_writable(out, folder=False)
        from odin_lab.evaluation.failures import AgentFailed
        from odin_lab.evaluation.narrate import Style, use_colour
        from odin_lab.evaluation.play import QuitRequested, Session, save
        from odin_lab.evaluation.results import NotWrittenError, stop_once

        style = Style(use_colour(sys.stdout, args.no_colour))
        session = Session(config, args.seat, args.opponents, seed, out, style)
    except (ValueError, OSError) as e:
        return cli.fail(PROG, e)
    except KeyboardInterrupt:
        print(f"\n{PROG}: interrupted before the game began; nothing saved", file=sys.stderr)
        return 130
    print(f"Odin, {config.players} players to {config.threshold} points, seed {seed}.", flush=True)
    code, stop = 0, ""
    with stop_once():  # a second Ctrl-C waits for the game to be saved
        try:
            session.run()
        except QuitRequested:
            stop = "you quit"
        except EOFError:
            stop = "end of input"
        except KeyboardInterrupt:
            code, stop = 130, "interrupted"
        except AgentFailed as failure:  # an outside agent's fault: one line, the game kept
            cli.fail(PROG, failure)
            code, stop = 2, "an agent failed"
        try:
            finished = save(out, config, seed, session.specs, session.actions, session.table.hints)
        except NotWrittenError as e:
            cli.fail(PROG, e)
            return code or 2
        # The person's own moves: the agents' are not theirs to count.
        moves = f"{session.moves} move{'s' * (session.moves != 1)} of yours"
        state = "" if finished else f"{stop}: the unfinished game ({moves}) "
        print(f"\n{state or 'game '}saved to {out}; replay: python evaluate.py replay {out}")
    return code


if __name__ == "__main__":
    sys.exit(main())
