"""The lab's model files (docs/model-format.md): safetensors tensors with JSON metadata, one
format for every kind of network (PPO, DMC, linear). Reading one never unpickles anything and
needs no torch.

:func:`read_parts` reads any kind's ``model`` JSON and ``policy/`` tensors; :func:`model_bytes`
makes a file's bytes (the lab's tools write them whole: ``odin_lab.files.write_model``);
:func:`read_model` reads a PPO policy's file, checked by :mod:`agents.model_check`. An SB3
``.zip`` is refused (:func:`is_zip`) unless imported explicitly (:data:`SB3_OPT_IN`:
:func:`read_sb3_zip`, which unpickles it).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from agents.model_check import check_model
from odin_env.files import check_regular, read_head
from odin_env.observation import OBS_SIZE
from odin_env.rules import NUM_ACTIONS

MODEL_FORMAT = "odin-lab"
"""``format`` entry of a model file's safetensors metadata."""
FORMAT_VERSION = 1
"""The newest format version this code reads and writes."""
POLICY = "policy/"
"""Prefix of the policy's tensors (its torch state-dict names follow)."""
SB3_OPT_IN = (
    "train.py --import-sb3-zip PATH --name NAME (or PPOAgent.load(PATH, trust_pickle=True)); "
    "importing unpickles the file, so only for files you trust"
)


def _zip_refusal(path: Path) -> ValueError:
    return ValueError(
        f"refusing to load {path}: it is an SB3 .zip, and reading one unpickles it (runs code "
        f"stored in it); convert a trusted one once with {SB3_OPT_IN}"
    )


def is_zip(path: Path) -> bool:
    """Whether ``path`` is a ``.zip`` (by its first bytes or its name): an SB3 file, which
    reading would unpickle. Errors as :func:`odin_env.files.open_regular`."""
    return read_head(path, 4) == b"PK\x03\x04" or path.suffix.lower() == ".zip"


def model_path(path: str | Path, kind: str) -> Path:
    """``path`` as a ``kind`` model file's, once it is known to be a regular file:
    ``FileNotFoundError`` for a missing one, ``ValueError`` (one line, at once, nothing read nor
    waited on) for a FIFO, a device, a folder, a link to one or a file that cannot be
    opened."""
    path = Path(path)
    try:
        return check_regular(path)
    except FileNotFoundError:
        raise FileNotFoundError(f"no {kind} model at {path}") from None
    except ValueError as error:
        raise ValueError(f"cannot load {kind} model {error}") from None
    except OSError as error:
        raise ValueError(f"cannot load {kind} model {path}: {error.strerror}") from None


def read_model(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(info, policy state)`` of a lab model file or checkpoint: the metadata's ``model``
    JSON and the policy's tensors by their torch state-dict names, as numpy arrays. Nothing is
    unpickled: the file is safetensors (a JSON header and raw arrays).

    ``FileNotFoundError`` for a missing file; ``ValueError`` naming the file and the problem for
    an SB3 ``.zip`` (with the import opt-in), a corrupt or an incompatible one."""

    path = model_path(path, "PPO")
    if is_zip(path):
        raise _zip_refusal(path)
    info, state = read_parts(path, "PPO")
    check_model(path, info, state)
    return info, state


def read_parts(path: Path, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``model`` JSON and the ``policy/`` tensors of a lab model file of any kind (a
    safetensors file, never unpickled); ``ValueError`` naming ``kind`` and the file for one that
    is not readable as such (no lab metadata, a version this code does not read, corrupt)."""
    from safetensors import safe_open

    try:
        with safe_open(str(check_regular(path)), framework="np") as f:
            meta = f.metadata() or {}
            if meta.get("format") != MODEL_FORMAT:
                raise ValueError("no odin-lab metadata")
            version = int(meta.get("version", "0"))
            if not 1 <= version <= FORMAT_VERSION:
                raise ValueError(f"format version {version}; this code reads 1 to {FORMAT_VERSION}")
            info = json.loads(meta["model"])
            state = {k[len(POLICY) :]: f.get_tensor(k) for k in f.keys() if k.startswith(POLICY)}  # noqa: SIM118
    except Exception as error:  # noqa: BLE001 - every failure becomes one clear message
        first = (str(error).splitlines() or [""])[0]
        raise ValueError(
            f"cannot load {kind} model {path}: not a readable odin-lab model file "
            f"({type(error).__name__}: {first})"
        ) from None
    return info, state


def model_info(
    net_pi: list[int],
    net_vf: list[int],
    activation: str,
    action_features: bool,
    prior: str | None,
    players: int | None,
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``model`` JSON of a PPO model file (see docs/model-format.md)."""
    return {
        "architecture": {
            "net_pi": [int(n) for n in net_pi],
            "net_vf": [int(n) for n in net_vf],
            "activation": activation,
            "action_features": bool(action_features),
            "prior": prior,
        },
        "observation_size": OBS_SIZE + (prior is not None),
        "num_actions": NUM_ACTIONS,
        "players": players,
        "provenance": provenance or {},
    }


def model_bytes(
    state: dict[str, Any],
    info: dict[str, Any],
    extra: dict[str, Any] | None = None,
    metadata: dict[str, str] | None = None,
) -> bytes:
    """A model file's bytes: ``state``'s arrays under ``policy/``, ``extra``'s arrays as named,
    and the metadata (``format``, ``version``, ``model`` = ``info`` as JSON, then
    ``metadata``)."""
    from safetensors.numpy import save

    tensors = {POLICY + k: np.require(as_array(v), requirements="C") for k, v in state.items()}
    tensors.update({k: np.require(as_array(v), requirements="C") for k, v in (extra or {}).items()})
    header = {"format": MODEL_FORMAT, "version": str(FORMAT_VERSION), "model": json.dumps(info)}
    return save(tensors, metadata={**header, **(metadata or {})})


def as_array(value: Any) -> np.ndarray:
    """A numpy array of a torch tensor (a live policy's state dict) or of an array (a loaded
    model file)."""
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


def read_sb3_zip(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(info, policy state)`` of a MaskablePPO ``.zip``. **Unpickles the file**: this is the
    explicit import opt-in (:data:`SB3_OPT_IN`), for trusted files only. Needs torch."""
    from stable_baselines3.common.save_util import load_from_zip_file

    path = model_path(path, "PPO")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the policy class is not needed, only its weights
            data, params, _ = load_from_zip_file(path, device="cpu", print_system_info=False)
    except Exception as error:  # noqa: BLE001 - every failure becomes one clear message
        raise ValueError(
            f"cannot import {path}: not a readable MaskablePPO .zip ({type(error).__name__})"
        ) from None
    if data is None or not params or "policy" not in params:
        raise ValueError(f"cannot import {path}: the .zip holds no policy parameters")
    state = {k: as_array(v) for k, v in params["policy"].items()}
    kwargs = data.get("policy_kwargs") or {}
    arch = kwargs.get("net_arch") or {}
    activation = kwargs.get("activation_fn")
    info = model_info(
        arch.get("pi", []) if isinstance(arch, dict) else list(arch),
        arch.get("vf", []) if isinstance(arch, dict) else list(arch),
        getattr(activation, "__name__", "Tanh" if activation is None else str(activation)),
        "feature_net.weight" in state,
        kwargs.get("prior"),
        None,
        {"imported_from": path.name, "num_timesteps": data.get("num_timesteps")},
    )
    obs_shape = getattr(data.get("observation_space"), "shape", None)
    if obs_shape != (info["observation_size"],):
        info["observation_size"] = obs_shape[0] if obs_shape else None
    if getattr(data.get("action_space"), "n", None) != NUM_ACTIONS:
        info["num_actions"] = getattr(data.get("action_space"), "n", None)
    check_model(path, info, state)
    return info, state


__all__ = [
    "FORMAT_VERSION",
    "MODEL_FORMAT",
    "POLICY",
    "SB3_OPT_IN",
    "as_array",
    "is_zip",
    "model_bytes",
    "model_info",
    "model_path",
    "read_model",
    "read_parts",
    "read_sb3_zip",
]
