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

Each subcommand is declared by its own module (:data:`SUBCOMMANDS`): the studies by
:mod:`odin_lab.commands.studies`, ``replay``, ``watch`` and ``review`` by
:mod:`odin_lab.commands.show`, ``exploit`` by :mod:`odin_lab.commands.exploit`.
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
import sys

from odin_lab import cli
from odin_lab.commands.common import SPECS, Subcommand, add_subcommands
from odin_lab.commands.exploit import EXPLOIT
from odin_lab.commands.show import SHOW
from odin_lab.commands.studies import STUDIES

PROG = cli.program("evaluate.py")
SUBCOMMANDS: dict[str, Subcommand] = {**STUDIES, **SHOW, "exploit": EXPLOIT}
"""Every subcommand, by name, in the order of the help."""


def parser() -> argparse.ArgumentParser:
    """The CLI's argument parser."""
    root = cli.Parser(prog=PROG, description=__doc__.split("\n\n")[0], epilog=SPECS)
    add_subcommands(root, SUBCOMMANDS)
    return root


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; return the exit code (0 done, 2 bad input, 130 interrupted)."""
    args = parser().parse_args(argv)
    return SUBCOMMANDS[args.command].run(args, f"{PROG} {args.command}")


if __name__ == "__main__":
    cli.restore_interrupts()  # Ctrl-C or `kill` keeps the finished deals
    sys.exit(main())
