"""What a PPO model file must hold to be played: checked when it is read, before any weight is
used (:func:`agents.model_file.read_model`), so that a file of impossible numbers or metadata is one
clear error rather than a player that always picks its first legal action."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.heuristics import HEURISTICS
from odin_env.observation import OBS_SIZE
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, NUM_ACTIONS

ACTIVATIONS = {"ReLU": lambda x: np.maximum(x, 0.0), "Tanh": np.tanh}
"""The activations a model file may name, as the numpy player computes them."""


def check_model(path: Path, info: Any, state: dict[str, np.ndarray]) -> None:
    """``ValueError`` naming the problem when a model file's metadata or weights cannot be the
    lab's policy: architecture and sizes as documented, finite floating-point weights whose
    actor layers chain from the observation to the actions."""
    arch = info.get("architecture") if isinstance(info, dict) else None
    activation = arch.get("activation") if isinstance(arch, dict) else None
    if not isinstance(activation, str) or activation not in ACTIVATIONS:
        raise ValueError(
            f"cannot load PPO model {path}: its metadata has no usable architecture (activation "
            f"one of {', '.join(ACTIVATIONS)})"
        )
    prior = arch.get("prior")
    if prior is not None and (not isinstance(prior, str) or prior not in HEURISTICS):
        raise ValueError(
            f"cannot load PPO model {path}: prior {prior!r} is not one of {', '.join(HEURISTICS)}"
        )
    players = info.get("players")
    if players is not None and (
        isinstance(players, bool)
        or not isinstance(players, int)
        or not MIN_PLAYERS <= players <= MAX_PLAYERS
    ):
        raise ValueError(
            f"cannot load PPO model {path}: players must be {MIN_PLAYERS}-{MAX_PLAYERS} or null; "
            f"got {players!r}"
        )
    expected = OBS_SIZE + (prior is not None)
    if (
        info.get("observation_size") != expected
        or info.get("num_actions") != NUM_ACTIONS
        or "action_net.weight" not in state
    ):
        raise ValueError(
            f"incompatible PPO model {path}: observations {info.get('observation_size')}, actions "
            f"{info.get('num_actions')}; Odin needs {expected} and {NUM_ACTIONS} "
            "(was it trained on this version?)"
        )
    for name, array in state.items():
        if not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
            raise ValueError(
                f"cannot load PPO model {path}: tensor {name} is not finite floating-point "
                "numbers (NaN, infinity or integers): the file cannot be a trained policy"
            )
    hidden = sorted(
        {int(k.split(".")[2]) for k in state if k.startswith("mlp_extractor.policy_net.")}
    )
    width = OBS_SIZE
    for key in [f"mlp_extractor.policy_net.{i}" for i in hidden] + ["action_net"]:
        weight, bias = state.get(f"{key}.weight"), state.get(f"{key}.bias")
        if (
            weight is None
            or bias is None
            or weight.ndim != 2
            or weight.shape[1] != width
            or bias.shape != (weight.shape[0],)
        ):
            raise ValueError(
                f"cannot load PPO model {path}: layer {key} does not take {width} inputs as a "
                "weight matrix and bias (the actor's layers must chain)"
            )
        width = weight.shape[0]
    if width != NUM_ACTIONS:
        raise ValueError(f"cannot load PPO model {path}: the actor scores {width} actions")


__all__ = ["ACTIVATIONS", "check_model"]
