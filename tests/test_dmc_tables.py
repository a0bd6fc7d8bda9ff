"""One network for several table sizes (``train.py --algo dmc --other-tables 2 3 5 6``): the
sizes take one update each in turn, the first keeps a one-size run's seeds, a resumed run goes on
with the size whose turn it is, the model plays every size, and bad sizes are one-line errors."""

from __future__ import annotations

import re

import numpy as np
import pytest
from test_dmc import UPDATE, plays_legal_moves, train_py

from agents.dmc import BUNDLED_DMC, DMCAgent, read_dmc_model
from agents.registry import agent_names, make, make_batch_agent
from odin_env.observation import LAYOUT
from odin_env.rules import MIN_PLAYERS, Config
from odin_lab.evaluation.provenance import model_files, sha256
from odin_lab.training import make_config
from odin_lab.training.dmc import DMCLearner

PLAYERS = LAYOUT["players"][0]


def _learner(**settings) -> DMCLearner:
    config = make_config(
        "dmc",
        game=Config(players=4, threshold=5),
        net=[32, 16],
        seed=7,
        selfplay_batch=8,
        decisions_per_update=UPDATE,
        batch_size=16,
        opponents=["random", "self"],
        **settings,
    )
    config.check()
    learner = DMCLearner(config)
    learner.start()
    return learner


def _sizes_trained(learner: DMCLearner, updates: int) -> list[set[int]]:
    """The table sizes in the observations of each of the next ``updates`` updates."""
    seen, update = [], learner._update

    def spy(batch):
        seen.append(set((batch.obs[:, PLAYERS].argmax(1) + MIN_PLAYERS).tolist()))
        return update(batch)

    learner._update = spy
    for _ in range(updates):
        learner.train_step()
    return seen


def test_the_sizes_take_one_update_each_in_turn_and_the_model_plays_every_size():
    learner = _learner(other_tables=[2, 6])
    assert _sizes_trained(learner, 5) == [{4}, {2}, {6}, {4}, {2}]
    assert learner.qnet.info["players"] is None  # a model of several sizes names none
    agent = learner.qnet.player()
    for players in (2, 3, 5, 6):
        plays_legal_moves(agent, players)
    assert _learner().qnet.info["players"] == 4


@pytest.mark.parametrize(
    ("colours", "expected"), [(None, {2: 4, 4: 6, 6: 6}), (5, {2: 5, 4: 5, 3: 5})]
)
def test_each_table_deals_r3s_colours_unless_the_run_chose_its_own(colours, expected):
    """R3: 4 colours at 2 players, else 6. A run at its size's default plays every other size at
    that size's default (once the 2-player tables were dealt 6 colours, a game nobody plays); a
    run that chose its colours plays them at every size."""
    config = make_config(
        "dmc",
        game=Config(players=4, colours=colours),
        net=[32, 16],
        selfplay_batch=8,
        other_tables=sorted(set(expected) - {4}),
    )
    config.check()
    learner = DMCLearner(config)
    learner.start()
    for collector in learner.actors.collectors:
        game = collector.games.config
        assert game.colours == expected[game.players], game
        hands = collector.games.obs[:, LAYOUT["hand"][0]].reshape(8, 6, 9)
        held = hands.any(axis=(0, 2))  # the colours some hand holds
        assert held[: game.colours].all() and not held[game.colours :].any()


def test_a_table_its_colours_cannot_deal_is_refused_naming_the_setting():
    with pytest.raises(ValueError, match=re.escape("got 5 (other_tables 6); or leave colours")):
        make_config("dmc", game=Config(players=4, colours=5), other_tables=[6]).check()


def test_the_first_size_keeps_the_seeds_of_a_one_size_run():
    one, mixed = _learner(), _learner(other_tables=[3])
    one.train_step()
    mixed.train_step()
    for key, value in one.qnet.state().items():
        np.testing.assert_array_equal(mixed.qnet.state()[key], value, err_msg=key)
    mixed.train_step()  # the next update is another table's: the weights part
    assert not np.array_equal(mixed.qnet.state()["q.weight"], one.qnet.state()["q.weight"])


def test_a_resumed_run_goes_on_with_the_size_whose_turn_it_is():
    first = _learner(other_tables=[2, 5])
    _sizes_trained(first, 2)
    tensors, _, run = first.checkpoint()
    again = _learner(other_tables=[2, 5])
    again.load_checkpoint(dict(tensors), {**run, "step": first.steps})
    again.start()
    assert _sizes_trained(again, 2) == [{5}, {4}]
    assert len(again.qnet.snapshots) == len(first.qnet.snapshots)
    assert all(pool.snapshots == again.qnet.snapshots for pool in again.actors.pools)


def test_bad_table_sizes_are_one_line_errors_with_exit_code_2(tmp_path):
    done = train_py(
        "--runs-dir", tmp_path, "--name", "x", "--other-tables", 7, "--total-steps", 64, timeout=120
    )
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 2 and len(lines) == 1, done.stderr
    assert "other_tables must be 0-5 values, each an integer 2-6; got [7]" in lines[0]
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("algo", "settings", "named"),
    [
        ("dmc", {"other_tables": [3, 3]}, "other_tables names a size twice; got [3, 3]"),
        ("dmc", {"other_tables": [2], "seat": 3}, "seat 3 does not exist at a table of 2"),
        ("dmc", {"other_tables": "23"}, "other_tables must be 0-5 values, each an integer 2-6"),
        ("exit", {"other_tables": [1]}, "other_tables must be 0-5 values, each an integer 2-6"),
    ],
)
def test_bad_table_sizes_are_refused_naming_the_setting(algo, settings, named):
    with pytest.raises(ValueError, match=re.escape(named)):
        make_config(algo, game=Config(players=4), **settings).check()


def test_the_bundled_network_is_a_network_alone_for_every_table_size():
    """``dmc`` is the bundled DMC file, a Q-network read with numpy and nothing else (no
    heuristic, no search), whose header names no table size, and it plays every size."""
    agent = make("dmc")
    assert type(agent) is DMCAgent and agent.path == BUNDLED_DMC
    assert agent.info["players"] is None and agent.info["algo"] == "dmc"
    assert set(agent.arrays) == {n for n in read_dmc_model(BUNDLED_DMC)[1]}
    assert all(n.startswith(("state_in", "action_in", "hidden", "q.")) for n in agent.arrays)
    for players in (2, 3, 4, 5, 6):
        plays_legal_moves(agent, players)
    assert isinstance(make_batch_agent("dmc"), DMCAgent) and "dmc" in agent_names()
    assert model_files(["dmc"]) == {"dmc/dmc.safetensors": sha256(BUNDLED_DMC)}
