"""What the command-line tools share: flags made from settings dataclasses, one-line errors.

A settings dataclass declares each setting once, with its type, default, the values it takes
(the field's ``allowed`` metadata, where it has one) and a docstring under the field;
:func:`add_fields` turns every field into a ``--field-name`` flag whose help is that docstring
(Sphinx markup removed), its default and those values. Flags default to ``None`` so that
:func:`given` returns only what the user typed. Abbreviated flags are refused.
"""

from __future__ import annotations

import argparse
import ast
import inspect
import os
import re
import shlex
import sys
import types
import typing
from collections.abc import Iterable, Sequence
from dataclasses import MISSING, fields, is_dataclass
from typing import Any

from odin_lab.launch import program, restore_interrupts

# One BLAS thread, as the lab runs one torch thread: the lab's numpy networks multiply small
# matrices, where OpenBLAS's threads cost far more than they give (on a 2-core machine that is
# busy, 28 times the CPU for one 256 x 574 product), and tournament workers would each start
# as many threads as the machine has cores. This module is the first of the lab's that a
# command imports, before numpy loads (odin_lab.commands imports it first); a user's own setting
# of these variables is kept.
for _name in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_name, "1")


class Parser(argparse.ArgumentParser):
    """``argparse`` with whole flag names only and a one-line error (exit 2)."""

    def __init__(self, *args: Any, **kwargs: Any):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> typing.NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        # argparse drops a value of '--' (``--flag=--``) and keeps the default: refuse it.
        for arg in sys.argv[1:] if args is None else args:
            if isinstance(arg, str) and arg.startswith("--") and arg.endswith("=--"):
                self.error(f"argument {arg[:-3]}: expected a value, got '--'")
        return super().parse_known_args(args, namespace)


def plain(text: str) -> str:
    """``text`` without Sphinx roles and literals: ``:class:`a.B``` -> ``a.B``, ````x```` -> x."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    text = text.replace("``", "")
    return " ".join(text.split())


def field_docs(cls: type) -> dict[str, str]:
    """Each field of dataclass ``cls`` mapped to the docstring written under it (in the class
    that declares it last, its own or a base's)."""
    docs: dict[str, str] = {}
    for klass in reversed([k for k in cls.__mro__ if is_dataclass(k)]):
        tree = ast.parse(inspect.getsource(klass).lstrip())
        body = tree.body[0].body  # type: ignore[attr-defined]
        for node, after in zip(body, body[1:]):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = plain(after.value.value)
    return docs


def _scalar(hint: Any) -> tuple[type, bool]:
    """``(element type, is a list)`` of a field's type hint (``X | None`` taken as ``X``)."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        hint = next(a for a in typing.get_args(hint) if a is not type(None))
    if typing.get_origin(hint) is list:
        return typing.get_args(hint)[0], True
    return hint, False


def _default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return None


def flag(name: str) -> str:
    """The flag of field ``name``: ``--name-with-dashes``."""
    return "--" + name.replace("_", "-")


def add_fields(
    parser: argparse.ArgumentParser,
    cls: type,
    skip: Iterable[str] = (),
    defaults: dict[str, Any] | None = None,
    consts: dict[str, Any] | None = None,
) -> list[str]:
    """Add a flag for every field of dataclass ``cls`` not in ``skip``; return the field names.

    ``defaults``: defaults to show instead of the dataclass's (a CLI whose default differs).
    ``consts``: fields whose flag may also be given without a value, meaning this one (``--ray``
    alone: a local Ray). A ``bool`` field is a pair of flags, ``--name`` and ``--no-name``."""
    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    skip, defaults, consts, names = set(skip), defaults or {}, consts or {}, []
    for f in fields(cls):
        if f.name in skip:
            continue
        kind, many = _scalar(hints[f.name])
        default = defaults.get(f.name, _default(f))
        if kind is bool and not many:
            parser.add_argument(
                flag(f.name),
                dest=f.name,
                action=argparse.BooleanOptionalAction,
                default=None,
                help=f"{docs.get(f.name, '')} (default: {'--' if default else '--no-'}{f.name})",
            )
            names.append(f.name)
            continue
        if kind not in (int, float, str):
            raise TypeError(f"{cls.__name__}.{f.name}: no flag for type {hints[f.name]}")
        shown = " ".join(map(str, default)) if isinstance(default, list) else default
        # The values the field declares it takes (odin_lab.training.settings.Allowed), if any.
        allowed = f"; {f.metadata['allowed']}" if "allowed" in f.metadata else ""
        alone = {"nargs": "?", "const": consts[f.name]} if f.name in consts else {}
        if many and alone:
            raise TypeError(f"{cls.__name__}.{f.name}: a list flag cannot stand alone")
        parser.add_argument(
            flag(f.name),
            dest=f.name,
            type=kind,
            default=None,
            metavar=f.name.upper(),
            help=f"{docs.get(f.name, '')} (default: {shown}{allowed})",
            **(alone or {"nargs": "+" if many else None}),
        )
        names.append(f.name)
    return names


def given(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The fields among ``names`` that the command line set."""
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def fail(prog: str, message: object) -> int:
    """Print ``prog: error: message`` (its first line) to stderr; return exit code 2."""
    first = str(message).splitlines()[0] if str(message) else type(message).__name__
    print(f"{prog}: error: {first}", file=sys.stderr)
    return 2


def shell_command(script: str, argv: Sequence[str] | None = None) -> str:
    """``python SCRIPT ARGS``, quoted so that a shell runs it as it was run: the ``"command"``
    every result file names (the docs show it beside its figures). ``argv``: the arguments
    (``None``: this process's own)."""
    return shlex.join(["python", script, *(sys.argv[1:] if argv is None else argv)])


__all__ = [
    "Parser", "add_fields", "fail", "field_docs", "flag", "given", "plain", "program",
    "restore_interrupts",
    "shell_command",
]  # fmt: skip
