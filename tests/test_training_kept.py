"""Issue 57: retiring training settings changed no kept one. Each kept algorithm's seeded run
(short, with the settings it keeps, their other values among them) ends in the same checkpoint
tensors, byte for byte (weights, optimizer state, snapshots, replay), as at commit 282f95f:
``tests/data/kept_training.json`` holds their digests, written there by this module run as a
script (``python tests/test_training_kept.py > tests/data/kept_training.json``).

The runs go in a process of their own with the floating-point sums pinned (:data:`PINNED`):
torch's matrix products (MKL), its kernels and numpy's BLAS otherwise pick their code, and so
their rounding, by the CPU's instruction set, and a digest of one machine was another's
mismatch (an AVX-512 machine's against the digests of the machine that first recorded them).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from safetensors.numpy import load_file

from odin_env.rules import Config
from odin_lab.training import make_config, train

ROOT = Path(__file__).resolve().parents[1]
KEPT = Path(__file__).parent / "data" / "kept_training.json"
TEACHER = str(ROOT / "agents" / "models" / "dmc_one.safetensors")
PINNED = {
    "OPENBLAS_NUM_THREADS": "1",  # one BLAS thread, as every command (odin_lab.cli)
    "MKL_CBWR": "COMPATIBLE",  # MKL's reproducible mode, the same sums on any x86-64 CPU
    "ATEN_CPU_CAPABILITY": "default",  # torch's kernels without AVX2 or AVX-512
    "OPENBLAS_CORETYPE": "Prescott",  # numpy's OpenBLAS: one kernel whatever the CPU
}
"""The environment the runs are made in: what makes a digest the same on any x86-64 machine."""
SMALL = {"selfplay_batch": 8, "eval_every": 0, "checkpoint_every": 10**6, "snapshot_every": 64}
DMC = {"decisions_per_update": 64, "batch_size": 16, "net": [32, 16], "total_steps": 256}
EXIT = {"decisions_per_update": 16, "rollouts": 16, "batch_size": 32, "net": [32, 16]}
RUNS = {
    "dmc": ("dmc", 3, {**DMC, "opponents": ["random", "self"]}),
    "dmc-episode-relabel-tables": ("dmc", 4, {
        **DMC, "opponents": ["learner"], "horizon": "episode", "gamma": 0.9, "relabel": True,
        "optimizer": "rmsprop", "epsilon_start": 0.5, "epsilon_decay_steps": 128,
        "other_tables": [3], "epochs": 2,
    }),
    "exit": ("exit", 5, {**EXIT, "opponents": ["random", "greedy"], "total_steps": 32}),
    "exit-top-replay-learner": ("exit", 6, {
        **EXIT, "opponents": ["greedy", "self"], "total_steps": 48, "top": 2, "replay": 40,
        "playout": "learner", "epsilon": 0.1,
    }),
    "exit-teacher": ("exit", 7, {
        **EXIT, "opponents": ["random"], "total_steps": 64, "teacher": TEACHER, "init": TEACHER,
        "net": [256, 256, 128],
    }),
    "ppo": ("ppo", 2, {
        "opponents": ["greedy", "self"], "n_envs": 2, "n_steps": 64, "batch_size": 64,
        "n_epochs": 2, "net_pi": [32], "net_vf": [32], "total_steps": 512,
    }),
    "cem": ("cem", 8, {
        "opponents": ["greedy", "self"], "population": 4, "games_per_candidate": 2,
        "total_steps": 600,
    }),
}  # fmt: skip
"""Each run: its algorithm, seed and settings (at 3 players to 5 points, against the opponents
given)."""


def digest(path: Path) -> str:
    """One hash of every tensor of a checkpoint: its name, dtype, shape and bytes."""
    h = hashlib.sha256()
    for name, value in sorted(load_file(str(path)).items()):
        h.update(f"{name} {value.dtype} {value.shape}".encode())
        h.update(value.tobytes())
    return h.hexdigest()


def run_digest(case: str, runs: Path) -> str:
    """The digest of the checkpoint that run ``case`` ends with."""
    algo, seed, settings = RUNS[case]
    config = make_config(
        algo,
        name=case,
        runs_dir=str(runs),
        game=Config(players=3, threshold=5),
        seed=seed,
        **SMALL,
        **settings,
    )
    return digest(train(config))


@pytest.fixture(scope="module")
def made() -> dict[str, str]:
    """Every run's digest, made by this module run as a script (in :data:`PINNED`)."""
    done = subprocess.run(
        [sys.executable, __file__],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)["runs"]


@pytest.mark.parametrize("case", sorted(RUNS))
def test_a_kept_seeded_run_trains_the_weights_it_trained_before(case, made):
    assert made[case] == json.loads(KEPT.read_text())["runs"][case]


if __name__ == "__main__":
    if any(os.environ.get(name) != value for name, value in PINNED.items()):
        # The libraries read these once, when loaded: the script starts again with them set.
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, **PINNED})
    with tempfile.TemporaryDirectory() as folder:
        made = {case: run_digest(case, Path(folder)) for case in sorted(RUNS)}
    commit = sys.argv[1] if len(sys.argv) > 1 else "282f95f"
    json.dump({"recorded_at": commit, "runs": made}, sys.stdout, indent=1)
    print()
