"""Results folders that always describe one run, and signals that never cut a write short.

Every folder an ``evaluate.py`` study writes (``tournament``, ``seating``, ``thresholds``,
``leaderboard``, ``showcase``) is written by :func:`results_folder`: the files go into a
staging folder inside the target (``OUT/.writing-PID-*``, so on the same file system however
``OUT`` is mounted), and only once every file is written are they moved into place, and the
files an earlier result of the same study left that this one does not write are removed. So
an earlier result is replaced whole or left whole: a full disk, an unwritable folder or Ctrl-C
before the move leaves it as it was (and the staging folder is removed); files of other
programs in the folder are never touched.

Signals: while a result is written, SIGINT and SIGTERM are held (:func:`held_interrupts`) and
take effect when the write ends; :func:`stop_once` makes the first signal of a command stop its
study (which then saves the work finished) and holds every later one until the command ends,
so two Ctrl-C 50 ms apart keep the same work as one. :data:`committed` lists the folders this
process finished writing, so an interrupted command can say what it kept.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import tempfile
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

committed: list[Path] = []
"""The results folders written whole by this process, in order (what an interrupted command
kept)."""

_STAGING = ".writing-"
_OLD = ".replaced-"


class NotWrittenError(Exception):
    """A results folder or file could not be written (a full disk, an unwritable or missing
    path): one line naming it; the earlier result there is whole."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a study: ``kept`` says what of its work was written (empty: nothing)."""

    def __init__(self, kept: str = ""):
        super().__init__(kept or "interrupted; nothing written")
        self.kept = kept


# -- signals -----------------------------------------------------------------------------------


def _settable() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def held_interrupts(deliver: bool = True) -> Iterator[None]:
    """Hold SIGINT and SIGTERM until the block ends; then pass the first one held to the
    handler it would have reached (``deliver``), or drop it (the caller is already stopping).
    Signals without a Python handler, and code outside the main thread, are left as they are.
    (The pattern of ``odin_lab.training.learner.held_interrupts``, which sits above this
    package.)"""
    if not _settable():
        yield
        return
    held: list[tuple[int, Any]] = []
    previous = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(signum)
        if callable(handler):
            previous[signum] = handler
            signal.signal(signum, lambda *received: held.append(received))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if held and deliver:
            signum, frame = held[0]
            previous[signum](signum, frame)


@contextlib.contextmanager
def stop_once() -> Iterator[None]:
    """Within the block the first SIGINT or SIGTERM raises ``KeyboardInterrupt``, and every
    later one is dropped: the work finished is then saved whole, however fast the second Ctrl-C
    follows. Both signals are caught even where they were ignored or left to the default (a
    background launch inherits an ignored SIGINT; a plain ``kill`` would lose the work). After
    a signal, both stay ignored when the block ends (the command is exiting with 130: a late
    second Ctrl-C must not kill it on its way out); else the handlers before are restored.
    Outside the main thread: nothing changes."""
    if not _settable():
        yield
        return
    stopped = False

    def first_only(signum: int, frame: object) -> None:
        nonlocal stopped
        if not stopped:
            stopped = True
            raise KeyboardInterrupt

    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    for signum in previous:
        signal.signal(signum, first_only)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            before = signal.SIG_DFL if handler is None else handler  # None: set outside Python
            signal.signal(signum, signal.SIG_IGN if stopped else before)


# -- paths -------------------------------------------------------------------------------------


def describe_error(error: OSError) -> str:
    """An ``OSError`` in a few words (a full disk named as such)."""
    if error.errno == errno.ENOSPC:
        return "no space left on the device"
    return (error.strerror or type(error).__name__).lower()


def check_writable(path: Path, flag: str = "--out", folder: bool = True) -> None:
    """``ValueError`` (one line) unless ``path`` can be written: a folder (``folder``) or a
    file, whose every existing part above it is a folder, the nearest of which lets us create
    a file (tried for real: permission bits do not stop root, a read-only mount does). Creates
    nothing that stays."""
    path = Path(path)
    if folder and path.exists() and not path.is_dir():
        raise ValueError(f"{flag} {path} is a file: name a folder (new or existing)")
    if not folder and path.is_dir():
        raise ValueError(f"{flag} {path} is a folder: name a file")
    if not folder and not path.name:
        raise ValueError(f"{flag} must name a file; got {str(path)!r}")
    here = path if folder and path.is_dir() else path.parent
    for above in [here, *here.parents]:
        if above.exists() or above.is_symlink():
            break
    if not above.is_dir():
        raise ValueError(f"{flag} {path}: {above} is not a folder")
    try:
        fd, probe = tempfile.mkstemp(dir=above, prefix=_STAGING)
    except OSError as e:
        raise ValueError(f"{flag} {path}: cannot write in {above} ({describe_error(e)})") from None
    os.close(fd)
    os.unlink(probe)


# -- writing -----------------------------------------------------------------------------------


def write_file(path: Path, payload: bytes) -> None:
    """Write one results file atomically (temp file, then rename); :class:`NotWrittenError` with one
    line on a full disk or an unwritable path, the earlier file whole. Signals wait for it."""
    from odin_lab.files import write_atomic

    with held_interrupts():
        try:
            write_atomic(Path(path), payload)
        except OSError as e:
            raise NotWrittenError(
                f"cannot write {path} ({describe_error(e)}); an earlier file there is unchanged"
            ) from e


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _clear_leftovers(out: Path) -> None:
    """Staging folders of a process killed mid-write (``kill -9``): never part of a result."""
    for entry in out.iterdir():
        for prefix in (_STAGING, _OLD):
            if entry.name.startswith(prefix):
                pid = entry.name[len(prefix) :].split("-")[0]
                if pid.isascii() and pid.isdigit() and not _alive(int(pid)):
                    _remove(entry)


@contextlib.contextmanager
def results_folder(
    out: Path,
    owned: Iterable[str],
    provenance: dict | None = None,
    interrupted: bool = False,
    hold: bool = True,
) -> Iterator[Path]:
    """Yield a staging folder to write a result into; when the block ends, move its entries
    into ``out`` and remove the entries of ``owned`` (the names the study writes) that it does
    not hold: ``out`` then holds this result whole. On an exception the staging folder is
    removed and ``out`` is left as it was (an ``OSError`` becomes :class:`NotWrittenError`).
    ``provenance``: written as ``provenance.json`` with the result. SIGINT and SIGTERM wait for
    the whole write; ``interrupted``: the write saves the work of an interrupted study, and a
    signal during it is dropped (the study is stopping anyway). ``hold=False``: signals reach
    the block (a study that plays inside it: the showcase); the move itself still holds them."""
    out = Path(out)
    created = not out.exists()
    held = held_interrupts(deliver=not interrupted) if hold else contextlib.nullcontext()
    with held:
        try:
            out.mkdir(parents=True, exist_ok=True)
            _clear_leftovers(out)
            stage = Path(tempfile.mkdtemp(dir=out, prefix=f"{_STAGING}{os.getpid()}-"))
        except OSError as e:
            if created:
                with contextlib.suppress(OSError):
                    out.rmdir()
            raise NotWrittenError(
                f"cannot write the results folder {out}/ ({describe_error(e)})"
            ) from e
        try:
            try:
                yield stage
                if provenance is not None:
                    payload = json.dumps(provenance, indent=1) + "\n"
                    (stage / "provenance.json").write_text(payload)
                with held_interrupts(deliver=not interrupted):
                    _move_into(stage, out, set(owned))
                    committed.append(out)  # before a signal held meanwhile is delivered
            except OSError as e:
                kept = "nothing was written" if created else "the earlier result there is unchanged"
                raise NotWrittenError(
                    f"cannot write the results in {out}/ ({describe_error(e)}); {kept}"
                ) from e
        except BaseException:
            _remove(stage)
            if created:
                with contextlib.suppress(OSError):
                    out.rmdir()  # ours, and empty: the command leaves no trace
            raise


def _move_into(stage: Path, out: Path, owned: set[str]) -> None:
    """The entries of ``stage`` into ``out`` (a folder entry replaces the old one whole), then
    the owned entries of an earlier result that this one lacks removed."""
    new = sorted(entry.name for entry in stage.iterdir())
    for name in new:
        source, target = stage / name, out / name
        if source.is_dir() and target.exists():
            old = out / f"{_OLD}{os.getpid()}-{name}"
            os.replace(target, old)
            os.replace(source, target)
            _remove(old)
        else:
            os.replace(source, target)
    for name in owned - set(new):
        if (out / name).exists() or (out / name).is_symlink():
            _remove(out / name)
    stage.rmdir()


def interrupted_by(error: BaseException) -> bool:
    """Whether ``error`` was raised while a ``KeyboardInterrupt`` was handled (a write of the
    work kept after Ctrl-C that failed: the command exits 130, not 2)."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, KeyboardInterrupt):
            return True
        seen.add(id(error))
        error = error.__context__ or error.__cause__
    return False


__all__ = [
    "Interrupted", "NotWrittenError", "check_writable", "committed", "describe_error",
    "held_interrupts",
    "interrupted_by", "results_folder", "stop_once", "write_file",
]  # fmt: skip
