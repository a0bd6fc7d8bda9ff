"""A run's files, for every algorithm: ``config.json``, checkpoints, the evaluation log, the
best model's record, the policies kept for the soup, parameter averages of models and output
ensembles of DMC models.

Every file is a lab model file (docs/model-format.md) or JSON: safetensors tensors plus JSON
metadata, so nothing a run reads is ever unpickled. A checkpoint is a model file whose tensors
are what the learner saves (weights, optimizer state, snapshots) and whose ``run`` metadata holds
the services' state (step, evaluations, best score, the run's settings) beside the learner's
own entries. Every file is written atomically (:func:`odin_lab.files.write_atomic`).
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from agents.dmc import ensemble_state, read_dmc_model
from agents.model_file import FORMAT_VERSION, MODEL_FORMAT
from agents.registry import read_model_file
from odin_env.files import check_regular, read_head
from odin_lab.evaluation.limits import MAX_CONFIG_BYTES, read_json
from odin_lab.files import write_atomic, write_model
from odin_lab.training.config import TrainConfig, TrainingError, config_from_json, config_to_json

CHECKPOINT = "checkpoint.safetensors"
BEST = "best.safetensors"
BEST_RECORD = "best.json"
"""Beside the best model: its score and step, written after it (so never ahead of it)."""
KEPT = "kept"
"""The folder of the policies kept for the soup, ``step-<12-digit step>.safetensors``."""
SOUP = "soup.safetensors"
"""The parameter average of the kept policies, written at the run's end."""
EVALUATIONS = "evaluations.jsonl"
OLD_CHECKPOINT = "checkpoint.zip"
RESUMABLE_CHANGES = ("name", "runs_dir", "total_steps", "ray", "soup", "device", "workers")
"""Settings a checkpoint may differ in from config.json (a moved run, a new target, another
Ray cluster, another device, another count of search workers)."""
ROOT = Path(__file__).resolve().parents[2]


@dataclass
class RunState:
    """What the run services keep in a checkpoint besides the learner's own entries."""

    best_score: float = -math.inf
    evaluations: list[dict[str, Any]] = field(default_factory=list)


SERVICE_KEYS = ("step", "best_score", "evaluations", "config")
"""The entries of a checkpoint's ``run`` metadata that the services write; the learner's own
entries sit beside them."""


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


def kept_policies(run_dir: Path) -> list[Path]:
    """The policies kept in ``run_dir/kept``, oldest first."""
    return sorted((run_dir / KEPT).glob("step-*.safetensors"))


def kept_path(run_dir: Path, step: int) -> Path:
    """Where the policy kept for the soup at ``step`` goes."""
    return run_dir / KEPT / f"step-{step:012d}.safetensors"


def prune_kept(run_dir: Path, keep: int) -> None:
    """Delete all but the last ``keep`` kept policies."""
    for old in kept_policies(run_dir)[:-keep]:
        old.unlink()


def drop_kept_after(run_dir: Path, step: int) -> None:
    """Delete the kept policies past ``step`` (a resume from a checkpoint at ``step``)."""
    for path in kept_policies(run_dir):
        if int(path.stem.removeprefix("step-")) > step:
            path.unlink()


def save_checkpoint(
    config: TrainConfig,
    step: int,
    state: RunState,
    parts: tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]],
) -> Path:
    """Write ``checkpoint.safetensors`` atomically; return its path. ``parts``: the learner's
    ``(tensors, model info, run entries)`` (:meth:`odin_lab.training.learner.Learner.checkpoint`);
    ``step``: the step count to record (after an interrupt, the last whole update's)."""
    from safetensors.numpy import save

    tensors, info, entries = parts
    clash = sorted(set(entries) & set(SERVICE_KEYS))
    if clash:
        raise ValueError(f"a learner's checkpoint entries may not use {clash}")
    run = {
        **entries,
        "step": int(step),
        "best_score": state.best_score if math.isfinite(state.best_score) else None,
        "evaluations": state.evaluations,
        "config": config_to_json(config),
    }
    info = {**info, "kind": "checkpoint", "provenance": provenance(config)}
    metadata = {
        "format": MODEL_FORMAT,
        "version": str(FORMAT_VERSION),
        "model": json.dumps(info),
        "run": json.dumps(run),
    }
    arrays = {k: np.require(np.asarray(v), requirements="C") for k, v in tensors.items()}
    path = config.run_dir / CHECKPOINT
    write_atomic(path, save(arrays, metadata=metadata))
    return path


def optimizer_arrays(optimizer: th.optim.Optimizer) -> tuple[dict[str, np.ndarray], dict]:
    """A torch optimizer's state as a checkpoint holds it: its tensors as arrays named
    ``optimizer/INDEX/NAME``, and the JSON entry of the rest (``param_groups``, and ``state``'s
    plain numbers)."""
    state = optimizer.state_dict()
    tensors, plain = {}, {}
    for index, values in state["state"].items():
        plain[str(index)] = {}
        for name, value in values.items():
            if isinstance(value, th.Tensor):
                tensors[f"optimizer/{index}/{name}"] = value.detach().cpu().numpy()
            else:
                plain[str(index)][name] = value
    return tensors, {"param_groups": state["param_groups"], "state": plain}


def load_optimizer(optimizer: th.optim.Optimizer, tensors: dict[str, Any], entry: dict) -> None:
    """Restore the state :func:`optimizer_arrays` saved as ``tensors`` (a checkpoint's, any
    others among them ignored) and ``entry``."""
    state: dict[int, dict[str, Any]] = {int(i): dict(v) for i, v in entry["state"].items()}
    for key, value in tensors.items():
        if key.startswith("optimizer/"):
            _, index, name = key.split("/", 2)
            tensor = value if isinstance(value, th.Tensor) else th.from_numpy(np.array(value))
            state.setdefault(int(index), {})[name] = tensor
    optimizer.load_state_dict({"state": state, "param_groups": entry["param_groups"]})


def _differences(stored: Any, current: Any, prefix: str = "") -> list[str]:
    if isinstance(stored, dict) and isinstance(current, dict):
        out = []
        for key in sorted(set(stored) | set(current)):
            if not prefix and key in RESUMABLE_CHANGES:
                continue
            out += _differences(stored.get(key), current.get(key), f"{prefix}{key}.")
        return out
    return [] if stored == current else [f"{prefix[:-1]} ({stored!r} vs {current!r})"]


def load_checkpoint(
    run_dir: Path, config: TrainConfig
) -> tuple[dict[str, np.ndarray], dict, RunState]:
    """The learner's tensors, the ``run`` metadata and the services' state of ``run_dir``'s
    checkpoint, which must belong to ``config`` (the same settings but those a resume may
    change); ``TrainingError`` if unusable. Nothing is unpickled."""
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
        if read_head(path, 4) == b"PK\x03\x04":
            raise ValueError("it is a .zip (SB3 format), which loading would unpickle; refused")
        with safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
            if meta.get("format") != MODEL_FORMAT or "run" not in meta:
                raise ValueError("not an odin-lab checkpoint")
            tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
        run = json.loads(meta["run"])
        # Through the settings' own reader: settings added since take their defaults.
        stored = config_to_json(config_from_json(run["config"], type(config.algo_config)))
        state = _run_state(run)
    except Exception as error:  # noqa: BLE001 - any failure here means an unusable file
        raise _corrupt(path, error) from None
    changed = _differences(stored, config_to_json(config))
    if changed:
        raise TrainingError(
            f"cannot resume from {path}: its setting {changed[0]} differs from config.json "
            "(the checkpoint belongs to another run)"
        )
    return tensors, run, state


def _run_state(run: dict[str, Any]) -> RunState:
    best = run["best_score"]
    best = -math.inf if best is None else float(best)
    return RunState(best, list(run["evaluations"]))


def _corrupt(path: Path, error: BaseException) -> TrainingError:
    first = (str(error).splitlines() or [""])[0]
    return TrainingError(
        f"cannot resume from {path}: corrupt or incompatible checkpoint "
        f"({type(error).__name__}: {first})"
    )


def read_run(path: Path) -> tuple[int, RunState, dict[str, Any], dict[str, np.ndarray]]:
    """The step count, the services' state, the ``run`` metadata and the tensors of a
    checkpoint (no learner is built)."""
    from safetensors import safe_open

    with safe_open(str(check_regular(path)), framework="np") as f:
        run = json.loads(f.metadata()["run"])
        arrays = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    return int(run["step"]), _run_state(run), run, arrays


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
        score = read_json(run_dir / BEST_RECORD, MAX_CONFIG_BYTES)["score"]
        return float(score) if score is not None else -math.inf
    except (OSError, ValueError, KeyError, TypeError):
        return -math.inf


def write_best_record(run_dir: Path, score: float, step: int) -> None:
    """``best.json``: the best model's score and step (write it after the model itself)."""
    payload = json.dumps({"score": score, "step": step, "model": BEST})
    write_atomic(run_dir / BEST_RECORD, payload.encode())


VERSIONED = ("numpy", "numba", "torch", "stable-baselines3", "sb3-contrib", "safetensors")
"""The libraries whose versions ``config.json`` records (those installed)."""


def write_config(config: TrainConfig) -> None:
    """``config.json`` with the exact settings and the library versions."""
    from importlib.metadata import PackageNotFoundError, version

    payload = config_to_json(config)
    payload["versions"] = {}
    for package in VERSIONED:
        try:
            payload["versions"][package] = version(package)
        except PackageNotFoundError:
            continue
    write_atomic(config.run_dir / "config.json", json.dumps(payload, indent=2).encode())


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
        info, state = read_model_file(path)  # any kind: PPO and DMC runs keep soups
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


def ensemble_models(paths: list[str | Path], out: str | Path, symmetries: int = 1) -> Path:
    """Write the output ensemble of DMC models (:func:`agents.dmc.ensemble_state`: one network
    whose values are the mean of theirs; its player reads each position under ``symmetries``
    colour labellings) to ``out`` as a lab model file; return ``out``.
    Unlike :func:`average_models` the members need not come from one start, only share a depth
    and a horizon. ``ValueError`` names a member that is not a DMC model or does not fit;
    nothing is written then."""
    if not paths:
        raise ValueError("an ensemble needs at least one model")
    members = [read_dmc_model(path) for path in paths]
    origin = {**provenance(), "ensemble": [str(p) for p in paths]}
    info, state = ensemble_state(members, origin, symmetries)
    return write_model(out, state, info)


__all__ = [
    "BEST", "BEST_RECORD", "CHECKPOINT", "EVALUATIONS", "KEPT", "SOUP", "RunState",
    "average_models", "best_on_record", "checkpoint_step", "drop_kept_after", "ensemble_models",
    "kept_path", "kept_policies", "load_checkpoint", "load_optimizer", "optimizer_arrays",
    "provenance", "prune_kept", "read_run", "save_checkpoint", "write_best_record",
    "write_config", "write_evaluations",
]  # fmt: skip
