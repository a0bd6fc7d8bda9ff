"""The settings of a training run, declared once: :class:`TrainConfig`.

``train.py`` makes its flags from these fields and their docstrings; ``runs/NAME/config.json``
stores them. The game itself is :class:`odin_env.rules.Config` (field ``game``).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from agents.ppo import check_prior
from agents.registry import check_spec
from odin_env.rules import Config
from odin_lab.evaluation.distributed import require_ray
from odin_lab.training.pool import LEARNER, check_kinds

TRAINING_ENGINES = ("subproc", "batched")
"""How experience is collected (``TrainConfig.engine``)."""
RUN_NAME_HELP = "a plain directory name: letters, digits, '.', '_' or '-', not starting with '.'"


class TrainingError(Exception):
    """A problem the user can fix (bad run directory, corrupt checkpoint): one line, exit 2."""


@dataclass
class TrainConfig:
    """Everything that defines a run; stored in ``runs/NAME/config.json``."""

    name: str = "ppo"
    """The run's directory name under ``runs_dir``."""
    runs_dir: str = "runs"
    """Where runs live."""
    game: Config = field(default_factory=Config)
    """The game: the settings of :class:`odin_env.rules.Config` (flags ``--players`` ...)."""
    seat: int | None = None
    """The learner's seat; None draws it per episode."""
    opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """Opponent pool: agent specs, ``self`` (snapshots) and, with the ``batched`` engine,
    ``learner`` (the learner holds every seat); one kind is drawn per episode."""
    engine: str = "batched"
    """How experience is collected: ``batched`` (all games in lockstep on the batched engine, in
    the main process: the fastest) or ``subproc`` (one learner seat per env process)."""
    selfplay_batch: int = 256
    """Games in lockstep with the ``batched`` engine (per actor with ``ray``)."""
    ray: str | None = None
    """Collect on Ray actors (``batched`` engine): the cluster's address (``auto``,
    ``HOST:PORT``, ``ray://HOST:PORT``) or ``local`` (the flag alone), a Ray started for the run;
    may change on resume. None: in this process."""
    actors: int = 1
    """Ray actors collecting rollouts, each on its own ``selfplay_batch`` games (with ``ray``);
    an update takes ``n_steps x n_envs`` decisions from them together."""
    total_steps: int = 2_000_000
    """Learner decisions to train for (the step counter includes earlier, resumed steps; 0 with
    ``imitate``: the warm start only)."""
    n_envs: int = 4
    """Environments, each in its own subprocess (1: in the main process); with the ``batched``
    engine it only sizes the rollout (``n_steps x n_envs`` decisions)."""
    n_steps: int = 1024
    """Steps per environment per rollout."""
    batch_size: int = 1024
    """Minibatch size of the PPO update."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 1e-3
    """Adam step size."""
    gamma: float = 0.995
    """Discount per learner decision."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: float = 0.01
    """Entropy bonus weight."""
    vf_coef: float = 0.5
    """Value loss weight."""
    net_pi: list[int] = field(default_factory=lambda: [256, 128])
    """Hidden layers of the actor."""
    net_vf: list[int] = field(default_factory=lambda: [256, 128])
    """Hidden layers of the critic."""
    snapshot_every: int = 200_000
    """Steps between snapshots of the learner for the ``self`` opponents."""
    max_snapshots: int = 5
    """Snapshots kept in the ``self`` pool (the most recent)."""
    checkpoint_every: int = 200_000
    """Steps between checkpoints."""
    soup: int = 0
    """Keep the policies of the last ``soup`` checkpoints (``kept/``) and write their parameter
    average, a model soup, as ``soup.safetensors`` at the run's end (0: none)."""
    eval_every: int = 200_000
    """Steps between evaluations (0: never)."""
    eval_deals: int = 50
    """Deals per evaluation opponent (each played from every seat)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["greedy", "planner"])
    """Agents evaluated against (three copies each at 4 players)."""
    torch_threads: int = 1
    """Torch threads per process (1: a second busy process slowed two threads about 15x)."""
    init: str | None = None
    """Start from the weights of this lab model file (``.safetensors``; a curriculum)."""
    imitate: str | None = None
    """Warm start: before PPO, fit the policy (and value) to this agent's play (e.g. planner)."""
    prior: str | None = None
    """A residual policy over this heuristic (``batched`` engine): the policy adds a learned
    bonus to the heuristic's choice at every decision, so it starts as that heuristic and learns
    where to depart from it (see :mod:`odin_lab.training.policy`)."""
    imitate_games: int = 1000
    """Games of the imitated agent against itself used for the warm start."""
    imitate_epochs: int = 4
    """Passes over the imitation data."""
    seed: int = 0
    """Seed of the model, the environments and the evaluations."""

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        if not isinstance(self.game, Config):
            raise ValueError(f"game must be an odin_env.rules.Config; got {self.game!r}")
        if not isinstance(self.total_steps, int) or self.total_steps < 0:
            raise ValueError(
                f"total_steps must be >= 0 (0: only the warm start); got {self.total_steps!r}"
            )
        if self.engine not in TRAINING_ENGINES:
            raise ValueError(
                f"engine must be one of {', '.join(TRAINING_ENGINES)}; got {self.engine!r}"
            )
        positive = ("n_envs", "n_steps", "batch_size", "n_epochs", "max_snapshots")
        for name in (
            *positive,
            "snapshot_every",
            "checkpoint_every",
            "eval_deals",
            "torch_threads",
            "selfplay_batch",
            "actors",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if not isinstance(self.soup, int) or self.soup < 0:
            raise ValueError(f"soup must be >= 0 (0: none); got {self.soup!r}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0 (0: never); got {self.eval_every}")
        if self.imitate_games < 1 or self.imitate_epochs < 1:
            raise ValueError("imitate_games and imitate_epochs must be positive integers")
        check_kinds(self.opponents, batched=self.engine == "batched")
        for spec in self.eval_opponents:
            check_spec(spec)
        check_prior(self.prior)
        if self.prior is not None and self.engine != "batched":
            raise ValueError(f"prior needs engine 'batched'; got engine {self.engine!r}")
        if self.opponents == [LEARNER] and self.seat is not None:
            raise ValueError(
                f"seat has no meaning with opponents ['{LEARNER}'] (every seat is the learner); "
                f"leave it unset; got {self.seat}"
            )
        if self.ray is not None:
            if self.engine != "batched":
                raise ValueError(f"ray needs engine 'batched'; got engine {self.engine!r}")
            require_ray()
        elif self.actors != 1:
            raise ValueError(f"actors run on Ray: add --ray [ADDRESS]; got actors {self.actors}")
        check_run_name(self.name)

    @property
    def run_dir(self) -> Path:
        """``runs_dir/name``."""
        return Path(self.runs_dir) / self.name


def check_run_name(name: object) -> str:
    """``name`` if it is a plain directory name (no path, nothing hidden), else ``ValueError``."""
    import re

    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*", name):
        raise ValueError(f"name must be {RUN_NAME_HELP}; got {name!r}")
    return name


def config_to_json(config: TrainConfig) -> dict[str, Any]:
    """The JSON form of ``config`` (the game settings nested under ``game``)."""
    return asdict(config)


def config_from_json(payload: dict[str, Any]) -> TrainConfig:
    """The :class:`TrainConfig` of :func:`config_to_json`'s output; ``ValueError``/``TypeError``
    for unknown fields or bad values."""
    payload = dict(payload)
    payload.pop("versions", None)
    game = payload.pop("game", None)
    if not isinstance(game, dict):
        raise ValueError("config: 'game' must hold the game settings")
    known = {f.name for f in fields(TrainConfig)}
    unknown = sorted(set(payload) - known)
    if unknown:
        raise ValueError(f"config: unknown field {unknown[0]!r}")
    config = TrainConfig(game=Config(**game), **payload)
    config.check()
    return config


def dumps(config: TrainConfig) -> str:
    """``config`` as indented JSON."""
    return json.dumps(config_to_json(config), indent=2)


__all__ = [
    "RUN_NAME_HELP", "TRAINING_ENGINES", "TrainConfig", "TrainingError", "check_run_name",
    "config_from_json", "config_to_json", "dumps",
]  # fmt: skip
