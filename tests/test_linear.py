"""The linear feature player (``linear:PATH``, :mod:`agents.linear`) and the cross-entropy method
that fits it (``train.py --algo cem``, :mod:`odin_lab.training.cem`): features read nothing
hidden, model files are checked when read, CEM improves on its start, and the run guarantees
every algorithm keeps (kill -9 then resume, Ctrl-C, a changed setting refused, best, soup,
seeding). Games to 5 points keep every run a few seconds."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import numpy as np
import pytest
from launch import kill_9_ahead_of_checkpoint
from safetensors.numpy import load_file, save_file
from test_dmc import _other_hidden_cards, copy_run, log, plays_legal_moves, train_py
from training_inprocess import train_main

from agents.linear import (
    BUNDLED_LINEAR,
    NAMES,
    LinearAgent,
    features,
    linear_info,
    linear_state,
    python_features,
    read_linear,
)
from agents.model_file import FORMAT_VERSION, MODEL_FORMAT
from agents.ppo import BUNDLED_MODEL
from agents.registry import agent_names, check_spec, has_batch_form, make, make_batch_agent
from odin_env.batched import BatchedGames
from odin_env.combos import SINGLE
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_lab.files import write_model
from odin_lab.training import make_config, train
from odin_lab.training.cem import CEMLearner
from odin_lab.training.checkpoints import average_models, checkpoint_step, read_run

ROOT = Path(__file__).resolve().parents[1]
TINY = [
    "--algo", "cem", "--opponents", "random", "greedy", "self", "--population", "4",
    "--games-per-candidate", "2", "--eval-deals", "1", "--eval-opponents", "random",
    "--threshold", "5", "--snapshot-every", "100",
]  # fmt: skip
"""Four candidates of two games each per generation (a few hundred decisions), games to 5."""


def tiny_config(runs: Path, name: str, total: int, seed: int = 3, **settings):
    settings = {
        "opponents": ["greedy"], "population": 4, "games_per_candidate": 2, "eval_every": 0,
        "checkpoint_every": 10**6, **settings,
    }  # fmt: skip
    return make_config(
        "cem",
        name=name,
        runs_dir=str(runs),
        game=Config(players=4, threshold=5),
        total_steps=total,
        seed=seed,
        **settings,
    )


@pytest.fixture(scope="module")
def done_run(tmp_path_factory) -> Path:
    """A tiny run that keeps its last three checkpoints' players (``--soup 3``)."""
    runs = tmp_path_factory.mktemp("runs")
    done = train_main(
        "--runs-dir",
        runs,
        "--name",
        "done",
        "--total-steps",
        1500,
        *TINY,
        "--checkpoint-every",
        300,
        "--eval-every",
        500,
        "--soup",
        3,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (runs / "stdout.txt").write_text(done.stdout)
    return runs / "done"


def test_a_tiny_cem_run_writes_linear_players_that_play_legally(done_run):
    config = json.loads((done_run / "config.json").read_text())
    assert config["algo"] == "cem" and config["cem"]["population"] == 4
    checkpoint = done_run / "checkpoint.safetensors"
    step = checkpoint_step(checkpoint)
    assert step >= 1500
    steps = [e["step"] for e in log(done_run)]
    assert len(steps) >= 2 and steps == sorted(set(steps)) and steps[-1] == step
    for path in (checkpoint, done_run / "best.safetensors"):
        info, state = read_linear(path)
        assert info["algo"] == "linear" and info["architecture"]["features"] == list(NAMES)
        agent = make(f"linear:{path}")
        assert isinstance(agent, LinearAgent)
        plays_legal_moves(agent)
    # The header names the kind: ppo:PATH of a linear file plays it as linear.
    assert isinstance(make(f"ppo:{done_run / 'best.safetensors'}"), LinearAgent)
    _, _, run, _ = read_run(checkpoint)
    assert run["generation"] >= 2 and run["snapshots"] >= 2
    stdout = (done_run.parent / "stdout.txt").read_text()
    assert f"evaluate.py tournament --agents linear:{done_run / 'best.safetensors'}" in stdout


def test_features_and_action_read_nothing_of_the_other_seats_hidden_cards():
    rng = np.random.default_rng(0)
    agent = LinearAgent(list(NAMES), rng.normal(size=len(NAMES)))
    checked = 0
    for seed in range(16):
        game = Game(Config(players=4), seed=seed)
        for _ in range(2 * seed):  # positions a few decisions into the hand
            game.apply(game.legal[rng.integers(len(game.legal))])
            game.play_forced()
            if game.is_over:
                break
        if game.is_over:
            continue
        other = _other_hidden_cards(game, rng)
        if other.hands == game.hands:
            continue
        obs, mask = observe(game, game.current), game.legal_mask()
        obs2, mask2 = observe(other, other.current), other.legal_mask()
        assert np.array_equal(obs, obs2) and np.array_equal(mask, mask2)
        for got, want in zip(features(obs2, mask2), features(obs, mask)):
            np.testing.assert_array_equal(got, want)
        assert agent.act(obs, mask) == agent.act(obs2, mask2)
        checked += 1
    assert checked >= 10


@pytest.mark.parametrize("players", [2, 4, 6])
def test_the_numba_features_are_the_python_features_bit_for_bit(players):
    """Every legal action of every position of 64 games to the end, played by a random-weight
    linear player: the kernel's features equal :func:`agents.linear.row_features`' exactly."""
    rng = np.random.default_rng(players)
    agent = LinearAgent(list(NAMES), rng.normal(size=len(NAMES)))
    games = BatchedGames(Config(players=players, threshold=10), batch=64, seed=players)
    pairs = 0
    for _ in range(60):
        _, _, x = features(games.obs, games.mask)
        np.testing.assert_array_equal(x, python_features(games.obs, games.mask))
        pairs += len(x)
        games.step(agent.act_batch(games.obs, games.mask))
    assert pairs > 10_000


def test_the_batched_form_plays_each_rows_single_choice_and_weights_change_it():
    rng = np.random.default_rng(1)
    agent = LinearAgent(list(NAMES), rng.normal(size=len(NAMES)))
    games = BatchedGames(Config(players=4), batch=32, seed=2)
    other = LinearAgent(["out", "cards_left"], [1.0, -1.0])
    differ = 0
    for _ in range(12):
        chosen = agent.act_batch(games.obs, games.mask)
        assert games.mask[np.arange(32), chosen].all()
        singles = [agent.act(games.obs[i], games.mask[i]) for i in range(32)]
        assert chosen.tolist() == singles
        differ += int((other.act_batch(games.obs, games.mask) != chosen).sum())
        games.step(chosen)
    assert differ > 0


def test_ties_go_to_the_lowest_action_and_a_feature_decides_when_weighted():
    """All weights 0: every legal action scores 0 and the lowest index is played. Leading from a
    hand of R1 Y9 (not a combo, so singles only): ``top_value`` +1 leads the 9, -1 the 1."""
    game = Game.from_position(Config(players=2), [[0, 17], [9, 10, 11]], 0)
    obs, mask = observe(game, 0), game.legal_mask()
    assert np.flatnonzero(mask).tolist() == sorted([SINGLE[0], SINGLE[17]])
    assert LinearAgent(["out"], [0.0]).act(obs, mask) == min(SINGLE[0], SINGLE[17])
    assert LinearAgent(["top_value"], [1.0]).act(obs, mask) == SINGLE[17]
    assert LinearAgent(["top_value"], [-1.0]).act(obs, mask) == SINGLE[0]


def _file(path: Path, names, weights, **extra) -> Path:
    info = {**linear_info(list(names), 4), **extra}
    save_file(
        {"policy/weights": np.asarray(weights)},
        str(path),
        metadata={
            "format": MODEL_FORMAT,
            "version": str(FORMAT_VERSION),
            "model": json.dumps(info),
        },
    )
    return path


@pytest.mark.parametrize(
    ("names", "weights", "named"),
    [
        (["out", "cards_left"], np.array([1.0, np.nan], np.float32), "not all finite"),
        (["out", "cards_left"], np.array([1.0, np.inf], np.float32), "not all finite"),
        (["out", "cards_left"], np.zeros(3, np.float32), "need (2,)"),
        (["out", "no_such_feature"], np.zeros(2, np.float32), "unknown feature 'no_such_feature'"),
        (["out", "out"], np.zeros(2, np.float32), "named twice"),
        ([], np.zeros(0, np.float32), "non-empty list"),
        (["out"], np.zeros(1, np.int32), "not all finite floating-point"),
    ],
    ids=["nan", "inf", "size", "unknown", "twice", "empty", "integers"],
)
def test_a_bad_model_file_is_refused_in_one_line_naming_the_problem(
    names, weights, named, tmp_path
):
    path = _file(tmp_path / "bad.safetensors", names, weights)
    with pytest.raises(ValueError) as refused:
        make(f"linear:{path}")
    text = str(refused.value)
    assert len(text.splitlines()) == 1 and named in text and str(path) in text


def test_other_files_are_refused_by_kind_and_by_content(tmp_path):
    with pytest.raises(ValueError, match="algo 'ppo'.*ppo:PATH"):
        make(f"linear:{BUNDLED_MODEL}")
    zipped = tmp_path / "m.safetensors"
    zipped.write_bytes(b"PK\x03\x04 not really")
    with pytest.raises(ValueError, match="a .zip, which loading would unpickle"):
        make(f"linear:{zipped}")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"\x00" * 40)
    with pytest.raises(ValueError, match="not a readable odin-lab model file"):
        make(f"linear:{junk}")
    extra = _file(tmp_path / "x.safetensors", ["out"], np.zeros(1, np.float32))
    tensors = {**load_file(str(extra)), "policy/other": np.zeros(2, np.float32)}
    save_file(
        tensors,
        str(extra),
        metadata={
            "format": MODEL_FORMAT,
            "version": "1",
            "model": json.dumps(linear_info(["out"], 4)),
        },
    )
    with pytest.raises(ValueError, match="holds policy/weights alone"):
        make(f"linear:{extra}")
    with pytest.raises(FileNotFoundError, match="no linear model"):
        make(f"linear:{tmp_path / 'missing.safetensors'}")
    with pytest.raises(ValueError, match="name what comes after the colon"):
        check_spec("linear:")
    check_spec("linear:any/path.safetensors")  # a model file: read by make, never imported
    assert has_batch_form("linear:any/path.safetensors")
    two = ["out", "pass"]
    good = write_model(
        tmp_path / "g.safetensors", linear_state(two, [2.0, -1.0]), linear_info(two, 4)
    )
    assert isinstance(make_batch_agent(f"linear:{good}"), LinearAgent)


def test_cem_improves_fitness_over_its_initial_mean(tmp_path):
    """Against greedy at 3 players, eight generations of 8 candidates x 12 games move the mean
    (from 0: every action scores alike) to weights that win clearly more of 300 fresh games."""
    config = make_config(
        "cem",
        name="fit",
        runs_dir=str(tmp_path),
        game=Config(players=3, threshold=5),
        opponents=["greedy"],
        population=8,
        games_per_candidate=12,
        seed=4,
        total_steps=10**9,
    )
    config.check()
    learner = CEMLearner(config)
    learner.start()
    for _ in range(8):
        learner.train_step()
    judge = make_config(
        "cem",
        game=Config(players=3, threshold=5),
        opponents=["greedy"],
        population=2,
        games_per_candidate=300,
        seed=99,
    )
    fitness, _, _ = CEMLearner(judge).play(np.stack([np.zeros(len(NAMES)), learner.mean]), 0)
    assert fitness[1] > fitness[0] + 0.1, fitness


def test_same_seed_same_weights_another_seed_other_weights(tmp_path):
    weights = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        train(tiny_config(tmp_path, name, 600, seed=seed))
        weights[name] = load_file(str(tmp_path / name / "checkpoint.safetensors"))
    assert weights["a"].keys() == weights["b"].keys()
    for key in weights["a"]:
        np.testing.assert_array_equal(weights["a"][key], weights["b"][key], err_msg=key)
    assert not np.array_equal(weights["a"]["cem/mean"], weights["c"]["cem/mean"])


def test_kill_9_then_resume_keeps_one_history(tmp_path):
    """Evaluations every generation, checkpoints every few: a SIGKILL after an evaluation that
    no checkpoint covers yet; the resume rolls the log back to the checkpoint and goes on."""
    run = tmp_path / "k"
    checkpoint = run / "checkpoint.safetensors"
    saved, before = kill_9_ahead_of_checkpoint(
        [ROOT / "train.py", "--runs-dir", tmp_path, "--name", "k", "--total-steps", 10**7, *TINY,
         "--eval-every", 1, "--checkpoint-every", 1500],
        run, ROOT,
    )  # fmt: skip
    assert before[-1]["step"] > saved  # the log ran ahead of the checkpoint when it died
    best_before = json.loads((run / "best.json").read_text())["score"]
    done = train_py("--resume", run, "--total-steps", saved + 400)
    assert done.returncode == 0, done.stderr[-2000:]
    final = checkpoint_step(checkpoint)
    assert final >= saved + 400
    steps = [e["step"] for e in log(run)]
    assert steps == sorted(set(steps)) and steps[-1] == final
    assert [e for e in log(run) if e["step"] <= saved] == [e for e in before if e["step"] <= saved]
    assert read_run(checkpoint)[1].evaluations == log(run)
    assert json.loads((run / "best.json").read_text())["score"] >= best_before


def test_ctrl_c_during_a_generation_keeps_the_last_whole_one(tmp_path, monkeypatch):
    """SIGINT in the middle of the third generation's games: the checkpoint holds the second
    generation's distribution and step, equal to an uninterrupted run to that step's."""
    calls = [0]
    play = CEMLearner.play

    def play_then_ctrl_c(self, candidates, generation):
        calls[0] += 1
        if calls[0] == 3:
            os.kill(os.getpid(), signal.SIGINT)
        return play(self, candidates, generation)

    monkeypatch.setattr(CEMLearner, "play", play_then_ctrl_c)
    armed = True

    def interrupt(signum, frame):
        if armed:  # only in this test: a stray one would stop the test session
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            train(tiny_config(tmp_path, "stopped", 10**7))
    finally:
        armed = False
        signal.signal(signal.SIGINT, previous)
    stopped = tmp_path / "stopped" / "checkpoint.safetensors"
    step = checkpoint_step(stopped)
    assert read_run(stopped)[2]["generation"] == 2
    monkeypatch.undo()
    train(tiny_config(tmp_path, "whole", step))
    whole = tmp_path / "whole" / "checkpoint.safetensors"
    assert checkpoint_step(whole) == step
    got, want = load_file(str(stopped)), load_file(str(whole))
    assert got.keys() == want.keys()
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def test_resume_refuses_a_checkpoint_of_other_settings_naming_the_field(done_run, tmp_path):
    run = copy_run(done_run, tmp_path / "r")
    config = json.loads((run / "config.json").read_text())
    config["cem"]["population"] = 6
    (run / "config.json").write_text(json.dumps(config))
    done = train_main("--resume", run, "--total-steps", 10_000)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "cem.population" in lines[0] and "differs from config.json" in lines[0]


def test_a_resume_never_replaces_a_better_best_model_on_record(done_run, tmp_path):
    run = copy_run(done_run, tmp_path / "r")
    (run / "best.json").write_text(json.dumps({"score": 2.0, "step": 0}))  # beyond any score
    best = (run / "best.safetensors").read_bytes()
    target = checkpoint_step(run / "checkpoint.safetensors") + 600
    done = train_main("--resume", run, "--total-steps", target)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(log(run)) > len(log(done_run))  # it evaluated again ...
    assert (run / "best.safetensors").read_bytes() == best  # ... and kept the better model
    assert json.loads((run / "best.json").read_text())["score"] == 2.0


def test_soup_averages_the_kept_players_weights(done_run, tmp_path):
    run = done_run  # made with --soup 3
    kept = sorted((run / "kept").iterdir())
    assert len(kept) == 3
    soup = load_file(str(run / "soup.safetensors"))["policy/weights"]
    players = [load_file(str(p))["policy/weights"] for p in kept]
    mean = sum(p.astype(np.float64) for p in players) / 3
    np.testing.assert_array_equal(soup, mean.astype(np.float32))
    plays_legal_moves(make(f"linear:{run / 'soup.safetensors'}"))
    again = average_models(kept, tmp_path / "again.safetensors")
    assert read_linear(again)[0]["architecture"]["features"] == list(NAMES)


def test_init_starts_from_a_linear_files_weights_on_a_feature_subset(tmp_path):
    subset = ["out", "combos_left", "cards_left", "pass"]
    two = ["out", "pass"]
    start = write_model(
        tmp_path / "s.safetensors", linear_state(two, [3.0, -1.0]), linear_info(two, 4)
    )
    learner = CEMLearner(tiny_config(tmp_path, "i", 10, features=subset, init=str(start)))
    assert learner.mean.tolist() == [3.0, 0.0, 0.0, -1.0]
    path = train(tiny_config(tmp_path, "sub", 300, features=subset))
    assert read_linear(path)[0]["architecture"]["features"] == subset
    from odin_lab.training import TrainingError

    with pytest.raises(TrainingError, match="weighs feature 'pass', which the run's features"):
        CEMLearner(tiny_config(tmp_path, "j", 10, features=["out"], init=str(start)))


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--clip-range", "0.1"], "--clip-range is a setting of --algo ppo, not of cem"),
        (["--population", "1"], "population must be an integer 2-4,096"),
        (["--elite-fraction", "0"], "elite_fraction must be a finite number in (0, 1]"),
        (["--noise-floor", "nan"], "noise_floor must be a finite number in [0, 1e+06]"),
        (["--features", "out", "nope"], "values, each one of out,"),
        (["--opponents", "learner"], "'learner' has no meaning for cem"),
        (["--init", str(BUNDLED_MODEL)], "--init"),
    ],
    ids=["ppo-flag", "population", "elite", "noise", "features", "learner", "init-ppo"],
)
def test_bad_cem_settings_are_one_line_errors_with_exit_code_2(args, named, tmp_path):
    flags = ["--algo", "cem", "--runs-dir", tmp_path, "--name", "x", *args, "--total-steps", 64]
    # The real train.py for the first case; the command in this process for the others.
    first = args == ["--clip-range", "0.1"]
    done = train_py(*flags, timeout=120) if first else train_main(*flags, cwd=ROOT)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert named in lines[0]
    assert not (tmp_path / "x").exists()


def test_train_help_shows_cems_flags():
    shown = train_py("--algo", "cem", "--help", timeout=60)
    assert shown.returncode == 0
    assert "--games-per-candidate" in shown.stdout and "--clip-range" not in shown.stdout
    assert "odin_lab.training.cem.CEMConfig" in shown.stdout


def test_the_agents_page_documents_every_feature():
    page = (ROOT / "docs" / "agents.md").read_text()
    missing = [name for name in NAMES if f"| `{name}` |" not in page]
    assert missing == []


def test_the_bundled_linear_player_is_the_short_name_and_its_card_names_its_commands():
    agent = make("linear")
    assert isinstance(agent, LinearAgent) and agent.path == BUNDLED_LINEAR
    assert has_batch_form("linear") and isinstance(make_batch_agent("linear"), LinearAgent)
    assert "linear" not in agent_names()  # held out of the lists tools enumerate
    check_spec("linear")
    plays_legal_moves(agent)
    card = json.loads(BUNDLED_LINEAR.with_suffix(".json").read_text())
    assert card["model"] == "agents/models/linear_4p.safetensors"
    assert any("train.py --algo cem" in command for command in card["made_by"])
    assert "evaluate.py tournament" in card["evaluation"]["command"]
    info, _ = read_linear(BUNDLED_LINEAR)
    assert info["provenance"]["config"]["algo"] == "cem"


@pytest.mark.parametrize("name", ["linear_4p", "linear_scratch_4p", "linear_alt_4p"])
def test_each_held_out_linear_player_plays_as_its_card_says_it_was_made(name):
    """A bundled held-out opponent loads by its spec, plays legal moves in both forms, and its
    card's last fitting command names exactly the features the file weighs."""
    path = ROOT / "agents" / "models" / f"{name}.safetensors"
    spec = f"linear:agents/models/{name}.safetensors"
    check_spec(spec)
    plays_legal_moves(make(spec))
    assert isinstance(make_batch_agent(spec), LinearAgent)
    card = json.loads(path.with_suffix(".json").read_text())
    assert card["model"] == f"agents/models/{name}.safetensors"
    fits = [command for command in card["made_by"] if "train.py --algo cem" in command]
    assert fits and "evaluate.py tournament" in card["evaluation"]["command"]
    info, _ = read_linear(path)
    weighed = info["architecture"]["features"]
    named = (
        fits[-1].split("--features ")[1].split(" --")[0].split()
        if "--features" in fits[-1]
        else NAMES
    )
    assert list(weighed) == list(named)
