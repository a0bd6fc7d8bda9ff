"""Settings declared with the values they may take, checked by one function: a settings
dataclass declares a field with :func:`setting` (its default and its :class:`Allowed` values);
:func:`check_settings` checks every field of a settings object against them (the one range
check), and a CLI shows them in each flag's help (:func:`odin_lab.cli.add_fields` reads the
field's ``allowed``; :func:`allowed_of` gives them to a flag written by hand). The training
settings (:mod:`odin_lab.training.settings`) and the exploit probe's
(:class:`odin_lab.evaluation.probe_settings.ProbeSettings`) are declared so. Stdlib only: a
core CLI's help reads them without the train extra."""

from __future__ import annotations

import math
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any

INF = math.inf


@dataclass(frozen=True)
class Allowed:
    """The values of one setting: a number from ``low`` to ``high`` (an integer where both are
    ``int``; ``above``: ``low`` itself excluded) or one of ``choices``; for a list setting,
    ``length`` members each so. ``None`` is allowed where the field's type allows it."""

    low: float | None = None
    high: float | None = None
    above: bool = False
    choices: tuple[str, ...] = ()
    length: tuple[int, int] | None = None

    @property
    def integer(self) -> bool:
        return type(self.low) is int and type(self.high) is int

    def member(self) -> str:
        """What one value (one member of a list) must be, in words."""
        if self.choices:
            return f"one of {', '.join(self.choices)}"
        if self.integer:
            return f"an integer {self.low:,}-{self.high:,}"
        if self.high == INF:
            return f"a finite number {'>' if self.above else '>='} {self.low:g}"
        return f"a finite number in {'(' if self.above else '['}{self.low:g}, {self.high:g}]"

    def __str__(self) -> str:
        if self.length is None:
            return self.member()
        low, high = self.length
        return f"{low}-{high} values, each {self.member()}"

    def holds(self, value: object) -> bool:
        """Whether ``value`` (one member) is allowed."""
        if self.choices:
            return isinstance(value, str) and value in self.choices
        if isinstance(value, bool) or not isinstance(value, int if self.integer else (int, float)):
            return False
        if not math.isfinite(value) or value > self.high:
            return False
        return value > self.low if self.above else value >= self.low


def setting(
    default: Any,
    low: float | None = None,
    high: float | None = None,
    *,
    above: bool = False,
    choices: tuple[str, ...] = (),
    length: tuple[int, int] | None = None,
) -> Any:
    """A settings dataclass's field: its default (a list is copied for each instance) and its
    :class:`Allowed` values (the arguments after ``default``)."""
    metadata = {"allowed": Allowed(low, high, above, tuple(choices), length)}
    if isinstance(default, list):
        return field(default_factory=lambda: list(default), metadata=metadata)
    return field(default=default, metadata=metadata)


def _nullable(hint: Any) -> bool:
    union = typing.get_origin(hint) in (typing.Union, types.UnionType)
    return union and type(None) in typing.get_args(hint)


def check_settings(settings: object, as_flags: bool = False) -> None:
    """``ValueError`` naming the first field of ``settings`` (a settings dataclass) whose value
    is not one of its :class:`Allowed` values (by its flag, ``--name-like-this``, when
    ``as_flags``), and those values."""
    hints = typing.get_type_hints(type(settings))
    for f in fields(settings):  # type: ignore[arg-type]
        allowed = f.metadata.get("allowed")
        value = getattr(settings, f.name)
        if allowed is None or (value is None and _nullable(hints[f.name])):
            continue
        if allowed.length is None:
            ok = allowed.holds(value)
        else:
            low, high = allowed.length
            ok = isinstance(value, (list, tuple)) and low <= len(value) <= high
            ok = ok and all(allowed.holds(v) for v in value)
        if not ok:
            unset = " (or unset)" if _nullable(hints[f.name]) else ""
            name = "--" + f.name.replace("_", "-") if as_flags else f.name
            raise ValueError(f"{name} must be {allowed}{unset}; got {value!r}")


def allowed_of(cls: type, name: str) -> Allowed:
    """The :class:`Allowed` values that dataclass ``cls`` declares for its field ``name``."""
    return next(f.metadata["allowed"] for f in fields(cls) if f.name == name)


__all__ = ["INF", "Allowed", "allowed_of", "check_settings", "setting"]
