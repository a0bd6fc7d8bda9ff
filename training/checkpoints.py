"""A run's files: ``config.json``, checkpoints (model + run state), policy-only model files,
and parameter averages of models.

A checkpoint is the MaskablePPO ``.zip`` with two more members: the run state (snapshot pool,
evaluations, best score) as an ``.npz`` read without pickle, and the run's config as JSON.
Every file is written atomically (:func:`agents.files.write_atomic`).
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.vec_env import VecEnv

from agents.files import write_atomic
from agents.ppo import NumpyPolicy, read_model
from training.config import TrainConfig, TrainingError, config_from_json, config_to_json, dumps
from training.pool import SELF

CHECKPOINT = "checkpoint.zip"
BEST = "best.zip"
STATE_MEMBER = "odin_training.npz"
CONFIG_MEMBER = "odin_config.json"


@dataclass
class RunState:
    """What a checkpoint holds besides the model: the snapshot pool and the evaluations."""

    snapshots: list[NumpyPolicy] = field(default_factory=list)
    best_score: float = -math.inf
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    last_snapshot: int = 0


def _state_bytes(state: RunState) -> bytes:
    arrays: dict[str, np.ndarray] = {}
    for k, snap in enumerate(state.snapshots):
        for i, (w, b) in enumerate(snap.layers):
            arrays[f"s{k}_w{i}"], arrays[f"s{k}_b{i}"] = w, b
    meta = {
        "snapshots": [[len(s.layers), s.activation] for s in state.snapshots],
        "best_score": state.best_score if math.isfinite(state.best_score) else None,
        "evaluations": state.evaluations,
        "last_snapshot": state.last_snapshot,
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _state_from_bytes(payload: bytes) -> RunState:
    with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
        meta = json.loads(arrays["meta"].tobytes().decode())
        snapshots = [
            NumpyPolicy(
                [(arrays[f"s{k}_w{i}"], arrays[f"s{k}_b{i}"]) for i in range(count)],
                activation,
                deterministic=False,
                name=SELF,
            )
            for k, (count, activation) in enumerate(meta["snapshots"])
        ]
    best = meta["best_score"]
    return RunState(
        snapshots, -math.inf if best is None else best, meta["evaluations"], meta["last_snapshot"]
    )


def save_checkpoint(model: Any, config: TrainConfig, state: RunState) -> Path:
    """Write ``checkpoint.zip`` (model + run state + config) atomically; return its path."""
    buffer = io.BytesIO()
    model.save(buffer)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(STATE_MEMBER, _state_bytes(state))
        archive.writestr(CONFIG_MEMBER, dumps(config))
    path = config.run_dir / CHECKPOINT
    write_atomic(path, buffer.getvalue())
    return path


def load_checkpoint(run_dir: Path, env: VecEnv) -> tuple[Any, RunState]:
    """The model and run state of ``run_dir/checkpoint.zip``; ``TrainingError`` if unusable."""
    from sb3_contrib import MaskablePPO

    path = run_dir / CHECKPOINT
    if not path.is_file():
        raise TrainingError(f"cannot resume {run_dir}: it has no {CHECKPOINT}")
    try:
        with zipfile.ZipFile(path) as archive:
            state = _state_from_bytes(archive.read(STATE_MEMBER))
        model = MaskablePPO.load(path, env=env, device="cpu")
    except Exception as error:  # noqa: BLE001 - any failure here means an unusable file
        first = str(error).splitlines()[0] if str(error) else ""
        raise TrainingError(
            f"cannot resume from {path}: corrupt or incompatible checkpoint "
            f"({type(error).__name__}: {first})"
        ) from None
    return model, state


def write_config(config: TrainConfig) -> None:
    """``config.json`` with the exact settings and the library versions."""
    import sb3_contrib
    import stable_baselines3

    payload = config_to_json(config)
    payload["versions"] = {
        "torch": th.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
        "numpy": np.__version__,
    }
    write_atomic(config.run_dir / "config.json", json.dumps(payload, indent=2).encode())


def read_config(run_dir: Path) -> TrainConfig:
    """The :class:`TrainConfig` stored in ``run_dir/config.json``; ``TrainingError`` if unusable."""
    path = run_dir / "config.json"
    try:
        config = config_from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        raise TrainingError(f"cannot resume {run_dir}: no config.json (is it a run?)") from None
    except (ValueError, TypeError) as error:
        raise TrainingError(f"cannot resume {run_dir}: bad config.json ({error})") from None
    return config


def average_models(paths: list[str | Path], out: str | Path) -> Path:
    """Write the parameter average of trained policies (a "model soup", Wortsman et al. 2022) to
    ``out`` as a policy-only MaskablePPO ``.zip``; return ``out``.

    The inputs must share one architecture (and prior): checkpoints of one run, or of runs
    fine-tuned from the same start, whose average plays better than each of them (the bundled
    model is one, see the README). ``ValueError`` names an input that does not fit; nothing is
    written then."""
    if len(paths) < 2:
        raise ValueError(f"averaging needs at least two models; got {len(paths)}")
    states, first = [], None
    for path in paths:
        data, state = read_model(path)
        shape = {k: tuple(v.shape) for k, v in state.items()}
        kwargs = data.get("policy_kwargs") or {}
        if first is None:
            first = (shape, kwargs.get("prior"), str(path))
        elif (shape, kwargs.get("prior")) != first[:2]:
            raise ValueError(
                f"cannot average {path} with {first[2]}: different architectures or priors"
            )
        states.append(state)
    average = {k: sum(state[k].float() for state in states) / len(states) for k in states[0]}
    params = io.BytesIO()
    th.save(average, params)
    # The last input's zip with its policy parameters replaced (and no optimizer state).
    out_zip = io.BytesIO()
    with (
        zipfile.ZipFile(paths[-1]) as source,
        zipfile.ZipFile(out_zip, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for item in source.infolist():
            if item.filename == "policy.pth":
                target.writestr(item.filename, params.getvalue())
            elif item.filename != "policy.optimizer.pth":
                target.writestr(item.filename, source.read(item.filename))
    write_atomic(Path(out), out_zip.getvalue())
    return Path(out)


def save_policy_only(model: Any, path: str | Path) -> None:
    """Write ``model`` as a MaskablePPO ``.zip`` without its optimizer state (half the size),
    atomically; :class:`PPOAgent` loads it (``MaskablePPO.load`` needs the full checkpoint)."""
    buffer = io.BytesIO()
    model.save(buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as full, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as slim:
        for item in full.infolist():
            if item.filename != "policy.optimizer.pth":
                slim.writestr(item.filename, full.read(item.filename))
    write_atomic(Path(path), out.getvalue())


__all__ = [
    "BEST", "CHECKPOINT", "RunState", "average_models", "load_checkpoint", "read_config",
    "save_checkpoint", "save_policy_only", "write_config",
]  # fmt: skip
