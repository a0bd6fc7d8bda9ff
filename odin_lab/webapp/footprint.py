"""How much memory a records file takes in the web app, before and after it is parsed.

A records file's bytes say little about its memory: a game record's text of about 1.7 KB
becomes about 8 KB of Python objects, and ``{},`` (3 bytes) a dict of about 75. So the web app
bounds both sides of a parse in memory, not in bytes:

- :func:`parse_bound`, from the text alone, before anything is parsed: an upper bound of what
  ``json.loads`` allocates for it, from its count of the bytes that open an object, a list or a
  string, or separate items (each one's largest cost in CPython: an object 232 bytes with its
  first entries, a list 96, an item 40, a dict entry 96 more, a string 24), and its characters:
  ``json.loads`` decodes the whole text first, then copies each string out of it (one with an
  escape through a buffer that grows and widens: up to 2.5 times), and CPython stores a text or
  a string as wide as its widest character (1 byte each, 2 outside Latin-1, 4 outside the
  BMP). It over-counts (those bytes inside strings count too): against ``tracemalloc``, 1.0-5x
  the peak for every shape tried and 1.6-1.8x for tournaments' files;
- :func:`footprint`, of what is kept once loaded: the games' tuples and integers, the specs and
  the other keys kept (:func:`trimmed`).

Both are estimates in bytes; :mod:`odin_lab.webapp.replays` refuses a file whose
:func:`parse_bound` is over its limit and counts a loaded file in its cache at its
:func:`footprint`.
"""

from __future__ import annotations

import re
import sys
from dataclasses import fields, replace

from odin_lab.evaluation.limits import MAX_ACTIONS
from odin_lab.evaluation.records import RecordsFile
from odin_lab.evaluation.tournament import GameRecord

_OBJECT, _LIST, _ITEM, _ENTRY, _QUOTE = 232, 96, 40, 96, 12
"""Bytes allocated at most per ``{``, ``[``, ``,``, ``:`` and ``"`` of the text (CPython 3.11,
64-bit, the garbage collector's header included)."""
_ASTRAL, _WIDE = re.compile(rb"[\xf0-\xf4]"), re.compile(rb"[\xc4-\xef]")
"""A character outside the BMP (4 bytes of UTF-8), or outside Latin-1 (2 or 3 bytes)."""
_ASTRAL_ESCAPE, _WIDE_ESCAPE = re.compile(rb"\\u[dD][89abAB]"), re.compile(rb"\\u(?!00)")
"""The same escaped: a high surrogate, or any ``\\u`` but ``\\u00XX``."""
_PARSER = 4096
"""What a parse allocates whatever the text (the decoder's own objects)."""
_SHARED = 256
"""CPython keeps one int object of each value from -5 to 256: another one costs nothing."""
_INT = 32
"""The bytes of an int of up to 60 bits (``sys.getsizeof`` says 28 up to 30, which the
allocator rounds up to 32)."""
_LONG = 2**60
"""An int from here on takes more than :data:`_INT`."""
KEPT_EXTRA = ("hints",)
"""The keys beside the games that the web app reads (a review marks the steps hinted at)."""


def parse_bound(raw: bytes) -> int:
    """An upper bound, in bytes, of the memory ``json.loads(raw)`` takes (see the module)."""
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


__all__ = ["KEPT_EXTRA", "footprint", "parse_bound", "trimmed"]
