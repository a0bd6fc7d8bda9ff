"""Expert iteration (``train.py --algo exit``): the search labels every candidate of the
learner's decisions with its mean hand penalty (soft targets), the network is fitted to them,
the search can play out with the network itself, a seeded run is reproducible, and bad or
retired settings are one line naming them."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from safetensors.numpy import load_file

from agents.dmc import BUNDLED_DMC, DMCAgent
from agents.registry import make, make_batch_agent
from agents.search import score_candidates
from odin_env.batched import BatchedGames
from odin_env.rules import Config
from odin_env.seeding import spawn_seed
from odin_lab.files import write_model
from odin_lab.training import make_config, train
from odin_lab.training.config import TrainingError
from odin_lab.training.dmc import DMCLearner
from odin_lab.training.exit import LABELS, ExItLearner
from odin_lab.training.learner import GAMES_STREAM

SMALL = dict(
    opponents=["random", "greedy"],
    selfplay_batch=4,
    decisions_per_update=16,
    rollouts=16,
    net=[32, 16],
    batch_size=32,
    eval_every=0,
    game=Config(players=3, threshold=5),
)


def _learner(tmp_path, **settings) -> ExItLearner:
    config = make_config("exit", runs_dir=str(tmp_path), **{**SMALL, **settings})
    config.check()
    learner = ExItLearner(config)
    learner.start()
    return learner


def _positions(n: int, players: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """``n`` observations (with their masks) of decisions with several legal actions."""
    games = BatchedGames(Config(players=players), batch=32, seed=5)
    obs, masks = [], []
    while len(obs) < n:
        rows = np.flatnonzero(games.mask.sum(axis=1) > 1)
        obs += list(games.obs[rows])
        masks += list(games.mask[rows])
        games.step(games.first_legal)
    return np.array(obs[:n]), np.array(masks[:n])


def test_the_search_takes_a_batched_agent_as_its_playout_policy():
    """A batched player object plays the playouts as its name does: the same scores."""
    obs, mask = _positions(1)
    named = score_candidates(obs[0], mask[0], rollouts=48, seed=3, policy="planner")
    given = score_candidates(
        obs[0], mask[0], rollouts=48, seed=3, policy=make_batch_agent("planner", seed=0)
    )
    assert np.array_equal(named.actions, given.actions) and named.actions.size > 1
    assert np.array_equal(named.penalty, given.penalty) and np.array_equal(named.win, given.win)
    with pytest.raises(ValueError, match="policy must be one of .* or a batched agent"):
        score_candidates(obs[0], mask[0], rollouts=8, policy="nobody")


def test_every_candidate_is_labelled_with_minus_the_searchs_mean_penalty(tmp_path):
    learner = _learner(tmp_path, seed=7)
    obs, mask = _positions(2)
    chosen = learner.expert(obs, mask)
    seeds = np.random.default_rng(spawn_seed(7, GAMES_STREAM, 0, LABELS))
    assert len(learner.labels) == 2
    for k, (seen, actions, targets) in enumerate(learner.labels):
        scores = score_candidates(obs[k], mask[k], rollouts=16, seed=int(seeds.integers(2**63)))
        assert np.array_equal(seen, obs[k])
        assert np.array_equal(actions, np.flatnonzero(mask[k]))  # every legal action, soft
        assert np.allclose(targets, -scores.penalty)
        assert chosen[k] == scores.best  # the seat plays the search's choice
    one = np.zeros_like(mask[:1])
    one[0, np.flatnonzero(mask[0])[0]] = 1
    assert learner.expert(obs[:1], one)[0] == np.flatnonzero(mask[0])[0]
    assert len(learner.labels) == 2  # a decision without a choice is not labelled


def test_with_top_only_the_networks_shortlist_is_searched_and_labelled(tmp_path):
    learner = _learner(tmp_path, seed=7, top=2)
    obs, mask = _positions(40)
    many = np.flatnonzero(mask.sum(axis=1) > 2)[:3]
    assert many.size == 3
    chosen = learner.expert(obs[many], mask[many])
    values = learner.prior.values(obs[many], mask[many])
    assert np.array_equal(values, learner.qnet.player().values(obs[many], mask[many]))
    seeds = np.random.default_rng(spawn_seed(7, GAMES_STREAM, 0, LABELS))
    for k, (_, actions, targets) in enumerate(learner.labels):
        legal = np.flatnonzero(mask[many[k]])
        best_two = legal[np.argsort(-values[k][legal], kind="stable")[:2]]
        assert np.array_equal(actions, np.sort(best_two))  # the network's two, not every legal
        shortlist = np.zeros_like(mask[many[k]])
        shortlist[best_two] = 1
        scores = score_candidates(
            obs[many[k]], shortlist, rollouts=16, seed=int(seeds.integers(2**63))
        )
        assert np.allclose(targets, -scores.penalty) and chosen[k] == scores.best
    before = [v.copy() for v in learner.qnet.state().values()]
    learner.train_step()  # the shortlist follows the network: renewed with each update
    assert any(not np.array_equal(a, b) for a, b in zip(before, learner.prior.arrays.values()))


def test_a_teacher_labels_every_legal_action_with_its_values_and_plays_its_choice(tmp_path):
    """Distillation: with ``teacher`` the labels are the teacher model's values of every legal
    action (as it plays: here the bundled ensemble under its labellings), the seat plays the
    teacher's choice, a decision without a choice is not labelled, and fitting on the labels
    moves a small student towards the teacher's choices."""
    learner = _learner(tmp_path, teacher=str(BUNDLED_DMC), game=Config(players=4))
    teacher = DMCAgent.load(BUNDLED_DMC)
    obs, mask = _positions(48, players=4)
    chosen = learner.expert(obs, mask)
    values = teacher.values(obs, mask)
    assert np.array_equal(chosen, values.argmax(1))
    assert np.array_equal(chosen, teacher.act_batch(obs, mask))
    assert len(learner.labels) == 48
    for k, (seen, actions, targets) in enumerate(learner.labels):
        assert np.array_equal(seen, obs[k])
        assert np.array_equal(actions, np.flatnonzero(mask[k]))
        assert np.array_equal(targets, values[k, actions])
    one = np.zeros_like(mask[:1])
    one[0, np.flatnonzero(mask[0])[0]] = 1
    assert learner.expert(obs[:1], one)[0] == np.flatnonzero(mask[0])[0]
    assert len(learner.labels) == 48
    first = learner._fit(learner.labels)
    for _ in range(60):
        last = learner._fit(learner.labels)
    assert last["train/q_loss"] < 0.25 * first["train/q_loss"]
    assert last["train/agreement"] > first["train/agreement"]


def test_the_fit_moves_the_network_onto_the_labels(tmp_path):
    learner = _learner(tmp_path)
    obs, mask = _positions(24)
    learner.expert(obs, mask)
    labels = learner.labels
    first = learner._fit(labels)
    for _ in range(40):
        last = learner._fit(labels)
    assert last["train/q_loss"] < 0.25 * first["train/q_loss"]
    assert last["train/agreement"] > first["train/agreement"]
    assert last["train/candidates"] == sum(len(a) for _, a, _ in labels) > 24


def test_a_win_valued_init_has_its_head_refitted_to_the_penalty_labels(tmp_path):
    """Expert iteration from a network whose header says it values win chance (DMC's retired
    win horizon; the labels are penalty): the file loads, its first fit refits the head onto the
    labels once, and that refit (pairs read through the labels' rows) more than halves the loss
    of the raw values."""
    dmc = make_config("dmc", runs_dir=str(tmp_path), net=[32, 16], game=Config(players=3))
    qnet = DMCLearner(dmc).qnet
    path = write_model(tmp_path / "win.safetensors", qnet.state(), {**qnet.info, "horizon": "win"})
    learner = _learner(tmp_path / "x", init=str(path))
    assert learner.qnet.refit_head and learner.qnet.info["horizon"] == "hand"  # its labels' units
    obs, mask = _positions(24)
    learner.expert(obs, mask)
    learner._fit(learner.labels)
    assert not learner.qnet.refit_head  # refitted once, at the first fit
    plain = _learner(tmp_path / "y", init=str(path))
    plain.qnet.refit_head = False  # the same start without the refit
    plain.expert(obs, mask)
    raw = _loss(plain, plain.labels)
    obs_t, actions, rows, targets, _, _ = plain._tensors(plain.labels)
    plain.qnet.refit(obs_t, actions, targets, rows)
    assert _loss(plain, plain.labels) < 0.5 * raw


def _loss(learner: ExItLearner, labels: list) -> float:
    obs, actions, rows, targets, _, _ = learner._tensors(labels)
    with torch.no_grad():
        return float(torch.nn.functional.mse_loss(learner.qnet.net(obs, actions, rows), targets))


def test_the_replay_keeps_the_latest_labels_and_fits_on_all_of_them(tmp_path):
    learner = _learner(tmp_path, replay=20)
    seen: list[tuple[list, list]] = []
    fit = learner._fit

    def recorded(labels, kept=None):
        seen.append((labels, kept))
        return fit(labels, kept)

    learner._fit = recorded
    figures = [learner.train_step() for _ in range(3)]
    history: list = []
    for (labels, kept), step in zip(seen, figures):
        history += labels
        assert len(labels) >= 16 and step["train/kept"] == len(kept) == min(20, len(history))
        assert all(a is b for a, b in zip(kept, history[-20:]))  # the latest, in order
    # Older labels are fitted too: a replay of far-off targets pulls the network onto them.
    old = [(o, a, t - 5.0) for o, a, t in seen[0][0]]
    before = _loss(learner, old)
    for _ in range(30):
        fit(seen[-1][0], old + list(learner.kept))
    assert _loss(learner, old) < 0.5 * before


def test_the_replay_is_in_the_checkpoint(tmp_path):
    learner = _learner(tmp_path, replay=20)
    learner.train_step()
    tensors, _, run = learner.checkpoint()
    again = ExItLearner(make_config("exit", runs_dir=str(tmp_path), **{**SMALL, "replay": 20}))
    again.load_checkpoint(tensors, {**run, "step": learner.steps})
    assert len(again.kept) == len(learner.kept) >= 16 and again.kept.maxlen == 20
    for mine, theirs in zip(learner.kept, again.kept):
        assert all(np.array_equal(x, y) for x, y in zip(mine, theirs))
    assert not any(k.startswith("replay/") for k in _learner(tmp_path).checkpoint()[0])
    tensors["replay/targets"] = tensors["replay/targets"][:-1]  # a damaged file
    with pytest.raises(ValueError, match="the replay's observations, candidates and targets"):
        again.load_checkpoint(tensors, {**run, "step": learner.steps})


def test_learner_playouts_are_the_network_of_the_update_start(tmp_path):
    learner = _learner(tmp_path, playout="learner")
    assert isinstance(learner.playout, DMCAgent)
    before = learner.qnet.state()
    assert all(np.array_equal(learner.playout.arrays[k], v) for k, v in before.items())
    figures = learner.train_step()
    assert figures["train/decisions"] >= 16 and learner.steps == figures["train/decisions"]
    after = learner.qnet.state()
    assert any(not np.array_equal(before[k], after[k]) for k in before)
    assert all(np.array_equal(learner.playout.arrays[k], v) for k, v in after.items())


def test_a_seeded_run_is_reproducible_and_its_player_plays_as_dmc(tmp_path):
    paths = [
        train(make_config("exit", name=name, runs_dir=str(tmp_path), total_steps=32, **SMALL))
        for name in ("a", "b")
    ]
    a, b = (load_file(str(p)) for p in paths)
    assert sorted(a) == sorted(b) and all(np.array_equal(a[k], b[k]) for k in a)
    player = make(f"dmc:{paths[0]}")  # the checkpoint plays (its policy)
    obs, mask = _positions(1)
    assert mask[0, player.act(obs[0], mask[0])] == 1


def test_searches_on_workers_make_the_same_run_and_a_resume_may_change_their_count(tmp_path):
    """``workers``: the searches of a batch run in other processes, and the checkpoint (weights,
    optimizer, replay) is byte for byte the one a single process makes; ``--workers`` may
    change on resume, and the run goes on."""
    settings = {**SMALL, "top": 2, "replay": 64}

    def run(name: str, workers: int) -> dict[str, np.ndarray]:
        config = make_config(
            "exit", name=name, runs_dir=str(tmp_path), total_steps=32, workers=workers, **settings
        )
        return load_file(str(train(config)))

    one, two = run("one", workers=1), run("two", workers=2)
    assert sorted(one) == sorted(two) and any(k.startswith("replay/") for k in one)
    assert all(np.array_equal(one[k], two[k]) for k in one)
    checkpoint = tmp_path / "two" / "checkpoint.safetensors"
    before = checkpoint.read_bytes()
    config = make_config("exit", name="two", runs_dir=str(tmp_path), total_steps=64, **settings)
    assert train(config, resume=True)  # workers 1 now: the checkpoint does not hold them
    assert checkpoint.read_bytes() != before
    with pytest.raises(ValueError, match="workers run the searches of --algo exit; dmc has none"):
        make_config("dmc", runs_dir=str(tmp_path), workers=2).check()


def test_a_distillation_resumes_only_with_the_teacher_it_was_taught_by(tmp_path):
    """The checkpoint keeps the teacher file's sha256 (config.json names only its path): with
    another file at that path the resume refuses in one line and leaves the checkpoint as it
    was; with the first file back it goes on to its target."""
    teachers = []
    for k, width in enumerate((16, 24)):
        dmc = make_config("dmc", runs_dir=str(tmp_path), net=[width, 8], game=Config(players=3))
        teachers.append(DMCLearner(dmc).write_player(tmp_path / f"t{k}.safetensors", {}))
    path = tmp_path / "teacher.safetensors"
    path.write_bytes(teachers[0].read_bytes())
    settings = {**SMALL, "teacher": str(path), "runs_dir": str(tmp_path)}
    checkpoint = train(make_config("exit", name="d", total_steps=32, **settings))
    kept = checkpoint.read_bytes()
    path.write_bytes(teachers[1].read_bytes())
    with pytest.raises(TrainingError) as refused:
        train(make_config("exit", name="d", total_steps=64, **settings), resume=True)
    assert "is not the file this run was taught by" in str(refused.value)
    assert len(str(refused.value).splitlines()) == 1 and checkpoint.read_bytes() == kept
    path.write_bytes(teachers[0].read_bytes())
    assert train(make_config("exit", name="d", total_steps=64, **settings), resume=True)
    assert checkpoint.read_bytes() != kept  # it went on


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"rollouts": 0}, "rollouts must be an integer 1-100,000"),
        ({"playout": "nobody"}, "playout must be one of greedy, shaper, planner, learner"),
        ({"epsilon": 1.5}, "epsilon must be a finite number in [0, 1]"),
        ({"decisions_per_update": 0}, "decisions_per_update must be an integer 1-1,000,000"),
        ({"replay": -1}, "replay must be an integer 0-1,000,000"),
        ({"replay": 2.5}, "replay must be an integer 0-1,000,000"),
        ({"top": -1}, "top must be an integer 0-3,634"),
        ({"workers": 0}, "workers must be an integer 1-1,024"),
        ({"workers": 2, "teacher": str(BUNDLED_DMC)}, "leave workers at 1 with teacher; got"),
        ({"game": Config(reward="win")}, "exit needs reward penalty"),
        ({"teacher": "no/such.safetensors"}, "teacher: no DMC model at no/such.safetensors"),
        ({"teacher": str(BUNDLED_DMC.parent / "ppo_4p.safetensors")}, "teacher: cannot load DMC"),
    ],
)
def test_bad_settings_are_one_line_naming_them(tmp_path, settings, named):
    config = make_config("exit", runs_dir=str(tmp_path), **{**SMALL, **settings})
    with pytest.raises(ValueError) as error:
        config.check()
    assert named in str(error.value) and "\n" not in str(error.value)


@pytest.mark.parametrize(
    ("settings", "named"),
    [
        ({"horizon": "win"}, "horizon 'win' was retired: docs/findings/expert-iteration.md"),
        ({"relative": True}, "relative True was retired: docs/findings/expert-iteration.md"),
    ],
)
def test_a_retired_setting_is_one_line_naming_its_findings(tmp_path, settings, named):
    with pytest.raises(ValueError) as error:
        make_config("exit", runs_dir=str(tmp_path), **{**SMALL, **settings})
    assert named in str(error.value) and "commit 282f95f" in str(error.value)
    assert "\n" not in str(error.value)
