"""The training wing: run services written once, algorithms behind the learner interface.

PPO moved onto the services unchanged (a seeded run gives the weights, optimizer state,
snapshots, soup and evaluations it gave before the move, stored in
``tests/data/ppo_run_reference.json``); the services import no algorithm and no SB3; runs made
before the move (flat ``config.json``) still resume; ``train.py`` picks an algorithm by name."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import load_file, save_file

from odin_env.observation import OBS_SIZE
from odin_env.rules import Config
from odin_lab.training import make_config, read_config, train
from odin_lab.training.checkpoints import checkpoint_step
from odin_lab.training.config import LEGACY_PPO_FIELDS, config_to_json

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "tests" / "data" / "ppo_run_reference.json"
SERVICES = ["run", "checkpoints", "config", "learner", "pool", "progress"]
"""The run services' modules (odin_lab/training/NAME.py)."""
ALGORITHM_MODULES = {"ppo", "model", "policy", "update", "collector", "selfplay", "imitation"}


def fingerprint(path: Path) -> dict[str, dict]:
    """Per tensor of a model file: shape, sum, sum of |x| and 8 elements at fixed positions."""
    out = {}
    for key, value in sorted(load_file(str(path)).items()):
        if not key.startswith(("policy/", "optimizer/", "snapshot/")):
            continue
        flat = value.astype(np.float64).ravel()
        picks = np.linspace(0, flat.size - 1, num=min(8, flat.size)).astype(int)
        out[key] = {
            "shape": list(value.shape),
            "sum": float(flat.sum()),
            "abs": float(np.abs(flat).sum()),
            "picks": [float(x) for x in flat[picks]],
        }
    return out


def reference_config(runs: Path, name: str = "ref"):
    """The seeded run of the reference: imitation, a pool with snapshots, evaluations,
    checkpoints and a soup."""
    return make_config(
        "ppo",
        name=name,
        runs_dir=str(runs),
        game=Config(players=4),
        opponents=["greedy", "self"],
        selfplay_batch=8,
        n_envs=2,
        n_steps=32,
        batch_size=64,
        n_epochs=2,
        net_pi=[32],
        net_vf=[32],
        snapshot_every=64,
        checkpoint_every=64,
        eval_every=128,
        eval_deals=1,
        eval_opponents=["random"],
        imitate="greedy",
        imitate_games=2,
        imitate_epochs=1,
        total_steps=320,
        seed=11,
        soup=2,
    )


@pytest.fixture(scope="module")
def reference_run(tmp_path_factory) -> Path:
    runs = tmp_path_factory.mktemp("runs")
    train(reference_config(runs))
    return runs / "ref"


def _close(got: dict, want: dict) -> list[str]:
    wrong = []
    for key, entry in want.items():
        mine = got.get(key)
        if mine is None or mine["shape"] != entry["shape"]:
            wrong.append(key)
            continue
        numbers = [entry["sum"], entry["abs"], *entry["picks"]]
        found = [mine["sum"], mine["abs"], *mine["picks"]]
        if not np.allclose(found, numbers, rtol=1e-4, atol=1e-6):
            wrong.append(key)
    return wrong + sorted(set(got) - set(want))


def test_ppo_on_the_run_services_trains_what_it_trained_before_the_move(reference_run):
    want = json.loads(REFERENCE.read_text())
    assert _close(fingerprint(reference_run / "checkpoint.safetensors"), want["checkpoint"]) == []
    assert _close(fingerprint(reference_run / "soup.safetensors"), want["soup"]) == []
    evaluations = [json.loads(line) for line in (reference_run / "evaluations.jsonl").open()]
    assert [e["step"] for e in evaluations] == [e["step"] for e in want["evaluations"]]
    for mine, theirs in zip(evaluations, want["evaluations"]):
        assert mine["random"]["win_rate"] == pytest.approx(theirs["random"]["win_rate"])
    best = json.loads((reference_run / "best.json").read_text())
    assert best["step"] == want["best"]["step"]


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            names |= {node.module, *(f"{node.module}.{a.name}" for a in node.names)}
    return names


@pytest.mark.parametrize("module", SERVICES)
def test_the_run_services_import_no_algorithm_and_no_sb3(module):
    imported = _imports(ROOT / "odin_lab" / "training" / f"{module}.py")
    libraries = {n for n in imported if n.split(".")[0] in ("stable_baselines3", "sb3_contrib")}
    algorithms = {
        n
        for n in imported
        if n.startswith("odin_lab.training.") and n.split(".")[2] in ALGORITHM_MODULES
    }
    assert libraries == set() and algorithms == set()


def _flatten(payload: dict) -> dict:
    """A config as runs made before the sections wrote it: flat, with the engine."""
    flat = {k: v for k, v in payload.items() if k not in ("algo", "ppo", "device")}
    ppo = {k: v for k, v in payload["ppo"].items() if k in LEGACY_PPO_FIELDS}
    return {**flat, **ppo, "engine": "batched"}


def test_a_run_made_before_the_sections_resumes(reference_run, tmp_path):
    run = tmp_path / "old"
    run.mkdir()
    config = json.loads((reference_run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps(_flatten(config)))
    tensors = load_file(str(reference_run / "checkpoint.safetensors"))
    from safetensors import safe_open

    with safe_open(str(reference_run / "checkpoint.safetensors"), framework="np") as f:
        metadata = f.metadata()
    stored = json.loads(metadata["run"])
    stored["config"] = _flatten(stored["config"])
    save_file(tensors, str(run / "checkpoint.safetensors"), {**metadata, "run": json.dumps(stored)})
    old = read_config(run)
    assert set(LEGACY_PPO_FIELDS) <= set(config_to_json(old)["ppo"])
    assert old.algo == "ppo" and old.algo_config == reference_config(tmp_path).algo_config
    step = checkpoint_step(run / "checkpoint.safetensors")
    old.runs_dir, old.name, old.total_steps = str(tmp_path), "old", step + 64  # as --resume does
    assert train(old, resume=True) == run / "checkpoint.safetensors"
    assert checkpoint_step(run / "checkpoint.safetensors") >= step + 64


def test_a_run_of_the_removed_subproc_engine_is_one_line(reference_run, tmp_path):
    run = tmp_path / "sub"
    run.mkdir()
    config = _flatten(json.loads((reference_run / "config.json").read_text()))
    (run / "config.json").write_text(json.dumps({**config, "engine": "subproc"}))
    done = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--resume", str(run)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "engine 'subproc' was removed" in lines[0] and "--init" in lines[0]


def test_train_help_shows_the_chosen_algorithms_flags():
    shown = subprocess.run(
        [sys.executable, str(ROOT / "train.py"), "--algo", "ppo", "--help"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert shown.returncode == 0
    assert "--clip-range" in shown.stdout and "--algo NAME" in shown.stdout
    assert "odin_lab.training.ppo.PPOConfig" in shown.stdout


def test_a_diverged_step_stops_the_run_with_one_line_and_keeps_the_last_checkpoint(
    tmp_path, monkeypatch
):
    """A non-finite loss (here made so after the third update) ends the run with a
    ``TrainingError`` naming the step and the intact checkpoint; nothing after it is saved."""
    from odin_lab.training import TrainingError
    from odin_lab.training.ppo import PPOLearner

    steps = []
    real = PPOLearner.train_step

    def poisoned(self):
        figures = real(self)
        steps.append(self.steps)
        return {**figures, "train/loss": float("nan")} if len(steps) == 3 else figures

    config = make_config(
        "ppo",
        name="nan",
        runs_dir=str(tmp_path),
        opponents=["learner"],
        selfplay_batch=8,
        n_envs=2,
        n_steps=32,
        batch_size=64,
        n_epochs=1,
        net_pi=[16],
        net_vf=[16],
        total_steps=10**6,
        checkpoint_every=1,
        eval_every=0,
    )
    monkeypatch.setattr(PPOLearner, "train_step", poisoned)
    with pytest.raises(TrainingError, match="diverged at step") as stop:
        train(config)
    assert f"step {steps[1]:,}, is intact" in str(stop.value)
    assert checkpoint_step(tmp_path / "nan" / "checkpoint.safetensors") == steps[1]


@pytest.mark.parametrize("algo", ["ppo", "dmc", "cem", "exit"])
def test_the_device_setting_puts_the_networks_there_or_says_why_not(tmp_path, algo):
    """``auto`` trains here (on CUDA when there is one, else the CPU); ``cuda`` without a CUDA
    device is one line naming the setting; the played model is the same numpy file either way."""
    import torch as th

    from agents.registry import make
    from odin_lab.training import TrainingError
    from odin_lab.training.algorithms import ALGORITHMS

    small = {
        "ppo": dict(n_envs=2, n_steps=32, batch_size=64, net_pi=[16], net_vf=[16]),
        "dmc": dict(decisions_per_update=64, net=[16]),
        "cem": dict(population=2, games_per_candidate=1),
        "exit": dict(decisions_per_update=16, rollouts=8, net=[16]),
    }[algo]
    config = make_config(
        algo,
        name="dev",
        runs_dir=str(tmp_path),
        device="auto",
        opponents=["random"],
        selfplay_batch=8,
        total_steps=64,
        eval_every=0,
        **small,
    )
    path = train(config)
    player = make(f"{ALGORITHMS[algo].learner.kind}:{path}")  # cem's players are linear:PATH
    assert player.act(np.zeros(OBS_SIZE, np.float32), _one_legal()) == 3
    cuda = make_config(algo, name="gpu", runs_dir=str(tmp_path), device="cuda", **small)
    if th.cuda.is_available():
        assert train(cuda) is not None
    else:
        with pytest.raises(TrainingError, match="device cuda: torch sees no CUDA device"):
            train(cuda)
        assert not (tmp_path / "gpu").exists()


def _one_legal() -> np.ndarray:
    mask = np.zeros(3634, np.int8)
    mask[3] = 1
    return mask
