"""The settings of a training run, declared once: :class:`TrainConfig`.

A run's settings come in three sections: the game (:class:`odin_env.rules.Config`, field
``game``), the run's own (the fields below: folder, opponents, budget, evaluations,
checkpoints; the same for every algorithm) and the algorithm's (field ``algo_config``: the
settings dataclass of the algorithm named by ``algo``, declared in that algorithm's module).
``train.py`` makes its flags from the three sections' fields and docstrings;
``runs/NAME/config.json`` stores them, the algorithm's section under its name::

    {"algo": "ppo", "name": ..., "game": {...}, "ppo": {"learning_rate": ..., ...}}

``config.json`` files of runs made before the sections existed (all PPO, flat) are read as the
same settings (:func:`nest_legacy`).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from agents.registry import check_spec
from odin_env.rules import MAX_PLAYERS, Config, refuse_goat
from odin_lab.evaluation.distributed import require_ray
from odin_lab.training.pool import LEARNER, check_kinds
from odin_lab.training.settings import check_settings, drop_retired, setting

RUN_NAME_HELP = "a plain directory name: letters, digits, '.', '_' or '-', not starting with '.'"
MAX_STEPS = 10**12
"""The most learner decisions a run counts to (a few years of a fast machine). The run's other
counts are bounded where beyond them a run could not be held in memory or on disk, or would
never end; 0, where allowed, means none or never."""
DEVICES = ("auto", "cpu", "cuda")
"""Where the networks and updates run (``TrainConfig.device``)."""
SEARCHING = ("exit",)
"""The algorithms whose learner runs searches that ``workers`` share."""
LEGACY_PPO_FIELDS = (
    "n_envs", "n_steps", "batch_size", "n_epochs", "learning_rate", "gamma", "gae_lambda",
    "clip_range", "ent_coef", "vf_coef", "net_pi", "net_vf", "imitate", "prior", "imitate_games",
    "imitate_epochs",
)  # fmt: skip
"""The PPO settings of a flat ``config.json`` written before the sections existed (history, not
a declaration: the settings themselves live in :mod:`odin_lab.training.ppo`)."""


SPEC_FIELDS = ("opponents", "eval_opponents")
"""The run's settings that hold agent specs (an algorithm's section names its own in its
``SPEC_FIELDS``): what a resume checks before it builds any (:func:`specs_in`)."""


class TrainingError(Exception):
    """A problem the user can fix (bad run directory, corrupt checkpoint): one line, exit 2."""


DEFAULT_ALGO = "dmc"
"""The algorithm of a run, an exploit probe or a learning curve that names none (``--algo``):
the one that learns best from scratch. Measured (benchmarks/results/learning_curve_algorithms
.json: 4 players, 60 CPU minutes against 3 x greedy, 2,000 games a point): DMC 25.8% [24.0,
27.8] against 3 x planner, PPO 13.0% [11.5, 14.5]."""


@dataclass
class TrainConfig:
    """Everything that defines a run; stored in ``runs/NAME/config.json``."""

    name: str = "ppo"
    """The run's directory name under ``runs_dir``."""
    runs_dir: str = "runs"
    """Where runs live."""
    algo: str = DEFAULT_ALGO
    """The learning algorithm (its settings: ``algo_config``)."""
    game: Config = field(default_factory=Config)
    """The game: the settings of :class:`odin_env.rules.Config` (flags ``--players`` ...)."""
    seat: int | None = setting(None, 0, MAX_PLAYERS - 1)
    """The learner's seat; None draws it per episode."""
    opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """Opponent pool: agent specs, ``self`` (snapshots of the learner) and ``learner`` (the
    learner holds every seat); one kind is drawn per episode."""
    selfplay_batch: int = setting(256, 1, 65_536)
    """Games in lockstep on the batched engine (per actor with ``ray``)."""
    ray: str | None = None
    """Collect on Ray actors (``exit``: run its searches as Ray tasks): the cluster's address
    (``auto``, ``HOST:PORT``, ``ray://HOST:PORT``) or ``local`` (the flag alone), a Ray started
    for the run; may change on resume. None: in this process."""
    actors: int = setting(1, 1, 1024)
    """Ray actors collecting experience, each on its own ``selfplay_batch`` games (with ``ray``;
    PPO's synchronously, DMC's asynchronously: docs/ray.md)."""
    workers: int = setting(1, 1, 1024)
    """Processes that run the learner's searches in parallel, where its algorithm has them
    (``exit``: each batch's searches); the run is the same for any count, which may change on
    resume."""
    total_steps: int = setting(2_000_000, 0, MAX_STEPS)
    """Learner decisions to train for (the step counter includes earlier, resumed steps; 0: the
    algorithm's warm start only)."""
    snapshot_every: int = setting(200_000, 1, MAX_STEPS)
    """Steps between snapshots of the learner for the ``self`` opponents."""
    max_snapshots: int = setting(5, 1, 1000)
    """Snapshots kept in the ``self`` pool (the most recent)."""
    checkpoint_every: int = setting(200_000, 1, MAX_STEPS)
    """Steps between checkpoints."""
    soup: int = setting(0, 0, 1000)
    """Keep the policies of the last ``soup`` checkpoints (``kept/``) and write their parameter
    average, a model soup, as ``soup.safetensors`` at the run's end (0: none)."""
    eval_every: int = setting(200_000, 0, MAX_STEPS)
    """Steps between evaluations (0: never)."""
    eval_deals: int = setting(50, 1, 1_000_000)
    """Deals per evaluation opponent (each played from every seat)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["greedy", "planner"])
    """Agents evaluated against (three copies each at 4 players)."""
    torch_threads: int = setting(1, 1, 1024)
    """Torch threads per process (1: a second busy process slowed two threads about 15x)."""
    device: str = setting("cpu", choices=DEVICES)
    """Where the networks and their updates run: ``cpu``, ``cuda`` or ``auto`` (cuda when
    available); collection stays on the batched engine, and every file loads on either."""
    init: str | None = None
    """Start from the weights of this lab model file (``.safetensors``; a curriculum)."""
    seed: int = 0
    """Seed of the model, the games, the opponents and the evaluations."""
    algo_config: Any = None
    """The algorithm's settings (its module's settings dataclass); None until the registry fills
    in its defaults (:func:`odin_lab.training.algorithms.complete`)."""

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad field (the run's, then the algorithm's)."""
        if not isinstance(self.game, Config):
            raise ValueError(f"game must be an odin_env.rules.Config; got {self.game!r}")
        refuse_goat(self.game, "the training wing")  # its networks' inputs are today's game's
        check_settings(self)
        if self.seat is not None and self.seat >= self.game.players:
            raise ValueError(f"seat must be an integer 0-{self.game.players - 1}; got {self.seat}")
        check_kinds(self.opponents)
        for spec in self.eval_opponents:
            check_spec(spec)
        if self.opponents == [LEARNER] and self.seat is not None:
            raise ValueError(
                f"seat has no meaning with opponents ['{LEARNER}'] (every seat is the learner); "
                f"leave it unset; got {self.seat}"
            )
        if self.ray is not None:
            require_ray()
        elif self.actors != 1:
            raise ValueError(f"actors run on Ray: add --ray [ADDRESS]; got actors {self.actors}")
        if self.workers != 1 and self.algo not in SEARCHING:
            raise ValueError(
                f"workers run the searches of --algo {', '.join(SEARCHING)}; {self.algo} has "
                f"none: leave workers at 1; got {self.workers}"
            )
        check_run_name(self.name)
        if self.algo_config is not None:
            check_settings(self.algo_config)
            self.algo_config.check(self)

    @property
    def run_dir(self) -> Path:
        """``runs_dir/name``."""
        return Path(self.runs_dir) / self.name


def check_run_name(name: object) -> str:
    """``name`` if it is a plain directory name (no path, nothing hidden), else ``ValueError``."""
    if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9_-][A-Za-z0-9._-]*", name):
        raise ValueError(f"name must be {RUN_NAME_HELP}; got {name!r}")
    return name


def run_fields() -> list[str]:
    """The run's own settings (not the game's, not the algorithm's)."""
    return [f.name for f in fields(TrainConfig) if f.name not in ("game", "algo_config")]


def config_to_json(config: TrainConfig) -> dict[str, Any]:
    """The JSON form of ``config``: the game under ``game``, the algorithm's settings under the
    algorithm's name."""
    out = {name: getattr(config, name) for name in run_fields()}
    out["game"] = asdict(config.game)
    out[config.algo] = asdict(config.algo_config) if config.algo_config is not None else {}
    return json.loads(json.dumps(out))  # plain lists and dicts, as read back


def nest_legacy(payload: dict[str, Any]) -> dict[str, Any]:
    """A ``config.json`` payload in today's form: a flat payload of a run made before the
    sections (always PPO) gets ``algo`` and its PPO settings under ``ppo``. ``ValueError`` for a
    run of the removed ``subproc`` engine."""
    payload = dict(payload)
    payload.pop("versions", None)
    if "algo" in payload:
        return payload
    engine = payload.pop("engine", "batched")
    if engine != "batched":
        raise ValueError(
            f"config: engine {engine!r} was removed (every algorithm collects on the batched "
            "engine); start a new run, with --init from this run's best.safetensors to keep its "
            "weights"
        )
    section = {k: payload.pop(k) for k in LEGACY_PPO_FIELDS if k in payload}
    return {**payload, "algo": "ppo", "ppo": section}


def specs_in(payload: dict[str, Any], section: type) -> list[object]:
    """The agent specs a ``config.json`` payload holds (:data:`SPEC_FIELDS` and the section's
    ``SPEC_FIELDS``), as stored: nothing checked, nothing imported (a list stands for its items,
    anything else for itself)."""
    payload = nest_legacy(payload)
    settings = payload.get(payload.get("algo"), {}) if isinstance(payload.get("algo"), str) else {}
    values = [payload.get(name) for name in SPEC_FIELDS]
    if isinstance(settings, dict):
        values += [settings.get(name) for name in getattr(section, "SPEC_FIELDS", ())]
    out: list[object] = []
    for value in values:
        out += value if isinstance(value, list) else [] if value is None else [value]
    return out


def config_from_json(payload: dict[str, Any], section: type) -> TrainConfig:
    """The :class:`TrainConfig` of :func:`config_to_json`'s output (or a legacy flat one), with
    ``section`` the algorithm's settings dataclass; ``ValueError``/``TypeError`` for unknown
    fields, bad values or a retired setting (the section's ``RETIRED`` entries,
    :class:`odin_lab.training.settings.Retired`) that does not hold today's value."""
    payload = nest_legacy(payload)
    game = payload.pop("game", None)
    if not isinstance(game, dict):
        raise ValueError("config: 'game' must hold the game settings")
    algo = payload.get("algo")
    settings = payload.pop(algo, {}) if isinstance(algo, str) else {}
    if not isinstance(settings, dict):
        raise ValueError(f"config: {algo!r} must hold the algorithm's settings")
    unknown = sorted(set(payload) - set(run_fields()))
    if unknown:
        raise ValueError(f"config: unknown field {unknown[0]!r}")
    # A setting retired since the run was made: dropped where it held what the lab does today.
    settings = drop_retired(settings, getattr(section, "RETIRED", {}))
    known = {f.name for f in fields(section)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"config: unknown {algo} setting {unknown[0]!r}")
    config = TrainConfig(game=Config(**game), algo_config=section(**settings), **payload)
    config.check()
    return config


def dumps(config: TrainConfig) -> str:
    """``config`` as indented JSON."""
    return json.dumps(config_to_json(config), indent=2)


__all__ = [
    "DEVICES", "RUN_NAME_HELP", "SPEC_FIELDS", "TrainConfig", "TrainingError", "check_run_name",
    "config_from_json", "config_to_json", "dumps", "nest_legacy", "run_fields", "specs_in",
]  # fmt: skip
