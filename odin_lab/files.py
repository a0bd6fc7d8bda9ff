"""Atomic file writes: results, models and checkpoints are never left half-written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def write_atomic(path: Path, payload: bytes) -> None:
    """Write ``payload`` to a temporary file beside ``path``, then rename it into place.

    A crash or Ctrl-C mid-write leaves the previous file (or none), never a truncated one."""
    path = Path(path)
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
