"""The learning algorithms by name (``train.py --algo NAME``), and the functions that need to
know them: completing, reading and making a run's settings, and :func:`train`.

A new algorithm is one module (its settings dataclass and its learner, see
:mod:`odin_lab.training.learner`) and one line in :data:`ALGORITHMS`.
"""

from __future__ import annotations

import typing
from collections.abc import Sequence
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from odin_env.rules import Config
from odin_lab.evaluation.limits import MAX_CONFIG_BYTES, read_json
from odin_lab.evaluation.trust import trusted
from odin_lab.training.cem import CEMConfig, CEMLearner
from odin_lab.training.config import (
    DEFAULT_ALGO,
    TrainConfig,
    TrainingError,
    config_from_json,
    run_fields,
    specs_in,
)
from odin_lab.training.dmc import DMCConfig, DMCLearner
from odin_lab.training.exit import ExItConfig, ExItLearner
from odin_lab.training.learner import Algorithm
from odin_lab.training.ppo import PPOConfig, PPOLearner
from odin_lab.training.run import run
from odin_lab.training.settings import drop_retired

ALGORITHMS: dict[str, Algorithm] = {
    "ppo": Algorithm("ppo", PPOConfig, PPOLearner, "PPO (MaskablePPO's update), batched engine"),
    "dmc": Algorithm("dmc", DMCConfig, DMCLearner, "deep Monte Carlo (DouZero), batched engine"),
    "cem": Algorithm("cem", CEMConfig, CEMLearner, "cross-entropy method, linear feature player"),
    "exit": Algorithm("exit", ExItConfig, ExItLearner, "expert iteration: search labels, Q-net"),
}
"""Every algorithm ``train.py --algo`` takes, by name."""


def algorithm(name: str) -> Algorithm:
    """The registry entry of ``name``; ``ValueError`` naming the allowed names."""
    if name not in ALGORITHMS:
        raise ValueError(f"algo must be one of {', '.join(ALGORITHMS)}; got {name!r}")
    return ALGORITHMS[name]


def complete(config: TrainConfig) -> TrainConfig:
    """``config`` with its algorithm's default settings when it has none; ``ValueError`` for an
    unknown algorithm or settings of another algorithm."""
    entry = algorithm(config.algo)
    if config.algo_config is None:
        return replace(config, algo_config=entry.settings())
    if not isinstance(config.algo_config, entry.settings):
        raise ValueError(
            f"algo_config must be a {entry.settings.__name__} for algo {config.algo!r}; got "
            f"{type(config.algo_config).__name__}"
        )
    return config


def make_config(
    algo: str = DEFAULT_ALGO, game: Config | None = None, **settings: Any
) -> TrainConfig:
    """A run's settings from flat keywords, as the flags name them: the run's own and the
    algorithm's (``make_config("ppo", n_steps=64, opponents=["greedy"])``); ``TypeError``
    naming an unknown one, ``ValueError`` a retired one (:func:`odin_lab.training.settings
    .drop_retired`). The run's ``name`` defaults to the algorithm's."""
    settings.setdefault("name", algo)
    section = algorithm(algo).settings
    settings = drop_retired(settings, getattr(section, "RETIRED", {}))
    mine = {f.name for f in fields(section)}
    unknown = sorted(set(settings) - mine - set(run_fields()))
    if unknown:
        raise TypeError(f"{unknown[0]!r} is not a setting of the run or of algo {algo!r}")
    algo_settings = {k: v for k, v in settings.items() if k in mine}
    run_settings = {k: v for k, v in settings.items() if k not in mine}
    return TrainConfig(
        algo=algo, game=game or Config(), algo_config=section(**algo_settings), **run_settings
    )


def parse_settings(algo: str, items: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` words (``critic=full``, ``net_pi=256,128``) as the settings of ``algo``,
    typed as its settings dataclass declares them; ``ValueError`` naming a bad one."""
    section = algorithm(algo).settings
    hints = typing.get_type_hints(section)
    names = [f.name for f in fields(section)]
    out: dict[str, Any] = {}
    for item in items:
        name, sep, text = item.partition("=")
        name = name.replace("-", "_")
        if not sep or name not in names:
            raise ValueError(f"{item!r}: give NAME=VALUE with NAME one of {', '.join(names)}")
        hint = hints[name]
        many = typing.get_origin(hint) is list
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        kind = args[0] if args else hint  # list[int] -> int, str | None -> str
        try:
            values = [kind(v) for v in text.split(",")] if many else kind(text)
        except ValueError:
            raise ValueError(f"{item!r}: {name} takes {kind.__name__} values") from None
        out[name] = values
    return out


def read_config(run_dir: Path, trust: Sequence[str] = ()) -> TrainConfig:
    """The :class:`TrainConfig` stored in ``run_dir/config.json``; ``TrainingError`` if unusable,
    or if it names outside code (an agent spec of :func:`odin_lab.training.config.specs_in`) that
    ``trust``, the specs the command line gives, does not: refused before anything imports it."""
    path = Path(run_dir) / "config.json"
    try:
        payload = read_json(path, MAX_CONFIG_BYTES)
        if not isinstance(payload, dict):
            raise ValueError("not a JSON object")
        # A config.json from before the training wing names no algorithm: it was PPO's.
        section = algorithm(payload.get("algo", "ppo")).settings
        specs = specs_in(payload, section)
    except FileNotFoundError:
        raise TrainingError(f"cannot resume {run_dir}: no config.json (is it a run?)") from None
    except (OSError, ValueError, TypeError) as error:
        raise TrainingError(f"cannot resume {run_dir}: bad config.json ({error})") from None
    try:
        trusted(specs, trust, path)
    except ValueError as error:
        raise TrainingError(f"cannot resume {run_dir}: {error}") from None
    try:
        return config_from_json(payload, section)
    except (ValueError, TypeError) as error:
        raise TrainingError(f"cannot resume {run_dir}: bad config.json ({error})") from None


def train(config: TrainConfig, resume: bool = False) -> Path | None:
    """Train (or resume) the run ``config.run_dir`` with its algorithm
    (:func:`odin_lab.training.run.run`); return the checkpoint path (``None``: a resumed run
    already at its target)."""
    config = complete(config)
    return run(config, algorithm(config.algo).learner, resume=resume)


__all__ = [
    "ALGORITHMS", "algorithm", "complete", "make_config", "parse_settings", "read_config",
    "train",
]  # fmt: skip
