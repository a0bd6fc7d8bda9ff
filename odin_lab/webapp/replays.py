"""Recorded games for the replay viewer: the records files under the server's folders, and each
game as frames to step through from one seat's view or with every hand open.

Files are found by a scan of the folders (``*.json`` whose head names the records format, at
most :data:`MAX_FILES`, hidden folders skipped) and named by *keys*: the folder's label, a
slash, the file's path inside it (``saved/game-….json``, ``records/t1/tournament.json``). A
request names a file by its key only, and a key is looked up among the scanned ones, so no
request can reach a file outside the folders. Files are read by
:func:`odin_lab.evaluation.records.load_records` (JSON only, nothing executed) and cached while
their size and modification time stay the same.

A game's frames are the states between its decisions: frame 0 is the deal, frame ``k`` the
state after decision ``k`` (forced ones included), with that decision's public account
(:func:`odin_lab.webapp.views.describe`). The games are finished (or stopped) games, so a view with
every hand open (``viewer=None``) is allowed here; the view of one seat hides the others'
hands exactly as during play.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from pathlib import Path

from odin_lab.evaluation.records import RECORDS_FORMAT, RecordsFile, load_records, replay_steps
from odin_lab.webapp.errors import RequestError
from odin_lab.webapp.views import Moment, describe, seat_view

MAX_FILES = 2000
"""At most this many JSON files are looked at per scan (the rest are not listed)."""
HEAD_BYTES = 512
"""A records file names its format in its first bytes (``records_text`` writes it first)."""
_CACHED = 8
"""Loaded files and replayed games kept in memory (the least recently used goes first)."""


class Catalogue:
    """The records files under some labelled folders (label -> folder)."""

    def __init__(self, roots: dict[str, Path]):
        for label in roots:
            if not label or "/" in label:
                raise ValueError(f"a folder label is a non-empty name without '/'; got {label!r}")
        self.roots = {label: Path(folder) for label, folder in roots.items()}
        self._files: OrderedDict[tuple, RecordsFile | str] = OrderedDict()
        self._games: OrderedDict[tuple, list] = OrderedDict()
        self._lock = threading.Lock()

    def key_of(self, path: Path) -> str:
        """The key of a file under one of the folders (``ValueError`` if it is under none)."""
        path = Path(path).resolve()
        for label, root in self.roots.items():
            if path.is_relative_to(root.resolve()):
                return f"{label}/{path.relative_to(root.resolve()).as_posix()}"
        raise ValueError(f"{path} is in none of the records folders")

    def _scan(self) -> dict[str, Path]:
        """Every records file's key -> path, in folder order, then by path."""
        found: dict[str, Path] = {}
        seen: set[Path] = set()
        looked = 0
        for label, root in self.roots.items():
            if not root.is_dir():
                continue
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                for name in sorted(files):
                    if not name.endswith(".json") or name.startswith("."):
                        continue
                    looked += 1
                    if looked > MAX_FILES:
                        return found
                    path = Path(folder, name)
                    real = path.resolve()
                    if real in seen or not _is_records_file(path):
                        continue
                    seen.add(real)
                    found[f"{label}/{path.relative_to(root).as_posix()}"] = path
        return found

    def files(self) -> list[dict]:
        """One entry per records file: ``file`` (its key), ``games``, ``players``, ``specs``,
        ``modified`` (seconds since the epoch), ``error`` (why it cannot be replayed, or
        ``None``). The newest first."""
        out = []
        for key, path in self._scan().items():
            try:
                loaded, modified = self._load(path), path.stat().st_mtime
            except OSError:  # removed since the scan
                continue
            entry: dict = {"file": key, "modified": modified}
            if isinstance(loaded, str):
                entry.update(games=0, players=None, specs=[], error=loaded)
            else:
                entry.update(
                    games=len(loaded.games),
                    players=loaded.config.players,
                    specs=list(loaded.specs),
                    error=None,
                )
            out.append(entry)
        return sorted(out, key=lambda e: -e["modified"])

    def open(self, key: str) -> tuple[Path, RecordsFile]:
        """The path and contents of the file ``key``; ``RequestError`` 404 for a key that is
        not a listed file, 422 for a file that cannot be read as records."""
        path = self._scan().get(key)
        try:
            loaded = self._load(path) if path is not None else None
        except OSError:  # removed since the scan
            loaded = None
        if path is None or loaded is None:
            raise RequestError(404, f"no records file {key[:200]!r}: pick one from the list")
        if isinstance(loaded, str):
            raise RequestError(422, loaded)
        return path, loaded

    def _load(self, path: Path) -> RecordsFile | str:
        """The file's records, or the one-line reason it cannot be loaded (cached)."""
        stat = path.stat()
        stamp = (str(path.resolve()), stat.st_mtime_ns, stat.st_size)
        with self._lock:
            if stamp in self._files:
                self._files.move_to_end(stamp)
                return self._files[stamp]
        try:
            loaded: RecordsFile | str = load_records(path)
        except ValueError as error:
            loaded = str(error).replace(str(path), path.name)
        with self._lock:
            self._files[stamp] = loaded
            while len(self._files) > _CACHED:
                self._files.popitem(last=False)
        return loaded

    def frames(self, key: str, index: object, seat: object) -> dict:
        """Game ``index`` of file ``key`` as frames seen by ``seat`` (a seat number, or
        ``"all"`` for every hand open). ``RequestError`` 400 for a bad index or seat, 404 for
        an unknown file, 422 for a game that does not replay."""
        path, records = self.open(key)
        count = len(records.games)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise RequestError(
                400, f"game must be 0-{count - 1} (the file holds {count}); got {index!r}"
            )
        n = records.config.players
        if seat == "all":
            viewer = None
        elif isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < n:
            viewer = seat
        else:
            raise RequestError(400, f"seat must be 'all' or a seat 0-{n - 1}; got {seat!r}")
        record = records.games[index]
        steps = self._steps(path, index, records)
        names = [f"{records.specs[record.agents[s]]} (seat {s})" for s in range(n)]
        frames = [{"view": seat_view(steps[0].game, names, viewer), "event": None}]
        for before, after in zip(steps, steps[1:]):
            event = describe(
                Moment.of(before.game), before.action, after.game, names, before.forced
            )
            frames.append({"view": seat_view(after.game, names, viewer), "event": event})
        return {
            "file": key,
            "game": index,
            "games": count,
            "names": names,
            "seed": str(record.seed),
            "totals": list(record.totals),
            "winners": list(record.winners),
            "viewer": viewer,
            "frames": frames,
        }

    def _steps(self, path: Path, index: int, records: RecordsFile) -> list:
        stat = path.stat()
        stamp = (str(path.resolve()), stat.st_mtime_ns, stat.st_size, index)
        with self._lock:
            if stamp in self._games:
                self._games.move_to_end(stamp)
                return self._games[stamp]
        try:
            steps = replay_steps(records.games[index], records.config)
        except ValueError as error:
            raise RequestError(422, f"game {index} does not replay: {error}") from None
        with self._lock:
            self._games[stamp] = steps
            while len(self._games) > _CACHED:
                self._games.popitem(last=False)
        return steps


def _is_records_file(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            head = f.read(HEAD_BYTES)
    except OSError:
        return False
    return f'"{RECORDS_FORMAT}"'.encode() in head


__all__ = ["Catalogue", "MAX_FILES"]
