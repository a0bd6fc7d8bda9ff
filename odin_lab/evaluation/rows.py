"""The studies made of rows (seating, thresholds, the Goat): each row a tournament of its own,
played in a planned order and saved as it finishes, so that ``kill -9`` costs only the row in
flight; Ctrl-C saves the rows finished; ``--resume`` continues a partial study.

A study gives :func:`play_rows` its plan (each row's identity: the settings that make it, such
as ``{"players": 4, "threshold": 15}``), a function that plays one row, and a function that
writes the rows so far (``partial``: marked ``"partial": true``, no figure). A row is a summary
of games, not the games, so a resumed row is checked against the study's settings and its place
in the plan (:func:`resumed_rows`), not replayed: a partial file is data the study wrote.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from odin_lab.evaluation.limits import MAX_SUMMARY_BYTES, read_json
from odin_lab.evaluation.results import Interrupted


def play_rows(
    plan: Sequence[dict],
    play: Callable[[dict], dict],
    save: Callable[[list[dict], bool, bool], None],
    done: Sequence[dict] = (),
) -> list[dict]:
    """The rows of ``plan`` after the ``done`` ones (a resumed study's), each ``play(identity)``
    in order; after each row, ``save(rows, partial, stopping)``: partial until the last row,
    ``stopping`` when Ctrl-C is stopping the study (a signal during that write is dropped).
    Ctrl-C: the rows finished are saved and :class:`Interrupted` raised saying so (nothing
    saved and an empty one when no row is); after the last row, the ``KeyboardInterrupt`` is
    raised again once the whole result is written."""
    rows, saved = list(done), len(done)
    try:
        for identity in plan[len(rows) :]:
            rows.append(play(identity))
            save(rows, len(rows) < len(plan), False)
            saved = len(rows)
    except KeyboardInterrupt:
        if not rows:
            raise Interrupted("") from None
        if saved < len(rows):
            save(rows, len(rows) < len(plan), True)
        if len(rows) == len(plan):
            raise
        raise Interrupted(f"the rows finished ({len(rows)} of {len(plan)})") from None
    return rows


def resumed_rows(path: Path, expected: dict, plan: Sequence[dict], field: str) -> list[dict]:
    """The finished rows (``field`` of the summary) of the partial study in ``path``, checked:
    a one-line ``ValueError`` when there is none, when it is unreadable or over
    :data:`~odin_lab.evaluation.limits.MAX_SUMMARY_BYTES`, when it is complete, when one of the
    ``expected`` summary's entries (the study's settings; its ``field`` and ``partial`` aside)
    differs from the saved one's, and when its rows are not the first rows of ``plan`` (each
    row's identity entries) or are all of them."""
    try:
        saved = read_json(path, MAX_SUMMARY_BYTES)
    except (OSError, ValueError) as e:
        raise ValueError(
            f"--resume: cannot read {path} ({e}); start afresh without --resume"
        ) from None
    if not isinstance(saved, dict) or not isinstance(saved.get(field), list):
        raise ValueError(f"--resume: {path} is not a study's summary (no {field!r} list)")
    if saved.get("partial") is not True:
        raise ValueError(f"--resume: {path} is complete; nothing to resume")
    for name, value in expected.items():
        found = saved.get(name)
        if name in (field, "partial") or found == value:
            continue
        if isinstance(found, dict) and isinstance(value, dict):  # name the setting that differs
            setting = next(k for k in [*value, *found] if found.get(k) != value.get(k))
            name, found, value = f"{name} {setting}", found.get(setting), value.get(setting)
        raise ValueError(
            f"--resume: {path} was made with {name} {_short(found)}, not {_short(value)}"
        )
    rows = saved[field]
    if not rows or len(rows) >= len(plan):
        raise ValueError(
            f"--resume: {path} holds {len(rows)} rows; a partial study of {len(plan)} rows holds "
            f"1 to {len(plan) - 1}"
        )
    for k, (row, identity) in enumerate(zip(rows, plan)):
        if not isinstance(row, dict) or any(row.get(n) != v for n, v in identity.items()):
            raise ValueError(
                f"--resume: {path}: {field}[{k}] is not the study's row {k} ({identity}); start "
                "afresh without --resume"
            )
    return rows


def _short(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


__all__ = ["play_rows", "resumed_rows"]
