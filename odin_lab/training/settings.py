"""Training settings declared with the values they may take, checked by one function.

A settings dataclass (:class:`odin_lab.training.config.TrainConfig`, each algorithm's section)
declares a field with :func:`setting`: its default and its :class:`Allowed` values (both of
:mod:`odin_lab.settings`, which every declared setting of the lab uses; here, the training
ranges). :func:`check_settings` checks every field of a settings object against them (the one range
check of the lab's training settings; what depends on several settings stays in the section's
``check``), and ``train.py`` shows them in each flag's help (:func:`odin_lab.cli.add_fields`
reads the field's ``allowed``). A section lists the settings it retired in :class:`Retired`
entries, so that a run folder of the lab before is read or refused in one line.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from odin_lab.settings import Allowed, check_settings, setting

INF = math.inf
MAX_WIDTH = 4096
MAX_LAYERS = 8
"""A network's hidden layers: 1 to :data:`MAX_LAYERS` of 1 to :data:`MAX_WIDTH` units each. Why:
memory, known before a run starts; the largest network, 8 layers of 4,096, holds about
7 x 4,096^2 = 117 M weights (470 MB of float32), under 2 GB with its gradients and Adam's two
moments."""
MAX_BATCH = 65_536
"""The largest minibatch: 65,536 rows x 4,096 units x 4 bytes = 1 GiB per layer's activations
at the widest network."""
MAX_DECISIONS = 10**6
"""The most learner decisions gathered for one update (a rollout, DMC's or ExIt's decisions per
update): each holds an observation of 574 float32, so at most about 2.3 GB."""
MAX_RATE = 10.0
"""The largest learning rate (a step size past it only diverges; ``1e308`` overflows torch)."""
MAX_COEF = 1e6
"""The largest loss weight, clip range or gradient norm (finite in float32 arithmetic)."""
RETIRED_AT = "282f95f"
"""The last commit that trained with the retired settings: the findings pages' commands of them
run there."""


@dataclass(frozen=True)
class Retired:
    """A setting, or some values of one, that the lab no longer trains with; ``page``: the
    findings page that holds what they measured (their commands run at :data:`RETIRED_AT`).

    ``values``: the retired values of a setting that stays. Without them the setting itself is
    gone, and ``kept`` is the value of it that the lab still does: a run stored with that value
    is read without it, a run stored with another is refused."""

    page: str
    kept: Any = None
    values: tuple = ()

    def refusal(self, name: str, value: object) -> str | None:
        """The one line refusing ``name`` = ``value`` of a run, or None where it still holds."""
        if self.values and value not in self.values:
            return None
        same = value == self.kept and isinstance(value, bool) == isinstance(self.kept, bool)
        if not self.values and same:
            return None
        return self.line(f"{name} {value!r}")

    def line(self, what: str) -> str:
        """``what`` was retired, and where its findings are, in one line."""
        return (
            f"{what} was retired: {self.page} holds what it measured (its commands run at "
            f"commit {RETIRED_AT})"
        )


def drop_retired(settings: dict[str, Any], retired: dict[str, Retired]) -> dict[str, Any]:
    """A stored section's ``settings`` without the retired settings that hold today's value;
    ``ValueError`` (one line naming the setting and its findings page) for any other."""
    out = dict(settings)
    for name, entry in retired.items():
        if name not in out:
            continue
        refused = entry.refusal(name, out[name])
        if refused is not None:
            raise ValueError(refused)
        if not entry.values:
            del out[name]
    return out


__all__ = [
    "INF", "MAX_BATCH", "MAX_COEF", "MAX_DECISIONS", "MAX_LAYERS", "MAX_RATE", "MAX_WIDTH",
    "RETIRED_AT", "Allowed", "Retired", "check_settings", "drop_retired", "setting",
]  # fmt: skip
