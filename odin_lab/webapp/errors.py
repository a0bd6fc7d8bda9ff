"""The one kind of refusal the web app sends: an HTTP status and a one-line message."""

from __future__ import annotations

import reprlib

_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 2, 40, 40, 40


class RequestError(Exception):
    """A request the server refuses; nothing was changed. ``status`` is the HTTP status (4xx;
    500: an outside agent of the game failed) and the message one line naming the problem and
    what is allowed."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def shown(value: object) -> str:
    """``value`` in a message: a short repr on one line, whatever its size or nesting."""
    return _REPR.repr(value)[:80]


def check_fields(body: object, allowed: dict[str, bool]) -> dict:
    """``body`` as a dict; ``RequestError(400)`` unless it is a JSON object whose keys are among
    ``allowed`` (name -> required) with every required one present."""
    names = ", ".join(allowed)
    if not isinstance(body, dict):
        raise RequestError(400, f"the request body must be a JSON object with fields {names}")
    for key in body:
        if key not in allowed:
            raise RequestError(400, f"unknown field {shown(key)}: allowed are {names}")
    for key, required in allowed.items():
        if required and key not in body:
            raise RequestError(400, f"missing field {key!r}: the fields are {names}")
    return body


def check_int(name: str, value: object, low: int, high: int) -> int:
    """``value`` if it is a JSON integer (not a bool, not a float) in ``low .. high``, else
    ``RequestError(400)`` naming the field and the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise RequestError(400, f"{name} must be an integer {low}-{high}; got {shown(value)}")
    return value


__all__ = ["RequestError", "check_fields", "check_int", "shown"]
