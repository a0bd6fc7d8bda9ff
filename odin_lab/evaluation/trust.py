"""Code runs only when the command line names it: specs read back from files checked.

Run folders, records, comparisons, studies and leaderboards are data that people copy between
machines. A spec read back from one that names outside code (:func:`agents.registry
.names_outside_code`: ``module:Name``, ``path/to/file.py:Name``, an installed package's name)
is refused in one line by :func:`trusted`, before anything imports it, unless the same spec is
given again on this command's own command line (as an agent, or with :data:`TRUST_FLAG`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from agents.registry import absolute_spec, names_outside_code

TRUST_FLAG = "--trust"
"""The flag that names, again, an outside spec a file read back holds: where a command reads
specs from a file and has no flag of its own that gives them (``train.py --resume``)."""


def untrusted(specs_from_file: Iterable[object], command_line: Iterable[str]) -> list[str]:
    """The specs of ``specs_from_file`` that name outside code and are not in ``command_line``
    (file paths compared as absolute paths), in order, once each."""
    given = {absolute_spec(s) for s in command_line if isinstance(s, str)}
    found = [s for s in specs_from_file if names_outside_code(s) and absolute_spec(s) not in given]
    return list(dict.fromkeys(found))


def trusted(
    specs_from_file: Iterable[object],
    command_line: Iterable[str],
    what_file: str | Path,
    flag: str = TRUST_FLAG,
) -> None:
    """``ValueError`` of one line naming ``what_file``, the specs of ``specs_from_file`` that
    name outside code not given on ``command_line``, and the flag (``flag``) that gives them;
    nothing is imported. Call it before the specs reach :func:`agents.registry.check_spec`
    or ``make``."""
    refused = untrusted(specs_from_file, command_line)
    if refused:
        named = ", ".join(repr(s) for s in refused)
        again = " ".join(f"{flag} {s}" for s in refused)
        raise ValueError(
            f"{what_file} names outside code (agent {named}), which runs only when the command "
            f"line names it: to run it, give it on the command line with {again}"
        )


__all__ = ["TRUST_FLAG", "trusted", "untrusted"]
