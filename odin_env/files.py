"""The one way the lab opens a file given from outside (a model, a records file, a run's
``config.json``, a summary): only a regular file, refused at once otherwise, and bounded.

Here, at the bottom (stdlib only), so that every layer reads through it: the model readers in
``agents`` as well as the lab's readers in ``odin_lab``. A FIFO, a device, a socket, a folder
or a symbolic link to one is refused with one line (``ValueError``) without being read or
waited on; a file is read to at most a byte limit; JSON is parsed only after its number of
containers (the objects and arrays that cost memory well beyond their bytes) is known to be
within a limit, so that bytes bound memory too.
"""

from __future__ import annotations

import json
import os
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


def json_containers(raw: bytes | str) -> int:
    """At most how many objects and arrays the JSON text ``raw`` holds: its ``{`` and ``[``
    (those inside strings counted too, so never fewer)."""
    if isinstance(raw, str):
        return raw.count("{") + raw.count("[")
    return raw.count(b"{") + raw.count(b"[")


def load_json(raw: bytes | str, name: str, max_containers: int, kind: str = "JSON") -> Any:
    """The JSON value of ``raw`` once it is known to hold at most ``max_containers`` objects
    and arrays; ``ValueError`` with one line starting with ``name`` for more, for text that is
    not JSON (``not {kind} (why)``) and for JSON nested too deep for Python to parse.

    An empty object costs some 70 bytes of memory against its 3 bytes of text: counting the
    containers before parsing bounds the memory of the parse to a few times the text's bytes,
    as a real file of numbers and short lists costs."""
    if json_containers(raw) > max_containers:
        raise ValueError(
            f"{name}: over the limit of {max_containers:,} JSON objects and arrays in one file"
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
    "json_containers",
    "load_json",
    "open_regular",
    "read_bounded",
    "read_head",
    "size_text",
]
