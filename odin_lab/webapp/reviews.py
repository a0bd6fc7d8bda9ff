"""Game reviews for the web app: ``POST /api/review`` (:mod:`odin_lab.evaluation.review`).

A request names a records file by its key among the catalogue's files (the same lookup as a
replay: :meth:`odin_lab.webapp.replays.Catalogue.open`, so no path outside the folders is ever
read), a game and a seat. The review is the command line's (``evaluate.py review`` with its
default rollouts and seed 0), so the page and the terminal show the same numbers for a file.

Limits, so that no request costs more than it states: a game of more than
:data:`MAX_REVIEW_ACTIONS` moves is refused (422: review it with ``evaluate.py review``), one
review is built at a time (another request meanwhile gets 503), and the last
:data:`KEPT_REVIEWS` answers are kept for the next request while their file is unchanged.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

from odin_lab.evaluation.review import REVIEW_ROLLOUTS, check_choice, review_record
from odin_lab.webapp.errors import RequestError, check_fields
from odin_lab.webapp.replays import Catalogue

MAX_REVIEW_ACTIONS = 1500
"""The most moves (non-forced decisions, every seat's) of a game the web app reviews: a 4-player
game to 15 has about 100, one to 100 about 600; each of the seat's moves costs a search."""
REVIEWS_AT_ONCE = 1
"""Reviews built at the same time (each keeps a core busy for seconds)."""
KEPT_REVIEWS = 32
"""Answers kept for the next request (a few kB each)."""


def parse_review(body: object) -> tuple[str, object, object]:
    """``(file, game, seat)`` of a review request, or ``RequestError(400)``: ``file`` a string
    (a key of ``GET /api/records``); ``game`` and ``seat`` are checked against the file."""
    body = check_fields(body, {"file": True, "game": True, "seat": True})
    if not isinstance(body["file"], str):
        raise RequestError(400, "file must be a records file's name from the list (a string)")
    return body["file"], body["game"], body["seat"]


class Reviews:
    """Reviews of the catalogue's games (see the module docstring)."""

    def __init__(self, catalogue: Catalogue, rollouts: int = REVIEW_ROLLOUTS):
        self.catalogue, self.rollouts = catalogue, rollouts
        self._kept: OrderedDict[tuple, bytes] = OrderedDict()
        self._lock = threading.Lock()
        self._building = threading.BoundedSemaphore(REVIEWS_AT_ONCE)

    def review(self, key: str, game: object, seat: object) -> bytes:
        """The review of ``seat`` in game ``game`` of file ``key`` as JSON (the review of
        :func:`odin_lab.evaluation.review.review_record` with ``file``: the key). ``RequestError``
        404 for a file not listed, 400 for a game or seat out of range, 422 for a file that does
        not load, a game that does not replay or is over :data:`MAX_REVIEW_ACTIONS`, 503 while
        another review is built."""
        path, records = self.catalogue.open(key)
        try:
            check_choice(records, game, seat)
        except ValueError as error:
            raise RequestError(400, str(error)) from None
        record = records.games[game]  # type: ignore[index]
        if len(record.actions) > MAX_REVIEW_ACTIONS:
            raise RequestError(
                422,
                f"game {game} has {len(record.actions):,} moves, over the web review's "
                f"{MAX_REVIEW_ACTIONS:,}: review it with evaluate.py review",
            )
        info = path.stat()
        stamp = (str(path), info.st_mtime_ns, info.st_size, game, seat)
        with self._lock:
            if stamp in self._kept:
                self._kept.move_to_end(stamp)
                return self._kept[stamp]
        if not self._building.acquire(blocking=False):
            raise RequestError(503, "another review is being built: try again in a moment")
        try:
            result = review_record(records, game, seat, rollouts=self.rollouts)  # type: ignore[arg-type]
        except ValueError as error:
            raise RequestError(422, f"game {game} does not replay: {error}") from None
        finally:
            self._building.release()
        answer = json.dumps({"file": key, **result}, separators=(",", ":")).encode()
        with self._lock:
            self._kept[stamp] = answer
            while len(self._kept) > KEPT_REVIEWS:
                self._kept.popitem(last=False)
        return answer


__all__ = ["KEPT_REVIEWS", "MAX_REVIEW_ACTIONS", "REVIEWS_AT_ONCE", "Reviews", "parse_review"]
