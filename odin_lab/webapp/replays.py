"""Recorded games for the replay viewer: the records files under the server's folders, and each
game as frames to step through from one seat's view or with every hand open.

Files are found by a scan of the folders (``*.json`` whose head names the records format, at
most :data:`MAX_FILES`, hidden folders skipped) and named by *keys*: the folder's label, a
slash, the file's path inside it (``saved/game-….json``, ``records/t1/tournament.json``). A
request names a file by its key only, and a key is looked up among the scanned ones, so no
request can reach a file outside the folders: only regular files are listed (a FIFO, a device,
a socket is skipped without being opened for reading), folders linked from inside are not
entered, and a link to a file is listed only when the file it leads to is inside one of the
folders (a link loop or a dangling link is skipped). Files are read by
:func:`odin_lab.evaluation.records.parse_records` from at most :data:`MAX_FILE_BYTES` bytes
(JSON only, nothing executed); a larger one is listed with the reason it cannot be replayed.

A game's frames are the states between its decisions: frame 0 is the deal, frame ``k`` the
state after decision ``k`` (forced ones included), with that decision's public account
(:func:`odin_lab.webapp.views.describe`). The games are finished (or stopped) games, so a view with
every hand open (``viewer=None``) is allowed here; the view of one seat hides the others'
hands exactly as during play.

Limits, so that no request costs more than it can state: a scan walks at most
:data:`MAX_SCAN_ENTRIES` names and looks at :data:`MAX_FILES` JSON files, a listing reads at
most :data:`LIST_BYTES` of files it has not read before (one listing at a time; each file's
entry is kept while the file is unchanged), a replay answers at most
:data:`MAX_FRAMES` frames and :data:`MAX_REPLAY_BYTES` bytes of JSON (a longer game is refused
with 422 and told by ``evaluate.py replay``), at most :data:`REPLAYS_AT_ONCE` replays are built
at a time (another request meanwhile gets 503), and the files and answers kept for the next
request hold at most :data:`CACHE_BYTES` bytes of memory. A file's bytes say little about its
memory (``{},`` is 3 bytes of text and 75 of objects), so memory is what is bounded
(:mod:`odin_lab.webapp.footprint`): a file is parsed only when the bound of its parse from its
text is at most :data:`MAX_PARSE_BYTES`, one file at a time, and is counted in the cache at
the memory its records take, keeping of it only what the web app reads. A game the web app
plays (threshold 100 at most) stays well inside these limits.
"""

from __future__ import annotations

import json
import os
import re
import stat
import threading
from collections import OrderedDict
from pathlib import Path

from odin_env.files import read_head
from odin_lab.evaluation.limits import read_bounded, size_text
from odin_lab.evaluation.records import RECORDS_FORMAT, RecordsFile, iter_steps, parse_records
from odin_lab.webapp.errors import RequestError
from odin_lab.webapp.footprint import footprint, trimmed
from odin_lab.webapp.views import Moment, describe, seat_view

MAX_FILES = 2000
"""At most this many JSON files are looked at per scan (the rest are not listed)."""
MAX_SCAN_ENTRIES = 50_000
"""At most this many names (files and folders) are walked per scan, JSON or not."""
LIST_BYTES = 128 * 2**20
"""At most this many bytes of files not read before are read for one listing; the files past
it are listed as not read yet (the next listing goes on)."""
MAX_FILE_BYTES = 32 * 2**20
"""The largest records file the web app reads (a tournament of about 15,000 games to 15)."""
MAX_FRAMES = 10_000
"""The most frames one replay answers (a 6-player game to 100 between random players has about
4,300)."""
MAX_REPLAY_BYTES = 32 * 2**20
"""The largest replay answer, in bytes of JSON."""
REPLAYS_AT_ONCE = 2
"""Replays built at the same time; a request beyond them is answered 503 at once."""
MAX_PARSE_BYTES = 20 * MAX_FILE_BYTES
"""The most memory parsing one records file may take, by :func:`odin_env.files.
json_parse_bound` (through :func:`odin_lab.evaluation.limits.parse_json`, with the readers' own
bound): a tournament's file bounds at 11-15 times its size (it takes 6-8), a file of
empty objects at about 90 (it takes 25)."""
CACHE_BYTES = 64 * 2**20
"""Loaded files (counted by the memory their records take) and replay answers (by their bytes)
kept for the next request."""
HEAD_BYTES = 512
"""A records file names its format in its first bytes (``records_text`` writes it first)."""
_SUMMARIES = MAX_FILES
"""One listing entry is kept per file (a few hundred bytes each) while the file is unchanged."""


class Catalogue:
    """The records files under some labelled folders (label -> folder)."""

    def __init__(self, roots: dict[str, Path]):
        for label in roots:
            if not label or "/" in label:
                raise ValueError(f"a folder label is a non-empty name without '/'; got {label!r}")
        self.roots = {label: Path(folder) for label, folder in roots.items()}
        self._cache: OrderedDict[tuple, tuple[object, int]] = OrderedDict()
        self._cached_bytes = 0
        self._summaries: OrderedDict[tuple, dict] = OrderedDict()
        self._lock = threading.Lock()
        self._listing = threading.Lock()
        self._parsing = threading.Lock()
        self._building = threading.BoundedSemaphore(REPLAYS_AT_ONCE)

    def key_of(self, path: Path) -> str:
        """The key of a file under one of the folders (``ValueError`` if it is under none)."""
        path = Path(path).resolve()
        for label, root in self.roots.items():
            if path.is_relative_to(root.resolve()):
                return f"{label}/{path.relative_to(root.resolve()).as_posix()}"
        raise ValueError(f"{path} is in none of the records folders")

    def _inside(self, path: Path) -> Path | None:
        """The real path of ``path`` when it is a regular file inside one of the folders, else
        ``None`` (a link out of them, a link loop, a dangling link, a FIFO, a device)."""
        try:
            real = path.resolve(strict=True)
            mode = os.stat(real).st_mode
        except (OSError, RuntimeError):  # gone, unreadable, a link loop
            return None
        if not stat.S_ISREG(mode):
            return None
        for root in self.roots.values():
            try:
                if real.is_relative_to(root.resolve(strict=True)):
                    return real
            except (OSError, RuntimeError):
                continue
        return None

    def _scan(self) -> dict[str, Path]:
        """Every records file's key -> real path, in folder order, then by path."""
        found: dict[str, Path] = {}
        seen: set[Path] = set()
        looked = walked = 0
        for label, root in self.roots.items():
            if not root.is_dir():
                continue
            for folder, dirs, files in os.walk(root):  # links to folders are not entered
                walked += len(dirs) + len(files)
                if walked > MAX_SCAN_ENTRIES:
                    return found
                dirs[:] = sorted(d for d in dirs if not d.startswith("."))
                # A file is listed under its own name before any link to it.
                for name in sorted(files, key=lambda n: (os.path.islink(Path(folder, n)), n)):
                    if not name.endswith(".json") or name.startswith("."):
                        continue
                    looked += 1
                    if looked > MAX_FILES:
                        return found
                    path = Path(folder, name)
                    real = self._inside(path)
                    if real is None or real in seen or not _is_records_file(real):
                        continue
                    seen.add(real)
                    found[f"{label}/{path.relative_to(root).as_posix()}"] = real
        return found

    def files(self) -> list[dict]:
        """One entry per records file: ``file`` (its key), ``games``, ``players``, ``specs``,
        ``modified`` (seconds since the epoch), ``error`` (why it cannot be replayed, or
        ``None``). The newest first. One listing is built at a time; each file's entry is kept
        while its size and modification time stay the same."""
        out, budget = [], [LIST_BYTES]
        with self._listing:
            for key, path in self._scan().items():
                try:
                    entry = self._summary(path, budget)
                except OSError:  # removed since the scan
                    continue
                out.append({"file": key, **entry})
        return sorted(out, key=lambda e: -e["modified"])

    def _summary(self, path: Path, budget: list[int]) -> dict:
        """The listing entry of ``path`` but its key; reading it spends its size from
        ``budget[0]`` (a file past the budget is listed as not read yet)."""
        info = path.stat()
        stamp = (str(path), info.st_mtime_ns, info.st_size)
        with self._lock:
            if stamp in self._summaries:
                self._summaries.move_to_end(stamp)
                return self._summaries[stamp]
        read = info.st_size <= MAX_FILE_BYTES  # a larger one is refused from its size alone
        if read and info.st_size > budget[0]:
            return {
                "modified": info.st_mtime,
                "games": 0,
                "players": None,
                "specs": [],
                "error": f"not read yet: a listing reads {size_text(LIST_BYTES)} at most; reload",
            }
        budget[0] -= info.st_size if read else 0
        loaded = self._load(path)
        entry: dict = {"modified": info.st_mtime}
        if isinstance(loaded, str):
            entry.update(games=0, players=None, specs=[], error=loaded)
        else:
            entry.update(
                games=len(loaded.games),
                players=loaded.config.players,
                specs=[spec[:80] for spec in loaded.specs[:12]],  # a listing stays small
                error=None,
            )
        with self._lock:
            self._summaries[stamp] = entry
            while len(self._summaries) > _SUMMARIES:
                self._summaries.popitem(last=False)
        return entry

    def open(self, key: str) -> tuple[Path, RecordsFile]:
        """The path and contents of the file ``key``; ``RequestError`` 404 for a key that is
        not a listed file, 422 for a file that cannot be read as records."""
        return self._opened(key, self._scan().get(key))

    def _opened(self, key: str, path: Path | None) -> tuple[Path, RecordsFile]:
        """:meth:`open` of the file ``key`` found at ``path`` by a scan (``None``: not found)."""
        try:
            loaded = self._load(path) if path is not None else None
        except OSError:  # removed since the scan
            loaded = None
        if path is None or loaded is None:
            raise RequestError(404, f"no records file {key[:200]!r}: pick one from the list")
        if isinstance(loaded, str):
            raise RequestError(422, loaded)
        return path, loaded

    def _cached(self, stamp: tuple) -> object | None:
        with self._lock:
            if stamp in self._cache:
                self._cache.move_to_end(stamp)
                return self._cache[stamp][0]
        return None

    def _keep(self, stamp: tuple, value: object, size: int) -> None:
        if size > CACHE_BYTES:
            return
        with self._lock:
            if stamp in self._cache:
                return
            self._cache[stamp] = (value, size)
            self._cached_bytes += size
            while self._cached_bytes > CACHE_BYTES:
                self._cached_bytes -= self._cache.popitem(last=False)[1][1]

    def _load(self, path: Path) -> RecordsFile | str:
        """The file's records (:func:`~odin_lab.webapp.footprint.trimmed`), or the one-line
        reason it cannot be loaded; kept in the cache at their memory, parsed one at a time."""
        info = path.stat()
        stamp = ("file", str(path), info.st_mtime_ns, info.st_size)
        loaded = self._cached(stamp)
        if loaded is not None:
            return loaded  # type: ignore[return-value]
        # A parse's objects are the largest thing a request holds: one at a time bounds them.
        with self._parsing:
            loaded = self._cached(stamp)  # parsed meanwhile for another request
            if loaded is None:
                loaded, size = _parse(path)
                self._keep(stamp, loaded, size)
        return loaded  # type: ignore[return-value]

    def replay(self, key: str, game: int, seat: int | str) -> bytes:
        """The JSON answer of :meth:`frames` (built once per file, game and seat, then kept:
        a kept answer is sent without loading the file again); ``RequestError`` as
        :meth:`frames` gives it, and 503 when :data:`REPLAYS_AT_ONCE` replays are being built
        already."""
        path = self._scan().get(key)
        stamp = _answer_stamp(path, game, seat)
        answer = self._cached(stamp) if stamp else None
        if answer is not None:
            return answer  # type: ignore[return-value]
        path, records = self._opened(key, path)
        if not self._building.acquire(blocking=False):
            raise RequestError(503, "other replays are being built: try again in a moment")
        try:
            answer = self._frames_json(key, records, game, seat)
        finally:
            self._building.release()
        if stamp is not None:
            self._keep(stamp, answer, len(answer))
        return answer

    def frames(self, key: str, index: object, seat: object) -> dict:
        """Game ``index`` of file ``key`` as frames seen by ``seat`` (a seat number, or
        ``"all"`` for every hand open). ``RequestError`` 400 for a bad index or seat, 404 for
        an unknown file, 422 for a game that does not replay or is over the limits."""
        return json.loads(self._frames_json(key, self.open(key)[1], index, seat))

    def _frames_json(self, key: str, records: RecordsFile, index: object, seat: object) -> bytes:
        count = len(records.games)
        if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < count:
            raise RequestError(
                400, f"game must be 0-{count - 1} (the file holds {count}); got {index!r:.40}"
            )
        n = records.config.players
        if seat == "all":
            viewer = None
        elif isinstance(seat, int) and not isinstance(seat, bool) and 0 <= seat < n:
            viewer = seat
        else:
            raise RequestError(400, f"seat must be 'all' or a seat 0-{n - 1}; got {seat!r:.40}")
        record = records.games[index]
        names = [f"{records.specs[record.agents[s]]} (seat {s})" for s in range(n)]
        head = {
            "file": key,
            "game": index,
            "games": count,
            "names": names,
            "seed": str(record.seed),
            "totals": list(record.totals),
            "winners": list(record.winners),
            "viewer": viewer,
        }
        frames, size = [], 0
        too_long = (
            f"game {index} is too long for the web replay (over {MAX_FRAMES:,} frames or "
            f"{size_text(MAX_REPLAY_BYTES)}): tell it with evaluate.py replay"
        )

        def add(frame: dict) -> None:
            nonlocal size
            text = json.dumps(frame, separators=(",", ":"))
            size += len(text) + 1
            if size > MAX_REPLAY_BYTES:
                raise RequestError(422, too_long)
            frames.append(text)

        if len(record.actions) >= MAX_FRAMES:  # a frame per action at least: refused at once
            raise RequestError(422, too_long)
        previous = None
        try:
            for step in iter_steps(record, records.config):
                if len(frames) == MAX_FRAMES:
                    raise RequestError(422, too_long)
                event = None
                if previous is not None:
                    event = describe(
                        Moment.of(previous.game), previous.action, step.game, names, previous.forced
                    )
                add({"view": seat_view(step.game, names, viewer), "event": event})
                previous = step
        except ValueError as error:
            raise RequestError(422, f"game {index} does not replay: {error}") from None
        text = json.dumps(head, separators=(",", ":"))[:-1]
        return f'{text},"frames":[{",".join(frames)}]}}'.encode()


def _answer_stamp(path: Path | None, game: int, seat: int | str) -> tuple | None:
    """The cache's key of a replay answer of the file at ``path`` while it is unchanged;
    ``None`` for a file not found or removed since the scan (nothing of it is kept)."""
    try:
        info = path.stat() if path is not None else None
    except OSError:
        info = None
    if info is None:
        return None
    return ("replay", str(path), info.st_mtime_ns, info.st_size, game, seat)


def _parse(path: Path) -> tuple[RecordsFile | str, int]:
    """The records of the file ``path`` or the one-line reason it cannot be loaded, and the
    memory either takes. A file whose parse could take over :data:`MAX_PARSE_BYTES` is refused
    from its text, before any of it is parsed."""
    try:
        raw = read_bounded(path, MAX_FILE_BYTES, follow=False)
        loaded = trimmed(parse_records(raw, path.name, MAX_PARSE_BYTES))
    except ValueError as error:
        reason = str(error).replace(str(path), path.name)
        if "over the limit" in reason:
            reason += " for the web app: replay it with evaluate.py replay"
        return reason, len(reason)
    return loaded, footprint(loaded)


_NUMBER = re.compile(r"[0-9]{1,9}")
"""A game or seat number in a query: ASCII digits only (``"²".isdigit()`` is true), nine at
most (a file holds at most ``limits.MAX_RECORDS_GAMES`` games)."""


def replay_query(game: str, seat: str) -> tuple[int, int | str]:
    """The game index and the viewer (a seat number or ``"all"``) of a replay query's strings;
    ``RequestError(400)`` for anything else. The file's own ranges are checked later."""
    if not _NUMBER.fullmatch(game):
        raise RequestError(400, f"game must be a game number >= 0; got {game[:40]!r}")
    if seat != "all" and not _NUMBER.fullmatch(seat):
        raise RequestError(400, f"seat must be 'all' or a seat number; got {seat[:40]!r}")
    return int(game), (seat if seat == "all" else int(seat))


def _is_records_file(path: Path) -> bool:
    """Whether the regular file ``path`` names the records format in its head (never waits:
    a file that turned into a FIFO since the check is not read)."""
    try:
        head = read_head(path, HEAD_BYTES, follow=False)
    except (OSError, ValueError):
        return False
    return f'"{RECORDS_FORMAT}"'.encode() in head


__all__ = [
    "CACHE_BYTES", "Catalogue", "LIST_BYTES", "MAX_FILES", "MAX_FILE_BYTES", "MAX_FRAMES",
    "MAX_PARSE_BYTES", "MAX_REPLAY_BYTES", "MAX_SCAN_ENTRIES", "REPLAYS_AT_ONCE", "replay_query",
]  # fmt: skip
