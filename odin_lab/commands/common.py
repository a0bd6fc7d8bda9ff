"""What the lab's command lines share: path flags, agent checks, the game of a command line."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agents.registry import spec_help
from odin_env.rules import Config
from odin_lab import cli

SPECS = f"Agent specs: {spec_help()}."
"""What an agent spec may be (the help's last paragraph)."""
SHARED = ("threshold", "colours", "episode", "reward", "goat")
"""The game settings (``Config`` fields) every study takes as flags, as declared there."""


@dataclass(frozen=True)
class Subcommand:
    """A subcommand as its own module declares it: ``flags(parser)`` adds its flags to its
    parser, ``run(args, prog)`` runs it and returns the exit code (0; 2 with one line for bad
    input; 130 after Ctrl-C); ``specs``: its help ends with what an agent spec may be."""

    help: str
    flags: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace, str], int]
    specs: bool = True


def add_subcommands(root: argparse.ArgumentParser, table: dict[str, Subcommand]) -> None:
    """One subparser of ``root`` per entry of ``table`` (``args.command`` names it), in order."""
    sub = root.add_subparsers(dest="command", required=True)
    for name, command in table.items():
        epilog = {"epilog": SPECS} if command.specs else {}
        command.flags(sub.add_parser(name, help=command.help, **epilog))


def cli_path(text: str) -> Path:
    """A path flag's value: an empty one is refused (``Path("")`` would be the current folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"must name a path; got {text!r}")
    return Path(text)


def check_agent(
    spec: str, config: Config | None = None, build: Callable[[str], Any] | None = None
) -> None:
    """Build the agent (``build(spec)``; by default :func:`agents.make`), so a bad spec fails
    here with a clear message; in a Goat game (``config.goat``), also ask it for one decision of
    one, so an agent that does not play the Goat is refused here, naming the setting, before
    any game."""
    from agents import make
    from agents.registry import check_plays

    name, _, path = spec.partition(":")
    if name == "ppo" and path and not Path(path).exists():
        raise ValueError(f"agent {spec!r}: model file {path!r} does not exist")
    try:
        agent = (build or make)(spec)
        if config is not None:
            check_plays(spec, config, agent)
    except ImportError as e:
        raise ValueError(f"agent {spec!r} cannot be loaded: {e}") from None
    except OSError as e:
        raise ValueError(f"agent {spec!r}: {e}") from None


def config_of(args: argparse.Namespace, players: int, first_player: str | None = None) -> Config:
    """The game of the command line at ``players`` seats (and ``first_player``, when given)."""
    settings = cli.given(args, SHARED)
    rule = first_player or getattr(args, "first_player", None)
    if isinstance(rule, str):
        settings["first_player"] = rule
    return Config(players=players, **settings)


def check_counts(args: argparse.Namespace, specs: list[str]) -> Config:
    """The game of the command line for one agent spec per seat; ``ValueError`` when the counts
    differ."""
    players = args.players if args.players is not None else len(specs)
    config = config_of(args, players)
    if len(specs) != players:
        few = "fewer" if len(specs) < players else "more"
        raise ValueError(
            f"{len(specs)} agents for {players} players ({few} agents than players): "
            "give one agent spec per seat"
        )
    return config


__all__ = [
    "SHARED",
    "SPECS",
    "Subcommand",
    "add_subcommands",
    "check_agent",
    "check_counts",
    "cli_path",
    "config_of",
]
