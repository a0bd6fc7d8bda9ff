"""A run's files: ``config.json``, checkpoints, policy-only model files, the evaluation log, the
best model's record, and parameter averages of models.

Every file is a lab model file (:mod:`agents.ppo`, docs/model-format.md) or JSON: safetensors
tensors plus JSON metadata, so nothing a run reads is ever unpickled. A checkpoint is a model
file whose tensors also hold the optimizer state and the snapshot pool, and whose metadata
``run`` entry holds the run state (step, evaluations, best score) and the run's settings.
Every file is written atomically (:func:`agents.files.write_atomic`).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from stable_baselines3.common.vec_env import VecEnv

from agents.files import write_atomic
from agents.ppo import (
    MODEL_FORMAT,
    NumpyPolicy,
    model_bytes,
    model_info,
    read_model,
    write_model,
)
from odin_lab.training.config import TrainConfig, TrainingError, config_from_json, config_to_json
from odin_lab.training.model import build_model
from odin_lab.training.pool import SELF

CHECKPOINT = "checkpoint.safetensors"
BEST = "best.safetensors"
BEST_RECORD = "best.json"
"""Beside the best model: its score and step, written after it (so never ahead of it)."""
KEPT = "kept"
"""The folder of the policies kept for the soup, ``step-<12-digit step>.safetensors``."""
SOUP = "soup.safetensors"
"""The parameter average of the kept policies, written at the run's end."""
EVALUATIONS = "evaluations.jsonl"
IMITATION = "imitation.safetensors"
OLD_CHECKPOINT = "checkpoint.zip"
RESUMABLE_CHANGES = ("name", "runs_dir", "total_steps", "ray", "soup")
"""Settings a checkpoint may differ in from config.json (a moved run, a new target, another
Ray cluster)."""
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RunState:
    """What a checkpoint holds besides the model: the snapshot pool and the evaluations."""

    snapshots: list[NumpyPolicy] = field(default_factory=list)
    best_score: float = -math.inf
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    last_snapshot: int = 0


def provenance(config: TrainConfig | None = None) -> dict[str, Any]:
    """Where a model file comes from: lab version, git commit (if any), command and settings."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        lab = version("odin-lab")
    except PackageNotFoundError:
        lab = None
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, timeout=5
        )
        commit = done.stdout.strip() if done.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        commit = None
    out = {"lab_version": lab, "commit": commit, "command": " ".join(sys.argv)}
    if config is not None:
        out["config"] = config_to_json(config)
    return out


def policy_info(policy: Any, config: TrainConfig | None = None) -> dict[str, Any]:
    """The ``model`` metadata of a live :class:`odin_lab.training.policy.LegalSetPolicy`."""
    arch = policy.net_arch if isinstance(policy.net_arch, dict) else {}
    return model_info(
        arch.get("pi", []),
        arch.get("vf", []),
        policy.activation_fn.__name__,
        getattr(policy, "action_features", False),
        getattr(policy, "prior", None),
        config.game.players if config is not None else None,
        provenance(config),
    )


def save_policy_only(model: Any, path: str | Path, config: TrainConfig | None = None) -> Path:
    """Write ``model``'s policy as a lab model file (no optimizer state), atomically."""
    return write_model(path, model.policy.state_dict(), policy_info(model.policy, config))


def kept_policies(run_dir: Path) -> list[Path]:
    """The policies kept in ``run_dir/kept``, oldest first."""
    return sorted((run_dir / KEPT).glob("step-*.safetensors"))


def keep_policy(model: Any, config: TrainConfig) -> None:
    """Keep the policy at this step for the soup, and only the last ``config.soup`` of them."""
    if not config.soup:
        return
    save_policy_only(model, config.run_dir / KEPT / f"step-{model.num_timesteps:012d}.safetensors")
    for old in kept_policies(config.run_dir)[: -config.soup]:
        old.unlink()


def drop_kept_after(run_dir: Path, step: int) -> None:
    """Delete the kept policies past ``step`` (a resume from a checkpoint at ``step``)."""
    for path in kept_policies(run_dir):
        if int(path.stem.removeprefix("step-")) > step:
            path.unlink()


def _optimizer_parts(optimizer: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """An optimizer state dict as tensors ``optimizer/I/NAME`` and JSON (groups, plain values)."""
    saved = optimizer.state_dict()
    tensors: dict[str, Any] = {}
    plain: dict[str, dict[str, Any]] = {}
    for index, values in saved["state"].items():
        plain[str(index)] = {}
        for name, value in values.items():
            if isinstance(value, th.Tensor):
                tensors[f"optimizer/{index}/{name}"] = value
            else:
                plain[str(index)][name] = value
    return tensors, {"param_groups": saved["param_groups"], "state": plain}


def _optimizer_state(meta: dict[str, Any], tensors: dict[str, th.Tensor]) -> dict[str, Any]:
    state: dict[int, dict[str, Any]] = {int(i): dict(v) for i, v in meta["state"].items()}
    for key, value in tensors.items():
        if key.startswith("optimizer/"):
            _, index, name = key.split("/", 2)
            state.setdefault(int(index), {})[name] = value
    return {"state": state, "param_groups": meta["param_groups"]}


def save_checkpoint(
    model: Any, config: TrainConfig, state: RunState, steps: int | None = None
) -> Path:
    """Write ``checkpoint.safetensors`` atomically; return its path. ``steps``: the step count
    to record (default ``model.num_timesteps``; after an interrupt, the last trained update's)."""
    steps = model.num_timesteps if steps is None else int(steps)
    extra, optimizer = _optimizer_parts(model.policy.optimizer)
    for k, snap in enumerate(state.snapshots):
        for i, (w, b) in enumerate(snap.layers):
            extra[f"snapshot/{k}/w{i}"], extra[f"snapshot/{k}/b{i}"] = w, b
    run = {
        "step": steps,
        "n_updates": int(getattr(model, "_n_updates", 0)),
        "best_score": state.best_score if math.isfinite(state.best_score) else None,
        "evaluations": state.evaluations,
        "last_snapshot": state.last_snapshot,
        "snapshots": [
            [len(s.layers), s.activation, s.prior, s.prior_weight] for s in state.snapshots
        ],
        "optimizer": optimizer,
        "config": config_to_json(config),
    }
    info = policy_info(model.policy, config)
    info["kind"] = "checkpoint"
    payload = model_bytes(model.policy.state_dict(), info, extra, {"run": json.dumps(run)})
    path = config.run_dir / CHECKPOINT
    write_atomic(path, payload)
    return path


def _differences(stored: Any, current: Any, prefix: str = "") -> list[str]:
    if isinstance(stored, dict) and isinstance(current, dict):
        out = []
        for key in sorted(set(stored) | set(current)):
            if not prefix and key in RESUMABLE_CHANGES:
                continue
            out += _differences(stored.get(key), current.get(key), f"{prefix}{key}.")
        return out
    return [] if stored == current else [f"{prefix[:-1]} ({stored!r} vs {current!r})"]


def load_checkpoint(run_dir: Path, env: VecEnv, config: TrainConfig) -> tuple[Any, RunState]:
    """The model and run state of ``run_dir``'s checkpoint, rebuilt from ``config`` (which must
    match the settings stored in it); ``TrainingError`` if unusable. Nothing is unpickled."""
    from safetensors import safe_open

    path = run_dir / CHECKPOINT
    if not path.is_file():
        if (run_dir / OLD_CHECKPOINT).is_file():
            raise TrainingError(
                f"cannot resume {run_dir}: its {OLD_CHECKPOINT} is an SB3 .zip, which loading "
                "would unpickle; import its policy with train.py --import-sb3-zip PATH --name "
                "NAME (trusted files only) and start a new run from it with --init"
            )
        raise TrainingError(f"cannot resume {run_dir}: it has no {CHECKPOINT}")
    try:
        with open(path, "rb") as head:
            zipped = head.read(4) == b"PK\x03\x04"
        if zipped:
            raise ValueError("it is a .zip (SB3 format), which loading would unpickle; refused")
        with safe_open(str(path), framework="pt") as f:
            meta = f.metadata() or {}
            if meta.get("format") != MODEL_FORMAT or "run" not in meta:
                raise ValueError("not an odin-lab checkpoint")
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
        run = json.loads(meta["run"])
        stored = run["config"]
    except Exception as error:  # noqa: BLE001 - any failure here means an unusable file
        raise _corrupt(path, error) from None
    changed = _differences(stored, config_to_json(config))
    if changed:
        raise TrainingError(
            f"cannot resume from {path}: its setting {changed[0]} differs from config.json "
            "(the checkpoint belongs to another run)"
        )
    try:
        model = build_model(replace(config, init=None), env, tensorboard=False)
        policy = {k[len("policy/") :]: v for k, v in tensors.items() if k.startswith("policy/")}
        model.policy.load_state_dict(policy)
        model.policy.optimizer.load_state_dict(_optimizer_state(run["optimizer"], tensors))
        model.num_timesteps = int(run["step"])
        model._n_updates = int(run.get("n_updates", 0))
        state = _run_state(run, {k: v.numpy() for k, v in tensors.items() if "snapshot/" in k})
    except Exception as error:  # noqa: BLE001
        raise _corrupt(path, error) from None
    return model, state


def _run_state(run: dict[str, Any], arrays: dict[str, np.ndarray]) -> RunState:
    snapshots = [
        NumpyPolicy(
            [(arrays[f"snapshot/{k}/w{i}"], arrays[f"snapshot/{k}/b{i}"]) for i in range(count)],
            activation,
            deterministic=False,
            name=SELF,
            prior=prior,
            prior_weight=weight,
        )
        for k, (count, activation, prior, weight) in enumerate(run["snapshots"])
    ]
    best = run["best_score"]
    best = -math.inf if best is None else float(best)
    return RunState(snapshots, best, run["evaluations"], run["last_snapshot"])


def _corrupt(path: Path, error: BaseException) -> TrainingError:
    first = (str(error).splitlines() or [""])[0]
    return TrainingError(
        f"cannot resume from {path}: corrupt or incompatible checkpoint "
        f"({type(error).__name__}: {first})"
    )


def read_run(path: Path) -> tuple[int, RunState]:
    """The step count and run state recorded in a checkpoint (no model is built)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as f:
        run = json.loads(f.metadata()["run"])
        arrays = {k: f.get_tensor(k) for k in f.keys() if k.startswith("snapshot/")}  # noqa: SIM118
    return int(run["step"]), _run_state(run, arrays)


def checkpoint_step(path: Path) -> int:
    """The step count recorded in a checkpoint."""
    return read_run(path)[0]


def write_evaluations(run_dir: Path, evaluations: list[dict[str, Any]]) -> None:
    """``evaluations.jsonl`` holding exactly ``evaluations``, rewritten atomically."""
    lines = "".join(json.dumps(entry) + "\n" for entry in evaluations)
    write_atomic(run_dir / EVALUATIONS, lines.encode())


def best_on_record(run_dir: Path) -> float:
    """The score in ``best.json`` (``-inf`` when there is none or it is unreadable)."""
    try:
        score = json.loads((run_dir / BEST_RECORD).read_text())["score"]
        return float(score) if score is not None else -math.inf
    except (OSError, ValueError, KeyError, TypeError):
        return -math.inf


def write_best_record(run_dir: Path, score: float, step: int) -> None:
    """``best.json``: the best model's score and step (write it after the model itself)."""
    payload = json.dumps({"score": score, "step": step, "model": BEST})
    write_atomic(run_dir / BEST_RECORD, payload.encode())


def write_config(config: TrainConfig) -> None:
    """``config.json`` with the exact settings and the library versions."""
    import safetensors
    import sb3_contrib
    import stable_baselines3

    payload = config_to_json(config)
    payload["versions"] = {
        "torch": th.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
        "numpy": np.__version__,
        "safetensors": safetensors.__version__,
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
    ``out`` as a lab model file; return ``out``.

    The inputs (model files or checkpoints) must share one architecture (and prior): checkpoints
    of one run, or of runs fine-tuned from the same start, whose average plays better than each
    of them (the bundled model is one, see the README). One input gives its policy alone: a
    checkpoint without its optimizer and run state. ``ValueError`` names an input that does not
    fit; nothing is written then."""
    if not paths:
        raise ValueError("averaging needs at least one model")
    states, first = [], None
    for path in paths:
        info, state = read_model(path)
        shape = {k: tuple(v.shape) for k, v in state.items()}
        if first is None:
            first = (shape, info["architecture"], info, str(path))
        elif (shape, info["architecture"]) != first[:2]:
            raise ValueError(
                f"cannot average {path} with {first[3]}: different architectures or priors"
            )
        states.append(state)
    average = {
        k: (sum(s[k].astype(np.float64) for s in states) / len(states)).astype(np.float32)
        for k in states[0]
    }
    info = {k: v for k, v in first[2].items() if k != "kind"}
    info["provenance"] = {**provenance(), "averaged": [str(p) for p in paths]}
    return write_model(out, average, info)


__all__ = [
    "BEST", "BEST_RECORD", "CHECKPOINT", "EVALUATIONS", "IMITATION", "RunState",
    "average_models", "best_on_record", "checkpoint_step", "load_checkpoint", "policy_info",
    "provenance", "read_config", "read_run", "save_checkpoint", "save_policy_only",
    "write_best_record", "write_config", "write_evaluations",
]  # fmt: skip
