"""Deep Monte Carlo (``train.py --algo dmc``): the run guarantees every algorithm keeps (kill -9
then resume, Ctrl-C during an update, a changed setting refused, soup, best), its players
(``dmc:PATH``, numpy only, reading the observation alone), seeding, its targets (the seat's
Monte Carlo return), and the settings it retired (a run of them refused naming the findings
page). Real ``train.py`` runs in subprocesses, each a few seconds; most refusals call its command
in this process (tests/training_inprocess.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch as th
from launch import evaluation_log, kill_9_ahead_of_checkpoint
from safetensors.numpy import load_file
from training_inprocess import train_main

from agents.dmc import DMCAgent, read_dmc_model, value_horizon
from agents.ppo import BUNDLED_MODEL
from agents.registry import check_spec, has_batch_form, make
from odin_env.batched import BatchedGames
from odin_env.cards import cards_of
from odin_env.combos import COMBO_BITS
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_lab.training import TrainingError, make_config, read_config, train
from odin_lab.training.checkpoints import average_models, checkpoint_step, read_run
from odin_lab.training.dmc import FINDINGS, DMCLearner
from odin_lab.training.dmc_collector import DMCCollector, discounted_returns

ROOT = Path(__file__).resolve().parents[1]
UPDATE = 64  # --decisions-per-update below: the least an update trains on
TINY = [
    "--algo",
    "dmc",
    "--opponents",
    "random",
    "self",
    "--snapshot-every",
    str(UPDATE),
    "--selfplay-batch",
    "8",
    "--decisions-per-update",
    str(UPDATE),
    "--batch-size",
    "16",
    "--net",
    "32",
    "16",
    "--eval-deals",
    "1",
    "--eval-opponents",
    "random",
    "--threshold",
    "5",
]
"""The learner in one seat against random and its own snapshots; games to 5 points (a hand or
two each), 8 in lockstep."""


def train_py(*args: object, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "train.py"), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
    )


log = evaluation_log


def plays_legal_moves(agent, players: int = 4) -> None:
    """A whole game with ``agent`` in every seat; the engine raises on any illegal action."""
    game = Game(Config(players=players), seed=0)
    game.play_forced()
    while not game.is_over:
        game.apply(agent.act(observe(game, game.current), game.legal_mask()))
        game.play_forced()
    assert game.winners


def copy_run(source: Path, target: Path) -> Path:
    target.mkdir(parents=True)
    for item in source.iterdir():
        if item.is_file():
            (target / item.name).write_bytes(item.read_bytes())
    return target


def tiny_config(runs: Path, name: str, total: int, seed: int = 3, **settings):
    settings = {
        "opponents": ["random"], "selfplay_batch": 8, "decisions_per_update": UPDATE,
        "batch_size": 16, "net": [32, 16], "eval_every": 0, "checkpoint_every": 10**6,
        **settings,
    }  # fmt: skip
    return make_config(
        "dmc",
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
        256,
        *TINY,
        "--checkpoint-every",
        UPDATE,
        "--eval-every",
        2 * UPDATE,
        "--soup",
        3,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    (runs / "stdout.txt").write_text(done.stdout)
    return runs / "done"


def test_a_tiny_dmc_run_writes_a_checkpoint_and_best_model_that_play_legally(done_run):
    config = json.loads((done_run / "config.json").read_text())
    assert config["algo"] == "dmc" and config["dmc"]["decisions_per_update"] == UPDATE
    checkpoint = done_run / "checkpoint.safetensors"
    step = checkpoint_step(checkpoint)
    assert step >= 256
    steps = [e["step"] for e in log(done_run)]
    assert len(steps) >= 2 and steps == sorted(set(steps)) and steps[-1] == step
    for path in (checkpoint, done_run / "best.safetensors"):
        info, _ = read_dmc_model(path)
        assert info["algo"] == "dmc" and info["architecture"]["net"] == [32, 16]
        agent = make(f"dmc:{path}")
        assert isinstance(agent, DMCAgent)
        plays_legal_moves(agent)
    # A plain model path names its kind in the header: ppo:PATH of a DMC file plays it as DMC.
    assert isinstance(make(f"ppo:{done_run / 'best.safetensors'}"), DMCAgent)
    # 'self' snapshots: one at the start, then one after each update 64 or more steps later.
    _, _, run, _ = read_run(checkpoint)
    assert run["snapshots"] >= 3 and run["last_snapshot"] >= step - 2 * UPDATE
    stdout = (done_run.parent / "stdout.txt").read_text()
    assert f"evaluate.py tournament --agents dmc:{done_run / 'best.safetensors'}" in stdout
    assert any(name.startswith("events.out.tfevents") for name in os.listdir(done_run / "tb"))


def test_kill_9_then_resume_keeps_one_history(tmp_path):
    """Evaluations every update, checkpoints every 8: a SIGKILL after an evaluation that no
    checkpoint covers yet; the resume rolls the log back to the checkpoint and goes on."""
    run = tmp_path / "k"
    saved, before = kill_9_ahead_of_checkpoint(
        [ROOT / "train.py", "--runs-dir", tmp_path, "--name", "k", "--total-steps", 10**7, *TINY,
         "--eval-every", UPDATE, "--checkpoint-every", 8 * UPDATE],
        run, ROOT,
    )  # fmt: skip
    checkpoint = run / "checkpoint.safetensors"
    assert before[-1]["step"] > saved  # the log ran ahead of the checkpoint when it died
    best_before = json.loads((run / "best.json").read_text())["score"]
    done = train_py("--resume", run, "--total-steps", saved + 2 * UPDATE)
    assert done.returncode == 0, done.stderr[-2000:]
    final = checkpoint_step(checkpoint)
    assert final >= saved + 2 * UPDATE
    steps = [e["step"] for e in log(run)]
    assert steps == sorted(set(steps)) and steps[-1] == final
    assert [e for e in log(run) if e["step"] <= saved] == [e for e in before if e["step"] <= saved]
    assert read_run(checkpoint)[1].evaluations == log(run)
    assert json.loads((run / "best.json").read_text())["score"] >= best_before


def test_ctrl_c_in_the_middle_of_an_update_saves_the_whole_update(tmp_path, monkeypatch):
    """SIGINT after the first minibatch step of the second update: the update ends, then the run
    stops with a checkpoint equal to that of an uninterrupted run to the same step (so also: the
    same seed gives the same weights)."""
    updates, steps_in_update = [0], [0]
    update, clip = DMCLearner._update, th.nn.utils.clip_grad_norm_

    def counted_update(self, batch):
        updates[0] += 1
        steps_in_update[0] = 0
        return update(self, batch)

    def clip_then_ctrl_c(*args, **kwargs):
        steps_in_update[0] += 1
        if updates[0] == 2 and steps_in_update[0] == 2:
            os.kill(os.getpid(), signal.SIGINT)
        return clip(*args, **kwargs)

    monkeypatch.setattr(DMCLearner, "_update", counted_update)
    monkeypatch.setattr(th.nn.utils, "clip_grad_norm_", clip_then_ctrl_c)
    armed = True

    def interrupt(signum, frame):
        if armed:  # only in this test: a stray one would stop the test session
            raise KeyboardInterrupt

    previous = signal.signal(signal.SIGINT, interrupt)
    try:
        with pytest.raises(KeyboardInterrupt):
            train(tiny_config(tmp_path, "stopped", 10**6))
    finally:
        armed = False
        signal.signal(signal.SIGINT, previous)
    assert updates[0] == 2 and steps_in_update[0] > 2  # the update went on after the signal
    stopped = tmp_path / "stopped" / "checkpoint.safetensors"
    step = checkpoint_step(stopped)
    monkeypatch.undo()
    train(tiny_config(tmp_path, "whole", step))  # its second update is the first at/past step
    whole = tmp_path / "whole" / "checkpoint.safetensors"
    assert checkpoint_step(whole) == step
    got, want = load_file(str(stopped)), load_file(str(whole))
    assert got.keys() == want.keys() and any(k.startswith("optimizer/") for k in want)
    for key in want:
        np.testing.assert_array_equal(got[key], want[key], err_msg=key)


def test_same_seed_same_weights_another_seed_other_weights(tmp_path):
    weights = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        train(tiny_config(tmp_path, name, 2 * UPDATE, seed=seed, opponents=["learner"]))
        weights[name] = load_file(str(tmp_path / name / "checkpoint.safetensors"))
    assert weights["a"].keys() == weights["b"].keys()
    for key in weights["a"]:
        np.testing.assert_array_equal(weights["a"][key], weights["b"][key], err_msg=key)
    assert not np.array_equal(weights["a"]["policy/q.weight"], weights["c"]["policy/q.weight"])


def test_resume_refuses_a_checkpoint_of_other_settings_naming_the_field(done_run, tmp_path):
    run = copy_run(done_run, tmp_path / "r")
    config = json.loads((run / "config.json").read_text())
    config["dmc"]["gamma"] = 0.9
    (run / "config.json").write_text(json.dumps(config))
    done = train_main("--resume", run, "--total-steps", 10_000)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert "dmc.gamma" in lines[0] and "differs from config.json" in lines[0]


def test_soup_writes_the_average_of_the_last_checkpoints_players(done_run, tmp_path):
    run = done_run  # made with --soup 3
    kept = sorted((run / "kept").iterdir())
    steps = [int(p.stem.removeprefix("step-")) for p in kept]
    assert len(kept) == 3 and steps == sorted(set(steps))
    assert steps[-1] == checkpoint_step(run / "checkpoint.safetensors")
    soup = load_file(str(run / "soup.safetensors"))
    players = [load_file(str(p)) for p in kept]
    assert soup.keys() == players[0].keys()
    for key in soup:
        mean = sum(p[key].astype(np.float64) for p in players) / 3
        np.testing.assert_array_equal(soup[key], mean.astype(np.float32), err_msg=key)
    assert any(not np.array_equal(soup[k], players[-1][k]) for k in soup)
    assert read_dmc_model(run / "soup.safetensors")[0]["algo"] == "dmc"
    plays_legal_moves(make(f"dmc:{run / 'soup.safetensors'}"))
    # The services' averaging reads DMC files by their header's kind, as --average does.
    again = average_models(kept, tmp_path / "again.safetensors")
    assert load_file(str(again)).keys() == soup.keys()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--clip-range", "0.1"], "--clip-range is a setting of --algo ppo, not of dmc"),
        (["--epsilon", "2"], "epsilon must be a finite number in [0, 1]"),
        (["--optimizer", "sgd"], "optimizer must be one of adam, rmsprop"),
        (["--init", str(BUNDLED_MODEL)], "--init"),
        (["--horizon", "hand", "--reward", "win"], "horizon hand needs reward penalty"),
        (["--horizon", "win"], f"horizon 'win' was retired: {FINDINGS} holds what it measured"),
        (["--game-loss", "9"], f"--game-loss was retired: {FINDINGS} holds what it measured"),
        (["--acting-symmetries=8"], "--acting-symmetries was retired: docs/findings/dmc-"),
    ],
    ids=["ppo-flag", "epsilon", "optimizer", "init-ppo", "horizon", "win", "loss", "symmetries"],
)
def test_bad_dmc_settings_are_one_line_errors_with_exit_code_2(args, named, tmp_path):
    flags = ["--algo", "dmc", "--runs-dir", tmp_path, "--name", "x", *args, "--total-steps", 64]
    # The real train.py for the first case; the command in this process for the others.
    first = args == ["--clip-range", "0.1"]
    done = train_py(*flags, timeout=120) if first else train_main(*flags, cwd=ROOT)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert named in lines[0]
    assert not (tmp_path / "x").exists()


def test_train_help_shows_dmcs_flags():
    shown = train_py("--algo", "dmc", "--help", timeout=60)
    assert shown.returncode == 0
    assert "--decisions-per-update" in shown.stdout and "--clip-range" not in shown.stdout
    assert "odin_lab.training.dmc.DMCConfig" in shown.stdout


def test_dmc_specs_in_the_registry(done_run):
    check_spec("dmc:any/path.safetensors")  # a model file: read by make, never imported
    assert has_batch_form("dmc:any/path.safetensors")
    with pytest.raises(ValueError, match=r"name what comes after the colon \(or plain dmc"):
        make("dmc:")
    with pytest.raises(ValueError, match="algo 'ppo'.*ppo:PATH"):
        make(f"dmc:{BUNDLED_MODEL}")
    with pytest.raises(FileNotFoundError, match="no DMC model"):
        make(f"dmc:{done_run / 'missing.safetensors'}")


def _learner(**settings) -> DMCLearner:
    config = make_config("dmc", game=Config(players=4), net=[32, 16], seed=1, **settings)
    config.check()
    return DMCLearner(config)


def test_the_numpy_player_plays_the_learners_greedy_choice(tmp_path):
    """All legal pairs of all rows in one torch pass, argmax per row, equal the numpy player's
    choice, also after writing and reading the model file."""
    qnet = _learner().qnet
    games = BatchedGames(Config(players=4), batch=64, seed=2)
    for _ in range(5):
        chosen = qnet.greedy(games.obs, games.mask)
        assert games.mask[np.arange(64), chosen].all()
        np.testing.assert_array_equal(qnet.player().act_batch(games.obs, games.mask), chosen)
        games.step(chosen)
    path = qnet.write(tmp_path / "p.safetensors", {})
    np.testing.assert_array_equal(
        make(f"dmc:{path}").act_batch(games.obs, games.mask), qnet.greedy(games.obs, games.mask)
    )


@pytest.mark.parametrize("horizon", ["hand", "episode"])
def test_a_model_file_names_what_its_values_estimate(horizon, tmp_path):
    """The header keeps the horizon the network was trained with (docs/model-format.md)."""
    path = _learner(horizon=horizon).write_player(tmp_path / "p.safetensors", {})
    info, _ = read_dmc_model(path)
    assert value_horizon(info) == info["horizon"] == horizon
    # Files made before the horizon was recorded valued penalty for the hand.
    assert value_horizon({k: v for k, v in info.items() if k != "horizon"}) == "hand"


def test_an_init_of_another_horizon_gets_its_head_refitted_keeping_its_choices(tmp_path):
    """An episode-horizon run from a hand-penalty network: before its first update the last
    layer maps the values affinely onto the targets (least squares, positive slope), so every
    row's choice is the same and the values' mean is the targets'; a same-horizon init is
    untouched."""
    init = _learner(horizon="hand").write_player(tmp_path / "hand.safetensors", {})
    games = BatchedGames(Config(players=4), batch=64, seed=4)
    obs, mask = games.obs.copy(), games.mask.copy()
    rows, actions = np.nonzero(mask)
    hand = make(f"dmc:{init}").values(obs, mask)[rows, actions]
    noise = np.random.default_rng(0).normal(0.0, 0.05, size=rows.size)
    returns = (0.25 + 0.03 * hand + noise).astype(np.float32)  # values rising with the init's
    for horizon, refits in (("episode", True), ("hand", False)):
        qnet = _learner(horizon=horizon, init=str(init)).qnet
        assert qnet.refit_head == refits
        before = qnet.greedy(obs, mask)
        q0 = qnet.player().values(obs, mask)[rows, actions]
        if refits:
            qnet.refit(th.as_tensor(obs[rows]), th.as_tensor(actions), th.as_tensor(returns))
        q1 = qnet.player().values(obs, mask)[rows, actions]
        np.testing.assert_array_equal(qnet.greedy(obs, mask), before)
        if refits:
            slope, shift = np.polyfit(q0, returns, 1)
            np.testing.assert_allclose(q1, slope * q0 + shift, atol=1e-4)
            assert q1.mean() == pytest.approx(returns.mean(), abs=1e-4)
            assert not qnet.refit_head  # once, before the first update only
        else:
            np.testing.assert_array_equal(q1, q0)
    # Targets falling as the values rise: no negative slope (that would reverse the choices).
    qnet = _learner(horizon="episode", init=str(init)).qnet
    qnet.refit(th.as_tensor(obs[rows]), th.as_tensor(actions), th.as_tensor(-returns))
    np.testing.assert_array_equal(qnet.greedy(obs, mask), before)


def _other_hidden_cards(game: Game, rng: np.random.Generator) -> Game:
    """The same position with the cards the acting seat cannot see (other seats' cards that were
    not shown, the cards set aside) dealt anew among their places."""
    me, known = game.current, game.known
    unseen = [c for s, h in enumerate(game.hands) if s != me for c in cards_of(h & ~known[s])]
    unseen += cards_of(game.set_aside)
    rng.shuffle(unseen)
    hands = []
    for s, h in enumerate(game.hands):
        if s == me:
            hands.append(cards_of(h))
            continue
        count = h.bit_count() - known[s].bit_count()
        hands.append(cards_of(known[s]) + unseen[:count])
        unseen = unseen[count:]
    table = cards_of(COMBO_BITS[game.table]) if game.table >= 0 else None
    return Game.from_position(
        game.config,
        hands,
        me,
        table=table,
        owner=game.owner if table is not None else None,
        take_from=cards_of(game.take_from) if game.take_from else None,
        passes=game.passes,
        discard=cards_of(game.discard),
        known=[cards_of(k) for k in known],
        totals=game.totals,
        hand_leader=game.hand_leader,
    )


def test_the_played_model_reads_nothing_of_the_other_seats_hidden_cards(done_run):
    agent = make(f"dmc:{done_run / 'best.safetensors'}")
    config = Config(players=4)
    rng = np.random.default_rng(0)
    checked = 0
    for seed in range(12):
        game = Game(config, seed=seed)
        for _ in range(3 * seed):  # positions a few decisions into the hand
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
        assert agent.act(obs, mask) == agent.act(obs2, mask2)
        np.testing.assert_array_equal(agent.values(obs, mask), agent.values(obs2, mask2))
        checked += 1
    assert checked >= 8


def test_a_decisions_target_is_its_seats_discounted_return():
    """Hand-made: rewards 0, -2, 0, -3 give returns -5, -5, -3, -3 (gamma 1) and -1.375, -2.75,
    -1.5, -3 (gamma 0.5)."""
    assert discounted_returns([0.0, -2.0, 0.0, -3.0], 1.0) == [-5.0, -5.0, -3.0, -3.0]
    assert discounted_returns([0.0, -2.0, 0.0, -3.0], 0.5) == [-1.375, -2.75, -1.5, -3.0]
    assert discounted_returns([], 0.9) == []


@pytest.mark.parametrize("episode", ["hand", "game"])
def test_the_collectors_targets_are_each_seats_return_from_that_decision(episode):
    """The learner in every seat. One hand: only its end pays (minus the cards left), so with
    gamma 0.5 a seat's k-th last decision's target is its penalty times -0.5**k. A game to 5
    points, gamma 1: a seat's first decision's target is minus its final total."""
    gamma = 0.5 if episode == "hand" else 1.0
    finished = _collected(Config(players=3, threshold=5, episode=episode), gamma)
    checked = 0
    for e in finished.episodes:
        for seat in range(3):
            mine = (finished.game == e.game) & (finished.episode == e.episode)
            returns = finished.returns[mine & (finished.seat == seat)]
            if not len(returns):  # every decision of that seat was forced (none is asked)
                continue
            total = -float(e.totals[seat])
            if episode == "hand":
                expected = total * gamma ** np.arange(len(returns))[::-1]
                np.testing.assert_allclose(returns, expected, rtol=1e-6)
            else:
                assert returns[0] == pytest.approx(total)
            checked += 1
    assert checked >= 2 * len(finished.episodes)


def test_with_horizon_hand_a_target_is_what_its_hand_pays_the_seat():
    """A game to 5 points, returns cut at each hand's end: one value per (seat, hand), the
    hand's penalty, and a seat's values over the hands of the game add up to its final total."""
    finished = _collected(Config(players=3, threshold=5), 1.0, "hand")
    checked = 0
    for e in finished.episodes:
        mine = (finished.game == e.game) & (finished.episode == e.episode)
        hands = int(finished.hand[mine].max()) + 1
        assert hands >= 1
        for seat in range(3):
            ours = mine & (finished.seat == seat)
            values = []
            for hand in range(hands):
                returns = finished.returns[ours & (finished.hand == hand)]
                if len(returns):
                    assert np.all(returns == returns[0])  # only the hand's end pays
                    values.append(float(returns[0]))
            if len(values) == hands:  # the seat had a choice in every hand
                assert sum(values) == pytest.approx(-float(e.totals[seat]))
                checked += 1
    assert checked >= len(finished.episodes)
    assert (finished.hand > 0).any()  # games of more than one hand were checked


def test_the_collector_refuses_an_unknown_horizon():
    games = BatchedGames(Config(players=3), batch=2, seed=0)
    with pytest.raises(ValueError, match="horizon must be one of hand, episode; got 'win'"):
        DMCCollector(games, None, None, np.random.default_rng(0), 1.0, "win")


def _collected(config: Config, gamma: float, horizon: str = "episode"):
    """200 or more learner decisions of finished episodes, every seat the learner's (epsilon 0.1
    around the first legal action)."""
    games = BatchedGames(config, batch=4, seed=0)

    def first_legal(obs, mask):
        return mask.argmax(1)

    rng = np.random.default_rng(0)
    finished = DMCCollector(games, None, first_legal, rng, gamma, horizon).collect(200, 0.1)
    assert len(finished) >= 200 and finished.episodes
    return finished


def test_exploration_falls_linearly_from_epsilon_start_to_epsilon():
    config = make_config("dmc", epsilon=0.05, epsilon_start=0.25, epsilon_decay_steps=1000)
    settings = config.algo_config
    assert settings.exploration(0) == pytest.approx(0.25)
    assert settings.exploration(500) == pytest.approx(0.15)
    assert settings.exploration(1000) == settings.exploration(10**6) == pytest.approx(0.05)
    assert make_config("dmc", epsilon=0.1).algo_config.exploration(0) == 0.1


def test_init_starts_a_dmc_run_from_a_dmc_model_files_weights(done_run):
    best = done_run / "best.safetensors"
    learner = _learner(init=str(best))
    _, state = read_dmc_model(best)
    got = learner.qnet.state()
    assert got.keys() == state.keys()
    for key, value in state.items():
        np.testing.assert_array_equal(got[key], value, err_msg=key)


def test_a_dmc_file_of_nan_weights_is_refused_when_read(tmp_path):
    """Weights that are not finite numbers cannot be a trained network: one line, never played."""
    import json

    from safetensors import safe_open
    from safetensors.numpy import save_file

    from agents.dmc import read_dmc_model

    config = make_config("dmc", net=[8], runs_dir=str(tmp_path), name="n", total_steps=0)
    good = DMCLearner(config).write_player(tmp_path / "good.safetensors", {})
    with safe_open(str(good), framework="np") as f:
        metadata = f.metadata()
        tensors = {k: f.get_tensor(k) for k in f.keys()}  # noqa: SIM118
    key = next(k for k in tensors if k.endswith("q.bias"))
    tensors[key] = np.full_like(tensors[key], np.nan)
    save_file(tensors, str(tmp_path / "bad.safetensors"), metadata)
    with pytest.raises(ValueError, match="q.bias is not finite") as refused:
        read_dmc_model(tmp_path / "bad.safetensors")
    assert "\n" not in str(refused.value) and json.loads(metadata["model"])["algo"] == "dmc"


@pytest.mark.parametrize("algo", ["dmc", "exit"])
def test_a_config_json_of_282f95f_is_read_without_its_retired_settings(algo, tmp_path):
    """A run folder made before the settings were retired (``tests/data``): read as the same run
    where it holds what the lab does today (game_loss 0, one acting labelling, horizon hand,
    relative false); refused in one line naming the setting and its findings page where not."""
    payload = json.loads((ROOT / "tests" / "data" / f"config_282f95f_{algo}.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps(payload))
    config = read_config(tmp_path)
    kept = {
        k: v
        for k, v in payload[algo].items()
        if k not in ("game_loss", "acting_symmetries", "horizon", "relative")
    }
    assert config.algo == algo and {**vars(config.algo_config), **kept} == vars(config.algo_config)
    assert not {"game_loss", "acting_symmetries", "relative"} & set(vars(config.algo_config))
    page = "dmc-settings.md" if algo == "dmc" else "expert-iteration.md"
    retired = {
        "dmc": [("game_loss", 3.0), ("acting_symmetries", 8), ("horizon", "win")],
        "exit": [("relative", True), ("horizon", "win")],
    }[algo]
    for name, value in retired:
        (tmp_path / "config.json").write_text(
            json.dumps({**payload, algo: {**payload[algo], name: value}})
        )
        with pytest.raises(TrainingError) as refused:
            read_config(tmp_path)
        line = str(refused.value)
        assert f"{name} {value!r} was retired: docs/findings/{page}" in line, line
        assert "commit 282f95f" in line and "\n" not in line


def test_resume_takes_a_retired_setting_at_todays_value_and_refuses_another(done_run, tmp_path):
    """Also: a resume never replaces a better best model on record (one resume for both)."""
    run = copy_run(done_run, tmp_path / "r")
    config = json.loads((run / "config.json").read_text())
    today = {**config, "dmc": {**config["dmc"], "game_loss": 0.0, "acting_symmetries": 1}}
    (run / "config.json").write_text(json.dumps(today))
    (run / "best.json").write_text(json.dumps({"score": 2.0, "step": 0}))  # beyond any score
    best = (run / "best.safetensors").read_bytes()
    target = checkpoint_step(run / "checkpoint.safetensors") + 2 * UPDATE
    done = train_main("--resume", run, "--total-steps", target)
    assert done.returncode == 0, done.stderr[-2000:]
    assert len(log(run)) > len(log(done_run))  # it evaluated again ...
    assert (run / "best.safetensors").read_bytes() == best  # ... and kept the better model
    assert json.loads((run / "best.json").read_text())["score"] == 2.0
    (run / "config.json").write_text(json.dumps({**today, "dmc": {**today["dmc"], "game_loss": 4}}))
    done = train_main("--resume", run, "--total-steps", target + UPDATE)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert f"game_loss 4 was retired: {FINDINGS}" in lines[0]
