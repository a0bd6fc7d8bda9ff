"""How much memory a records file takes in the web app once it is loaded.

A records file's bytes say little about its memory: a game record's text of about 1.7 KB
becomes about 8 KB of Python objects, and ``{},`` (3 bytes) a dict of about 75. The parse
itself is bounded from the text before anything is parsed, as every reader of the lab bounds
it (:func:`odin_env.files.json_parse_bound`, through :func:`odin_lab.evaluation.records.
parse_records`, with the web app's limit :data:`odin_lab.webapp.replays.MAX_PARSE_BYTES`);
what is kept once loaded is :func:`footprint`: the games' tuples and integers, the specs and
the other keys kept (:func:`trimmed`), an estimate in bytes at which
:mod:`odin_lab.webapp.replays` counts a loaded file in its cache.
"""

from __future__ import annotations

import sys
from dataclasses import fields, replace

from odin_lab.evaluation.limits import MAX_ACTIONS
from odin_lab.evaluation.records import RecordsFile
from odin_lab.evaluation.tournament import GameRecord

_SHARED = 256
"""CPython keeps one int object of each value from -5 to 256: another one costs nothing."""
_INT = 32
"""The bytes of an int of up to 60 bits (``sys.getsizeof`` says 28 up to 30, which the
allocator rounds up to 32)."""
_LONG = 2**60
"""An int from here on takes more than :data:`_INT`."""
KEPT_EXTRA = ("hints",)
"""The keys beside the games that the web app reads (a review marks the steps hinted at)."""


def trimmed(records: RecordsFile) -> RecordsFile:
    """``records`` keeping of its other keys only :data:`KEPT_EXTRA`, and of ``hints`` only
    the steps a game can have (:func:`odin_lab.evaluation.review.hints_of` reads no other):
    whatever else a file holds beside its games is not kept in memory."""
    extra = {}
    hints = records.extra.get("hints")
    if isinstance(hints, list):
        extra["hints"] = [h for h in hints if type(h) is int and 0 <= h < MAX_ACTIONS]
    return replace(records, extra=extra)


_TUPLES = [f.name for f in fields(GameRecord) if f.name not in ("hands",)]


def footprint(records: RecordsFile) -> int:
    """The bytes a loaded (:func:`trimmed`) records file holds: every game record, its tuples
    and their integers, the specs and the hints. Linear in the values, a C loop over each."""
    size = sum(map(_size, [records, records.__dict__, records.games, records.specs]))
    size += sum(map(_size, [records.config, records.config.__dict__, *records.specs]))
    hints = records.extra.get("hints", [])
    size += _size(records.extra) + _size(hints) + _ints(hints)
    for game in records.games:
        size += _size(game) + _size(game.__dict__)
        for name in _TUPLES:
            value = getattr(game, name)
            if isinstance(value, tuple):
                size += _size(value) + _ints(value)
            else:  # deal, rotation, seed: any size a file gives
                size += _size(value)
        size += _size(game.hands) + sum(_size(hand) + _ints(hand) for hand in game.hands)
    return size


def _size(value: object) -> int:
    """``sys.getsizeof(value)`` as the allocator hands it out: in blocks of 16 bytes."""
    return -(-sys.getsizeof(value) // 16) * 16


def _ints(values: tuple | list) -> int:
    """The bytes of the int objects of ``values`` (non-negative ints, as the records hold), of
    any size: :data:`_INT` each, and a larger one's :func:`_size` besides."""
    own = list(filter(_SHARED.__lt__, values))
    return _INT * len(own) + sum(map(_size, filter(_LONG.__le__, own)))


__all__ = ["KEPT_EXTRA", "footprint", "trimmed"]
