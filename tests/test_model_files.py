"""Model files never unpickle: every load path refuses an SB3 ``.zip`` (a doctored one whose
``data`` carries a pickle payload runs nothing), reads only the lab format (safetensors + JSON,
docs/model-format.md), and turns a corrupt file into one line with exit code 2. The bundled
model, converted from its old ``.zip``, plays exactly as it did."""

from __future__ import annotations

import base64
import io
import json
import pickle
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
from training_inprocess import train_main

from agents.model_file import FORMAT_VERSION, MODEL_FORMAT, read_model
from agents.ppo import BUNDLED_MODEL, PPOAgent
from agents.registry import make
from odin_env.rules import NUM_ACTIONS
from odin_lab.training.algorithms import make_config
from odin_lab.training.config import dumps

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = Path(__file__).resolve().parent / "data" / "ppo_4p_reference.npz"
TINY = [
    "--algo", "ppo", "--selfplay-batch", "8", "--n-envs", "1", "--n-steps", "32",
    "--batch-size", "32", "--n-epochs", "1", "--net-pi", "16", "--net-vf", "16",
    "--opponents", "random", "--total-steps", "32", "--eval-every", "0",
]  # fmt: skip


class _Payload:
    """Unpickling this creates ``marker`` (a harmless stand-in for arbitrary code)."""

    def __init__(self, marker: Path):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def doctored_zip(path: Path, marker: Path) -> Path:
    """An SB3-style ``.zip`` whose ``data`` entry holds a serialized (pickled) object, as SB3's
    ``load_from_zip_file`` would unpickle it."""
    data = {
        "policy_kwargs": {
            ":type:": "<class 'dict'>",
            ":serialized:": base64.b64encode(pickle.dumps(_Payload(marker))).decode(),
        }
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("data", json.dumps(data))
    path.write_bytes(buffer.getvalue())
    return path


def run(script: str, *args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


def one_line_exit_2(done: subprocess.CompletedProcess, *words: str) -> str:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2, done.stderr[-2000:]
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr[-2000:]
    assert all(word in lines[0] for word in words), lines[0]
    return lines[0]


@pytest.fixture
def evil(tmp_path) -> tuple[Path, Path]:
    marker = tmp_path / "MARKER"
    return doctored_zip(tmp_path / "evil.zip", marker), marker


def test_the_doctored_zip_is_live_under_the_explicit_opt_in_only(evil):
    """The payload really runs when a .zip is unpickled (so the refusals below mean something)."""
    path, marker = evil
    with pytest.raises(ValueError, match="--import-sb3-zip"):
        PPOAgent.load(path)
    assert not marker.exists()
    with pytest.raises(ValueError):
        PPOAgent.load(path, trust_pickle=True)  # unpickles: the payload runs
    assert marker.exists()


@pytest.mark.parametrize("name", ["evil.zip", "evil.safetensors", "evil"])
def test_make_refuses_an_sb3_zip_under_any_name(evil, tmp_path, name):
    path, marker = evil
    target = tmp_path / name
    if target != path:
        target.write_bytes(path.read_bytes())
    with pytest.raises(ValueError, match="SB3 .zip.*unpickles.*--import-sb3-zip"):
        make(f"ppo:{target}")
    assert not marker.exists()


def test_evaluate_refuses_an_sb3_zip(evil):
    path, marker = evil
    done = run(
        "evaluate.py",
        "tournament",
        "--agents",
        f"ppo:{path}",
        "random",
        "random",
        "random",
        "--games",
        "1",
    )
    one_line_exit_2(done, "--import-sb3-zip")
    assert not marker.exists()


def test_train_init_refuses_an_sb3_zip_and_leaves_no_run(evil, tmp_path):
    path, marker = evil
    runs = tmp_path / "runs"
    done = run("train.py", "--runs-dir", runs, "--name", "x", "--init", path, *TINY)
    one_line_exit_2(done, "--init", "--import-sb3-zip")
    assert not marker.exists() and not (runs / "x").exists()


def test_train_average_refuses_an_sb3_zip(evil, tmp_path):
    path, marker = evil
    runs = tmp_path / "runs"
    done = train_main("--runs-dir", runs, "--name", "soup", "--average", path, path, cwd=ROOT)
    one_line_exit_2(done, "--import-sb3-zip")
    assert not marker.exists() and not (runs / "soup").exists()


@pytest.mark.parametrize("name", ["checkpoint.safetensors", "checkpoint.zip"])
def test_train_resume_refuses_a_doctored_checkpoint(evil, tmp_path, name):
    path, marker = evil
    run_dir = tmp_path / "runs" / "r"
    run_dir.mkdir(parents=True)
    config = make_config("ppo", runs_dir=str(tmp_path), name="r")
    (run_dir / "config.json").write_text(dumps(config))
    (run_dir / name).write_bytes(path.read_bytes())
    # The real train.py for the first case; the command in this process for the other.
    first = name == "checkpoint.safetensors"
    done = run("train.py", "--resume", run_dir) if first else train_main("--resume", run_dir)
    one_line_exit_2(done, "cannot resume", "unpickle")
    assert not marker.exists()


@pytest.fixture
def truncated(tmp_path) -> Path:
    payload = BUNDLED_MODEL.read_bytes()
    path = tmp_path / "cut.safetensors"
    path.write_bytes(payload[: len(payload) // 3])
    return path


def test_a_truncated_model_file_is_one_clear_error(truncated, tmp_path):
    with pytest.raises(ValueError, match="not a readable odin-lab model file"):
        make(f"ppo:{truncated}")
    done = run(
        "evaluate.py",
        "tournament",
        "--agents",
        f"ppo:{truncated}",
        "random",
        "random",
        "random",
        "--games",
        "1",
    )
    one_line_exit_2(done, "not a readable odin-lab model file")
    runs = tmp_path / "runs"
    # train.py's command in this process (its real script refuses in the tests above)
    done = train_main("--runs-dir", runs, "--name", "x", "--init", truncated, *TINY, cwd=ROOT)
    one_line_exit_2(done, "--init", "not a readable odin-lab model file")
    done = train_main("--runs-dir", runs, "--name", "y", "--average", truncated, truncated)
    one_line_exit_2(done, "not a readable odin-lab model file")
    assert not runs.exists() or not any(runs.iterdir())


def test_average_refuses_a_name_outside_the_runs_dir(tmp_path):
    runs = tmp_path / "runs"
    model = str(BUNDLED_MODEL)
    done = train_main("--runs-dir", runs, "--name", "../../x", "--average", model, model, cwd=ROOT)
    one_line_exit_2(done, "name must be")
    assert not runs.exists() and not (tmp_path.parent / "x").exists()


def test_the_bundled_model_is_a_lab_file_that_plays_as_the_old_zip_did():
    """600 positions from seeded random-play games (400 at 4 players, 50 at each other size),
    with the actions the original ``ppo_4p.zip`` chose there (recorded before conversion)."""
    from safetensors import safe_open

    assert BUNDLED_MODEL.suffix == ".safetensors" and BUNDLED_MODEL.is_file()
    with safe_open(str(BUNDLED_MODEL), framework="np") as f:
        meta = f.metadata()
    assert meta["format"] == MODEL_FORMAT and int(meta["version"]) == FORMAT_VERSION
    info = json.loads(meta["model"])
    assert info["players"] == 4 and info["architecture"]["prior"] == "planner"
    assert info["provenance"]["command"]
    ref = np.load(REFERENCE, allow_pickle=False)
    masks = np.unpackbits(ref["masks"], axis=1, count=NUM_ACTIONS).astype(bool)
    assert len(ref["actions"]) >= 500
    actions = PPOAgent.load(BUNDLED_MODEL).act_batch(ref["obs"], masks)
    assert np.array_equal(actions, ref["actions"])


def test_an_sb3_zip_imports_only_through_the_opt_in_and_plays_the_same(tmp_path):
    """``train.py --import-sb3-zip`` converts a genuine MaskablePPO .zip; the lab file plays
    what the live policy plays and records its architecture."""
    from odin_lab.training.model import build_model
    from odin_lab.training.policy import snapshot

    config = make_config("ppo", prior="greedy", net_pi=[16], net_vf=[8], runs_dir=str(tmp_path))
    model = build_model(config)
    model.save(tmp_path / "sb3.zip")
    runs = tmp_path / "runs"
    done = run(
        "train.py",
        "--runs-dir",
        runs,
        "--name",
        "imp",
        "--import-sb3-zip",
        tmp_path / "sb3.zip",
        "--players",
        "4",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    out = runs / "imp" / "imported.safetensors"
    info, _ = read_model(out)
    assert info["architecture"] == {
        "net_pi": [16],
        "net_vf": [8],
        "activation": "ReLU",
        "action_features": True,
        "prior": "greedy",
    }
    assert info["players"] == 4
    ref = np.load(REFERENCE, allow_pickle=False)
    obs, masks = ref["obs"][:100], np.unpackbits(ref["masks"][:100], axis=1, count=NUM_ACTIONS)
    live = snapshot(model.policy).act_batch(obs, masks)
    assert np.array_equal(PPOAgent.load(out).act_batch(obs, masks), live)


def test_a_model_played_at_another_table_size_says_so_once():
    import warnings as w

    from odin_env.rules import Config, Game
    from odin_lab.evaluation.tournament import play_game

    agent = PPOAgent.load(BUNDLED_MODEL)
    assert agent.info["players"] == 4
    with w.catch_warnings(record=True) as caught:
        w.simplefilter("always")
        play_game(Game(Config(players=4), seed=0), [agent] * 4)
        assert not caught
        play_game(Game(Config(players=3), seed=0), [agent] * 3)
    said = [str(c.message) for c in caught]
    assert len(said) == 1 and "trained for 4 players" in said[0] and "at 3" in said[0]


def test_the_bundled_player_plays_each_table_size_with_the_model_trained_for_it():
    """``make("ppo")`` sends each row to the bundled model of its table size, and to the 4-player
    model where a size has none; a batch mixing sizes gets each row's own model's action."""
    from agents.ppo import BundledPPO, bundled_models
    from odin_env.observation import observe
    from odin_env.rules import Config, Game

    files = bundled_models()
    assert files[4] == BUNDLED_MODEL and len(files) >= 2
    rows, masks, sizes = [], [], []
    for players in range(2, 7):
        game = Game(Config(players=players), seed=players)
        for _ in range(40):
            game.play_forced()
            if game.is_over:
                break
            rows.append(observe(game, game.current))
            masks.append(game.legal_mask())
            sizes.append(players)
            game.apply(int(np.flatnonzero(game.legal_mask())[0]))
    rows, masks, sizes = np.array(rows), np.array(masks), np.array(sizes)
    agent = make("ppo")
    assert isinstance(agent, BundledPPO)
    actions = agent.act_batch(rows, masks)
    for players in range(2, 7):
        at = sizes == players
        own = PPOAgent.load(files.get(players, BUNDLED_MODEL))
        assert own.info["players"] == (players if players in files else 4)
        assert np.array_equal(actions[at], own.act_batch(rows[at], masks[at]))
        assert [agent.act(o, m) for o, m in zip(rows[at][:3], masks[at][:3])] == list(
            actions[at][:3]
        )
    # Another size's model plays otherwise somewhere: the dispatch matters.
    two = PPOAgent.load(files[min(files)])
    four = sizes == 4
    assert not np.array_equal(two.act_batch(rows[four], masks[four]), actions[four])


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ("nan", "not finite floating-point"),
        ("inf", "not finite floating-point"),
        ("players", "players must be 2-6"),
        ("activation", "activation one of"),
        ("prior", "is not one of"),
        ("rank", "does not take"),
    ],
)
def test_a_model_file_of_impossible_numbers_or_metadata_is_one_clear_error(tmp_path, change, named):
    """NaN or infinite weights, metadata of the wrong type and weights of the wrong rank are
    refused when the file is read, with one line naming the problem, never played."""
    from agents.model_file import read_model
    from odin_lab.files import write_model

    info, state = read_model(BUNDLED_MODEL)
    state = {k: v.copy() for k, v in state.items()}
    if change in ("nan", "inf"):
        state["action_net.bias"][3] = float(change)
    elif change == "players":
        info["players"] = "four"
    elif change == "activation":
        info["architecture"]["activation"] = ["ReLU"]
    elif change == "prior":
        info["architecture"]["prior"] = "ppo"
    else:
        state["action_net.weight"] = state["action_net.weight"][0]
    path = write_model(tmp_path / "bad.safetensors", state, info)
    with pytest.raises(ValueError, match=named) as refused:
        PPOAgent.load(path)
    assert "\n" not in str(refused.value)
