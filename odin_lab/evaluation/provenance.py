"""Where a result came from: the lab's version and commit, the libraries, the command line and
the model files it used (by sha256), written beside every result as ``provenance.json``.

Kept apart from the results themselves, so a seeded study's result files stay byte-identical
from one run (or resume) to the next."""

from __future__ import annotations

import hashlib
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path

from agents.dmc import BUNDLED_DMC
from agents.linear import BUNDLED_LINEAR
from agents.ppo import bundled_models
from agents.registry import MODEL_KINDS, search_network
from odin_env.files import open_regular

ROOT = Path(__file__).resolve().parents[2]


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _commit() -> str | None:
    try:
        done = subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def sha256(path: Path) -> str:
    """The sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open_regular(path) as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_files(specs: Sequence[str]) -> dict[str, str]:
    """The sha256 of each model file the specs play: ``ppo:PATH``, ``dmc:PATH`` and
    ``linear:PATH`` by their spec, the bundled models of ``ppo``, ``dmc`` and ``linear`` as
    ``ppo/FILE``, ``dmc/FILE`` and ``linear/FILE`` (``dmc/FILE`` too for a ``search``: the
    network that shortlists its candidates)."""
    files = {}
    for spec in dict.fromkeys(specs):
        name, _, path = spec.partition(":")
        if name in MODEL_KINDS and path:
            if Path(path).is_file():
                files[spec] = sha256(Path(path))
        elif spec == "ppo":
            for model in bundled_models().values():
                files[f"ppo/{model.name}"] = sha256(model)
        elif spec == "linear":
            files[f"linear/{BUNDLED_LINEAR.name}"] = sha256(BUNDLED_LINEAR)
        elif spec == "dmc":
            files[f"dmc/{BUNDLED_DMC.name}"] = sha256(BUNDLED_DMC)
        elif network := search_network(spec):
            files[f"dmc/{network.name}"] = sha256(network)
    return files


def provenance(specs: Sequence[str] = ()) -> dict:
    """The provenance record of a result that played ``specs``."""
    return {
        "lab_version": _version("odin-lab"),
        "git_commit": _commit(),
        "command": [Path(sys.argv[0]).name, *sys.argv[1:]],
        "python": platform.python_version(),
        "numpy": _version("numpy"),
        "torch": _version("torch"),
        "models_sha256": model_files(specs),
    }


__all__ = ["model_files", "provenance", "sha256"]
