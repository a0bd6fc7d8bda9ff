"""The lab's reading and playing limits, declared once: every reader and command checks its
input against one of these before work starts, and its refusal names the limit.

=========================  ================  ===================================================
name                       value             what it bounds
=========================  ================  ===================================================
``MAX_GAMES``              1,000,000         ``--games`` of every evaluate.py command: the
                                             games of a tournament, or of each table,
                                             threshold or seating of a study
``MAX_RECORDS_BYTES``      256 MiB           a records file read by ``records.load_records``
``MAX_RECORDS_GAMES``      1,000,000         games in one records file (``MAX_GAMES``)
``MAX_ACTIONS``            100,000           actions of one game record (a game to the
                                             highest threshold, 1,000, takes about 25,000)
``MAX_DECISIONS``          300,000           decisions of one replayed game, forced ones
                                             included
``MAX_LIVE_GAMES``         1,000             games the web app keeps live (``--max-games``)
``MAX_WORKERS``            256               worker processes of one evaluate.py command
``MAX_SPEC_CHARS``         4,096             one agent spec in a records file (a path's length)
``MAX_SUMMARY_BYTES``      16 MiB            a partial study's summary read by ``--resume``
``JSON_MEMORY_PER_BYTE``   32                a JSON file the lab reads is parsed only when
                                             its parse takes at most 32 times its bytes (and
                                             256 KiB in any case), by
                                             ``odin_env.files.json_parse_bound``: a records
                                             file bounds at 11-15 times, one of empty objects
                                             at about 90
``MAX_CONFIG_BYTES``       1 MiB             a run's ``config.json`` read by ``--resume``
=========================  ================  ===================================================

The game's own limits (players, the threshold: 1-1,000) are ``odin_env.spec.Config``'s; the web
app's (request bodies, replays it sends) are in :mod:`odin_lab.webapp.app` and
:mod:`odin_lab.webapp.replays`.

:func:`read_bounded` (from :mod:`odin_env.files`, where every layer reads through it) is the one
way the lab reads a file given from outside: only a regular file (a FIFO, a device, a folder, a
link to one is refused without blocking), at most ``limit`` bytes; :func:`read_json` parses it
within ``JSON_MEMORY_PER_BYTE`` (:func:`parse_json`: the one bound of a parse's memory, which
the web app uses too, with its own limit).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from odin_env.files import load_json, read_bounded, size_text

MAX_GAMES = 1_000_000
"""The most games of one tournament, or of each part of a study (``--games``): ten times the
largest tournament in the README."""
MAX_RECORDS_BYTES = 256 * 2**20
"""The largest records file the lab reads, in bytes (a game to threshold 15 takes about 2 KB)."""
MAX_RECORDS_GAMES = MAX_GAMES
"""The most games one records file may hold."""
MAX_ACTIONS = 100_000
"""The most actions one game record may hold."""
MAX_DECISIONS = 300_000
"""The most decisions (forced ones included) a replay walks before it refuses the game."""
MAX_SPEC_CHARS = 4096
"""The longest agent spec a records file may name (``PATH_MAX`` on Linux)."""
MAX_SUMMARY_BYTES = 16 * 2**20
"""The largest partial study summary ``--resume`` reads (``seating.json``, ``thresholds.json``,
``goat.json``), in bytes: a row is well under a kilobyte."""
MAX_WORKERS = 256
"""The most worker processes one command starts (``--workers``): beyond the CPUs they only
cost memory, and each is a whole Python process."""
MAX_LIVE_GAMES = 1000
"""The most live games the web app may be asked to keep (``--max-games``): each holds its
state, its log and its agents in memory."""
JSON_MEMORY_PER_BYTE = 32
"""A JSON file the lab reads is parsed only when its parse takes at most this many times its
bytes (and :data:`JSON_LEAST_MEMORY` in any case), as :func:`odin_env.files.json_parse_bound`
bounds it from the text: an empty object costs some 70 bytes of memory for its 3 bytes of text,
so bytes alone do not bound a parse's memory. A tournament's records file bounds at 11-15 times
its bytes (it takes 6-8), a file of empty objects at about 90 (it takes 25)."""
JSON_LEAST_MEMORY = 256 * 2**10
"""The memory any JSON file's parse may take, however short the file."""
MAX_CONFIG_BYTES = 2**20
"""The largest run ``config.json`` that ``train.py --resume`` reads (a real one is a few KB)."""


def parse_json(raw: bytes, name: str, kind: str = "JSON", most: int | None = None) -> Any:
    """The JSON value of ``raw`` (the bytes of the file ``name``) once its parse is known to
    take at most ``JSON_MEMORY_PER_BYTE`` times its bytes (``JSON_LEAST_MEMORY`` at least) and
    ``most`` bytes (a caller's own limit, such as the web app's); ``ValueError`` with one line
    otherwise (:func:`odin_env.files.load_json`)."""
    allowed = max(JSON_LEAST_MEMORY, len(raw) * JSON_MEMORY_PER_BYTE)
    return load_json(raw, name, allowed if most is None else min(allowed, most), kind)


def read_json(path: Path | str, limit: int) -> Any:
    """The JSON value of the regular file ``path`` of at most ``limit`` bytes
    (:func:`parse_json`); ``OSError`` when it cannot be opened, ``ValueError`` with one line
    naming the file and the problem otherwise."""
    return parse_json(read_bounded(path, limit), str(path))


__all__ = [
    "JSON_LEAST_MEMORY",
    "JSON_MEMORY_PER_BYTE",
    "MAX_ACTIONS",
    "MAX_CONFIG_BYTES",
    "MAX_DECISIONS",
    "MAX_GAMES",
    "MAX_LIVE_GAMES",
    "MAX_RECORDS_BYTES",
    "MAX_RECORDS_GAMES",
    "MAX_SPEC_CHARS",
    "MAX_SUMMARY_BYTES",
    "MAX_WORKERS",
    "parse_json",
    "read_bounded",
    "read_json",
    "size_text",
]
