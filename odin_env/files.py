"""The one way the lab opens a file given from outside (a model, a records file, a run's
``config.json``, a summary): only a regular file, refused at once otherwise, and bounded.

Here, at the bottom (stdlib only), so that every layer reads through it: the model readers in
``agents`` as well as the lab's readers in ``odin_lab``. A FIFO, a device, a socket, a folder
or a symbolic link to one is refused with one line (``ValueError``) without being read or
waited on; a file is read to at most a byte limit; JSON is parsed only after the memory its
parse takes is known, from its text, to be within a limit (:func:`json_parse_bound`: objects,
lists and items cost memory well beyond their bytes), so that memory is bounded too.
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any, BinaryIO


def size_text(n: int) -> str:
    """``n`` bytes in words: ``256 MiB``, ``16 KiB``, ``300 bytes``."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n >= size and n % size == 0:
            return f"{n // size} {unit}"
    return f"{n:,} bytes"


def open_regular(path: Path | str, *, follow: bool = True) -> BinaryIO:
    """``path`` opened for binary reading, once it is known to be a regular file.

    ``OSError`` when it cannot be opened; ``ValueError`` with one line when it is not a regular
    file (a FIFO, a device, a socket, a folder: refused at once, never read nor waited on). A
    symbolic link is followed unless ``follow`` is false (then it is an ``OSError``); a link to
    a FIFO or a device is refused as what it points to."""
    # O_NONBLOCK: opening a FIFO without a writer must not wait for one. fstat of the opened
    # descriptor, not stat of the name: the file checked is the file read.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(path, flags | (0 if follow else getattr(os, "O_NOFOLLOW", 0)))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(f"{path}: not a regular file ({_kind(mode)})")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def check_regular(path: Path | str) -> Path:
    """``path``, once it is known to be a regular file (errors as :func:`open_regular`): for
    libraries that open a file by its name (safetensors maps it), checked just before."""
    open_regular(path).close()
    return Path(path)


def read_bounded(path: Path | str, limit: int, *, follow: bool = True) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Errors as :func:`open_regular`, and ``ValueError`` with one line when the file is larger
    than ``limit`` bytes (also when it grows past ``limit`` while being read). Whoever lists
    files must keep links out of their folders, and may read the real paths they listed with
    ``follow=False`` so that a file swapped for a link since is not read."""
    with open_regular(path, follow=follow) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise ValueError(f"{path}: {size:,} bytes, over the limit of {size_text(limit)}")
        # In chunks: one read of limit + 1 bytes would reserve them all for a small file.
        chunks, total = [], 0
        while chunk := f.read(min(1 << 20, limit + 1 - total)):
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise ValueError(f"{path}: over the limit of {size_text(limit)}")
    return b"".join(chunks)


def read_head(path: Path | str, size: int, *, follow: bool = True) -> bytes:
    """The first ``size`` bytes (or fewer) of the regular file ``path``: a file's kind by its
    first bytes. Errors as :func:`open_regular`."""
    with open_regular(path, follow=follow) as f:
        return f.read(size)


_OBJECT, _LIST, _ITEM, _ENTRY, _QUOTE = 232, 96, 40, 96, 12
"""Bytes ``json.loads`` allocates at most per ``{``, ``[``, ``,``, ``:`` and ``"`` of the text
(CPython 3.11, 64-bit, the garbage collector's header included)."""
_ASTRAL, _WIDE = re.compile(rb"[\xf0-\xf4]"), re.compile(rb"[\xc4-\xef]")
"""A character outside the BMP (4 bytes of UTF-8), or outside Latin-1 (2 or 3 bytes)."""
_ASTRAL_ESCAPE, _WIDE_ESCAPE = re.compile(rb"\\u[dD][89abAB]"), re.compile(rb"\\u(?!00)")
"""The same escaped: a high surrogate, or any ``\\u`` but ``\\u00XX``."""
_PARSER = 4096
"""What a parse allocates whatever the text (the decoder's own objects)."""


def json_parse_bound(raw: bytes | str) -> int:
    """An upper bound, in bytes, of the memory ``json.loads(raw)`` takes, from the text alone.

    Its count of the bytes that open an object, a list or a string, or separate items (each
    one's largest cost in CPython: an object 232 bytes with its first entries, a list 96, an
    item 40, a dict entry 96 more, a string 24), and its characters: ``json.loads`` decodes the
    whole text first, then copies each string out of it (one with an escape through a buffer
    that grows and widens: up to 2.5 times), and CPython stores a text or a string as wide as
    its widest character (1 byte each, 2 outside Latin-1, 4 outside the BMP). It over-counts
    (those bytes inside strings count too): against ``tracemalloc``, 1.0-5x the peak for every
    shape tried, 1.6-1.8x for tournaments' records files (``tests/test_webapp_memory.py``)."""
    raw = raw.encode() if isinstance(raw, str) else raw
    return (
        _OBJECT * raw.count(b"{")
        + _LIST * raw.count(b"[")
        + _ITEM * raw.count(b",")
        + _ENTRY * raw.count(b":")
        + _QUOTE * raw.count(b'"')
        + _characters(raw)
        + _PARSER
    )


def _characters(raw: bytes) -> int:
    """The bytes the decoded text and the strings copied out of it take at most: a string with
    an escape is built in a buffer that grows (by a quarter) and widens (by a copy)."""
    text = 4 if _ASTRAL.search(raw) else 2 if _WIDE.search(raw) else 1
    escaped = 4 if _ASTRAL_ESCAPE.search(raw) else 2 if _WIDE_ESCAPE.search(raw) else 1
    built = 5 if b"\\" in raw else 2  # in halves
    return len(raw) * (2 * text + built * max(text, escaped)) // 2


def load_json(raw: bytes | str, name: str, max_memory: int, kind: str = "JSON") -> Any:
    """The JSON value of ``raw`` once its parse is known to take at most ``max_memory`` bytes
    (:func:`json_parse_bound`); ``ValueError`` with one line starting with ``name`` for more,
    for text that is not JSON (``not {kind} (why)``) and for JSON nested too deep for Python to
    parse.

    An empty object costs some 70 bytes of memory against its 3 bytes of text: bounding the
    parse from the text bounds its memory, where bytes alone do not."""
    bound = json_parse_bound(raw)
    if bound > max_memory:
        raise ValueError(
            f"{name}: too many objects, lists and items to load (up to {bound / 2**20:,.1f} "
            f"MiB in memory, over the limit of {max_memory / 2**20:,.1f} MiB)"
        )
    try:
        return json.loads(raw)
    except RecursionError:
        raise ValueError(f"{name}: not {kind} (JSON nested too deep)") from None
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{name}: not {kind} ({e})") from None


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
    "check_regular",
    "json_parse_bound",
    "load_json",
    "open_regular",
    "read_bounded",
    "read_head",
    "size_text",
]
