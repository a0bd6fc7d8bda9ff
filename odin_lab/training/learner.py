"""What the run services (:mod:`odin_lab.training.run`) need of a learning algorithm: the
:class:`Learner` interface, the :class:`Algorithm` entry of the registry, and what every
algorithm shares (the seed streams, whole steps under Ctrl-C).

An algorithm is one module (``ppo``, ``dmc``) with a settings dataclass (the run's
``algo_config``; its fields become ``train.py`` flags) and a learner class; the registry
(:mod:`odin_lab.training.algorithms`) names it. The run services do everything else for every
algorithm: the run folder, ``config.json``, checkpoints, ``--resume``, evaluations, the best
model, the soup, TensorBoard, the progress bar and provenance.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from odin_lab.evaluation.results import held_interrupts

GAMES_STREAM, POOL_STREAM, EVAL_STREAM = 1, 2, 3
"""Sub-streams of the run's seed (:func:`odin_env.seeding.spawn_seed` with the stream id and
the step count at which the stream starts, so a resumed run deals new games): the training
games, the opponent pool, the evaluations."""


class Learner(Protocol):
    """One algorithm's learner, as the run services drive it.

    The services build it with ``learner_class(config)`` (a new learner at step 0, from
    ``config.init`` weights when given), then either call :meth:`warm_start` (a new run) or
    :meth:`load_checkpoint` (a resume), then :meth:`start` once, then :meth:`train_step` until
    :attr:`steps` reaches the target, with :meth:`snapshot`, :meth:`write_player` and
    :meth:`checkpoint` between steps, and :meth:`close` at the end."""

    kind: str
    """The model-file kind of its players: the agent spec ``KIND:PATH`` plays one."""
    steps: int
    """Learner decisions trained on (what ``total_steps`` counts)."""
    last_snapshot: int
    """The step of the latest ``self`` snapshot (0: none yet)."""

    def warm_start(self, run_dir: Path, provenance: dict[str, Any]) -> dict[str, float]:
        """Before a new run's first step: the algorithm's warm start, if any (it may write
        players in ``run_dir``, with ``provenance``); return figures to log."""
        ...

    def start(self) -> None:
        """Begin (or, after a resume, continue) collecting at :attr:`steps`: games, opponents
        and draws seeded from the run's seed and the step count."""
        ...

    def train_step(self) -> dict[str, float]:
        """Collect and learn once; return figures to log (TensorBoard names). Whole: a Ctrl-C or
        SIGTERM during the update takes effect when it ends (:func:`held_interrupts`), and one
        during collection leaves :attr:`steps` and the weights as they were."""
        ...

    def snapshot(self) -> None:
        """Add a frozen copy of the current player to the ``self`` opponents."""
        ...

    def write_player(self, path: Path, provenance: dict[str, Any]) -> Path:
        """Write the current player as a lab model file (docs/model-format.md) that
        ``agents.make(f"{kind}:{path}")`` plays with numpy only; return ``path``."""
        ...

    def checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        """What a checkpoint holds of the learner: ``(tensors, model info, run entries)``: named
        arrays (weights, optimizer state, snapshots), the ``model`` metadata, and JSON entries
        for the checkpoint's ``run`` metadata (they must not use the services' keys ``step``,
        ``best_score``, ``evaluations``, ``config``)."""
        ...

    def load_checkpoint(self, tensors: dict[str, Any], run: dict[str, Any]) -> None:
        """Restore what :meth:`checkpoint` saved (``run`` holds its entries and ``step``)."""
        ...

    def close(self) -> None:
        """Release what :meth:`start` started (Ray actors, ...)."""
        ...


@dataclass(frozen=True)
class Algorithm:
    """A registry entry: the algorithm's name, settings dataclass and learner class."""

    name: str
    settings: type
    learner: Callable[[Any], Learner]
    summary: str
    """One line for ``train.py --help``."""


def device_of(config: Any) -> str:
    """The torch device of a run's ``device`` setting (``auto``: cuda when available);
    ``TrainingError`` for ``cuda`` where torch sees none."""
    import torch as th

    from odin_lab.training.config import TrainingError

    if config.device == "auto":
        return "cuda" if th.cuda.is_available() else "cpu"
    if config.device == "cuda" and not th.cuda.is_available():
        raise TrainingError("device cuda: torch sees no CUDA device here; use --device cpu")
    return config.device


__all__ = [
    "EVAL_STREAM", "GAMES_STREAM", "POOL_STREAM", "Algorithm", "Learner", "device_of",
    "held_interrupts",
]  # fmt: skip
