"""The lab's files written whole: results, models and checkpoints are never left half-written.

Here, below the evaluation and training packages, which both write files; above :mod:`agents`,
whose model files (:mod:`agents.model_file`) are read there and written here.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from agents.model_file import model_bytes


def write_atomic(path: Path, payload: bytes) -> None:
    """Write ``payload`` to a temporary file beside ``path``, then rename it into place.

    A crash or Ctrl-C mid-write leaves the previous file (or none), never a truncated one. An
    ``OSError`` (a full disk) names ``path``, so that its one line says which file it was."""
    path = Path(path)
    try:
        _write_atomic(path, payload)
    except OSError as error:
        if error.filename is not None and not str(error.filename).startswith(str(path.parent)):
            raise
        raise OSError(error.errno, error.strerror or str(error), str(path)) from error


def _write_atomic(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide results and models from other users
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_model(path: str | Path, state: dict[str, Any], info: dict[str, Any]) -> Path:
    """Write a lab model file (:func:`agents.model_file.model_bytes`) atomically; return its
    path."""
    write_atomic(Path(path), model_bytes(state, info))
    return Path(path)


__all__ = ["write_atomic", "write_model"]
