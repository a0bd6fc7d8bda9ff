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
=========================  ================  ===================================================

The game's own limits (players, the threshold: 1-1,000) are ``odin_env.spec.Config``'s; the web
app's (request bodies, replays it sends) are in :mod:`odin_lab.webapp.app` and
:mod:`odin_lab.webapp.replays`.

:func:`read_bounded` is the one way the lab reads a file given from outside: only a regular
file (a FIFO, a device, a folder is refused without blocking), at most ``limit`` bytes.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

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


def size_text(n: int) -> str:
    """``n`` bytes in words: ``256 MiB``, ``16 KiB``, ``300 bytes``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,} bytes"


def read_bounded(path: Path | str, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    ``OSError`` when it cannot be opened; ``ValueError`` with one line when it is not a regular
    file (a FIFO, a device, a socket, a folder: refused at once, never read nor waited on) or is
    larger than ``limit`` bytes (also when it grows past ``limit`` while being read). A symbolic
    link is followed unless ``follow`` is false (then it is an ``OSError``): whoever lists
    files must keep links out of their folders, and may read the real paths they listed with
    ``follow=False`` so that a file swapped for a link since is not read."""
    # O_NONBLOCK: opening a FIFO without a writer must not wait for one.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ValueError(f"{path}: not a regular file ({_kind(info.st_mode)})")
        if info.st_size > limit:
            raise ValueError(
                f"{path}: {info.st_size:,} bytes, over the limit of {size_text(limit)}"
            )
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise ValueError(f"{path}: over the limit of {size_text(limit)}")
        return b"".join(chunks)
    finally:
        os.close(fd)


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a folder"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a plain file"


__all__ = [
    "MAX_ACTIONS", "MAX_DECISIONS", "MAX_GAMES", "MAX_LIVE_GAMES", "MAX_RECORDS_BYTES",
    "MAX_RECORDS_GAMES", "MAX_SPEC_CHARS", "MAX_WORKERS", "read_bounded", "size_text",
]  # fmt: skip
