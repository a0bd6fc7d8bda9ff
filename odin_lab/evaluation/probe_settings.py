"""What one best-response probe does (``evaluate.py exploit``'s flags), each setting declared
with the values it may take (:func:`odin_lab.settings.setting`) and checked by the one range
check (:func:`odin_lab.settings.check_settings`). The probe itself trains, so it lives with the
train extra (:mod:`odin_lab.training.exploit`); its settings are here, without it, so that the
flags' help shows their ranges in a core install."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from odin_env.rules import Config
from odin_lab.evaluation.limits import MAX_WORKERS
from odin_lab.settings import INF, check_settings, setting

EVAL_SEED = 20261204
"""The default seed of the probe's evaluation deals (a stream of its own: never trained on)."""
MAX_PROBE_STEPS = 10**12
"""The largest budget in learner decisions (a training run's most steps)."""
MAX_SEED = 2**63 - 1
"""The largest seed (a 63-bit integer, as the lab's seeds are)."""


@dataclass
class ProbeSettings:
    """What one probe does (``evaluate.py exploit``'s flags)."""

    target: str
    """The agent probed (an agent spec); it holds every other seat in training and evaluation."""
    game: Config = field(default_factory=Config)
    """The game (its ``players`` seats)."""
    algo: str | None = None
    """The learner's algorithm (``None``: the training default)."""
    minutes: float | None = setting(None, 0.0, INF, above=True)
    """Training budget in wall-clock minutes (evaluation not counted)."""
    steps: int | None = setting(None, 1, MAX_PROBE_STEPS)
    """Training budget in learner decisions (instead of ``minutes``)."""
    points: int = setting(5, 1, 100)
    """Measurements, evenly spaced over the budget."""
    deals: int = setting(200, 1, 100_000)
    """Evaluation deals per point, each played from every seat."""
    seed: int = setting(0, 0, MAX_SEED)
    """Seed of the training run."""
    eval_seed: int = setting(EVAL_SEED, 0, MAX_SEED)
    """Seed of the evaluation deals (the same at every point)."""
    workers: int = setting(1, 1, MAX_WORKERS)
    """Evaluation processes."""
    algo_settings: dict[str, Any] = field(default_factory=dict)
    """The algorithm's settings, as ``train.py``'s flags name them (default: its defaults)."""
    init: str | None = None
    """A lab model file the learner starts from (``train.py --init``): a learner warm-started
    from a network target itself tests that network far harder than one from scratch."""

    def check(self) -> None:
        """``ValueError`` naming the first bad setting by its flag (before anything runs or is
        written): each one's range (:func:`~odin_lab.settings.check_settings`), then one budget
        and an ``--init`` file. The learner's own settings are checked by
        :func:`odin_lab.training.exploit.learner_config`."""
        check_settings(self, as_flags=True)
        if (self.minutes is None) == (self.steps is None):
            raise ValueError("give the budget as one of --minutes or --steps")
        if self.init is not None and not Path(self.init).is_file():
            raise ValueError(f"--init must name a lab model file; there is none at {self.init!r}")


__all__ = ["EVAL_SEED", "MAX_PROBE_STEPS", "MAX_SEED", "ProbeSettings"]
