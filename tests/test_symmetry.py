"""Relabelling the colours of every card is a symmetry of the game and of its encodings."""

from __future__ import annotations

import math
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
from dmc_networks import positions, random_dmc
from training_inprocess import train_main

from agents.dmc import MAX_SYMMETRIES, DMCAgent, read_dmc_model
from odin_env.cards import NUM_VALUES, cards_of
from odin_env.combos import combo_index
from odin_env.observation import LAYOUT, observe, views
from odin_env.rules import NUM_ACTIONS, TAKE, Config, Game
from odin_env.symmetry import colour_permutations, colour_relabelling, colour_relabellings
from odin_lab.files import write_model
from odin_lab.training import make_config
from odin_lab.training.dmc import DMCLearner
from odin_lab.training.dmc_collector import Finished

ROOT = Path(__file__).resolve().parents[1]


def relabelled_start(game: Game, perm: tuple[int, ...]) -> Game:
    """``game`` at the start of its first hand, every card's colour ``c`` made ``perm[c]``."""

    def card(c: int) -> int:
        return perm[c // NUM_VALUES] * NUM_VALUES + c % NUM_VALUES

    hands = [[card(c) for c in cards_of(hand)] for hand in game.hands]
    return Game.from_position(game.config, hands, game.current)


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_a_relabelled_deal_plays_the_same_game_through_the_maps(players: int) -> None:
    config = Config(players=players)
    for perm in colour_permutations(config.colours, 4)[1:]:
        maps = colour_relabelling(perm)
        inverse = np.argsort(maps.action)
        rng = np.random.default_rng(players)
        game = Game(config, seed=players)
        twin = relabelled_start(game, perm)
        decisions = 0
        while not game.history:  # the first hand: the next deal draws from each game's own rng
            for seat in range(players):
                np.testing.assert_array_equal(observe(twin, seat), observe(game, seat)[maps.obs])
            np.testing.assert_array_equal(twin.legal_mask(), game.legal_mask()[inverse])
            action = int(game.legal[rng.integers(len(game.legal))])
            rewards = game.apply(action)
            assert twin.apply(int(maps.action[action])) == rewards
            decisions += 1
        assert twin.history == game.history and decisions > players


def test_the_maps_are_permutations_that_move_cards_with_their_colour() -> None:
    perm = (2, 0, 1, 3, 5, 4)
    maps = colour_relabelling(perm)
    assert sorted(maps.obs) == list(range(len(maps.obs)))
    assert sorted(maps.action) == list(range(NUM_ACTIONS))
    assert not (maps.action == np.arange(NUM_ACTIONS)).all()
    identity = colour_relabelling(range(6))
    assert (identity.obs == np.arange(len(identity.obs))).all()
    assert (identity.action == np.arange(NUM_ACTIONS)).all()
    # card 4 (colour 0, value 5) becomes colour 2's 5; card 13 (colour 1's 5) colour 0's
    assert maps.action[combo_index([4])] == combo_index([2 * NUM_VALUES + 4])
    assert maps.action[combo_index([4, 13])] == combo_index([4, 2 * NUM_VALUES + 4])
    assert maps.action[TAKE + 13] == TAKE + 4


def test_colour_permutations_are_fixed_distinct_and_keep_the_colours_out_of_play() -> None:
    four = colour_permutations(4, 30)
    assert len(four) == 24 and len(set(four)) == 24  # all 4! of them, once each
    assert four[0] == (0, 1, 2, 3, 4, 5)
    assert all(p[4:] == (4, 5) for p in four)
    six = colour_permutations(6, 8)
    assert len(set(six)) == 8 and six == colour_permutations(6, 8)
    assert six[:4] == colour_permutations(6, 4)  # a shorter list is a prefix
    assert six[1] != (0, 1, 2, 3, 5, 4)  # spread, not the lexicographic neighbours
    with pytest.raises(ValueError, match="permutation of 0 .. 5"):
        colour_relabelling((0, 0, 1, 2, 3, 4))
    with pytest.raises(ValueError, match="count >= 1"):
        colour_permutations(6, 0)


# -- a DMC player that reads a position under several labellings (agents.dmc) -----------------


def _network(symmetries: int, seed: int = 0) -> DMCAgent:
    """A random DMC network (16-8 wide) whose player averages over ``symmetries`` labellings."""
    info, state = random_dmc([16, 8], seed, scale=0.5, symmetries=symmetries)
    return DMCAgent(state, info)


def _positions(*sizes: int, steps: int = 12) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of real positions at the table sizes given, in one batch."""
    both = [positions(players, steps, batch=6, seed=players) for players in sizes]
    return np.concatenate([o for o, _ in both]), np.concatenate([m for _, m in both])


def _relabelled(obs: np.ndarray, masks: np.ndarray, perm: tuple[int, ...]):
    maps = colour_relabelling(perm)
    return maps, obs[:, maps.obs], masks[:, np.argsort(maps.action)]


def test_a_player_with_symmetries_plays_the_mean_of_its_network_over_the_labellings():
    obs, masks = _positions(2, 4)  # 4 colours in play and 6, in one batch
    player, network = _network(5), _network(1)
    legal = masks.astype(bool)
    expected = np.zeros(masks.shape)
    for row, colours in enumerate(obs[:, LAYOUT["colours"][0]].sum(1).astype(int)):
        for perm in colour_permutations(colours, 5):
            maps, o, m = _relabelled(obs[row : row + 1], masks[row : row + 1], perm)
            expected[row] += network.values(o, m)[0, maps.action] / 5
    got = player.values(obs, masks)
    assert np.isneginf(got[~legal]).all()
    np.testing.assert_allclose(got[legal], expected[legal], rtol=1e-5, atol=1e-5)
    # The labellings matter: the network alone values the positions otherwise.
    assert not np.allclose(network.values(obs, masks)[legal], got[legal], atol=1e-3)


def test_over_every_labelling_the_values_are_exactly_those_of_a_relabelled_game():
    obs, masks = _positions(2)
    every, alone = _network(24), _network(1)  # 4! labellings: all of those of 4 colours
    for perm in colour_permutations(4, 24)[1:4]:
        maps, o, m = _relabelled(obs, masks, perm)
        legal = masks.astype(bool)
        np.testing.assert_allclose(
            every.values(o, m)[:, maps.action][legal], every.values(obs, masks)[legal], atol=1e-4
        )
        assert not np.allclose(
            alone.values(o, m)[:, maps.action][legal], alone.values(obs, masks)[legal], atol=1e-3
        )


@pytest.mark.parametrize("symmetries", [0, MAX_SYMMETRIES + 1, 2.5, True, "8"])
def test_a_model_asking_for_an_impossible_number_of_labellings_is_refused(symmetries, tmp_path):
    network = _network(1)
    info = {**network.info, "symmetries": symmetries}
    with pytest.raises(ValueError, match=f"symmetries is {symmetries!r}; allowed: an integer 1"):
        DMCAgent(network.arrays, info)
    path = tmp_path / "odd.safetensors"
    write_model(path, network.arrays, info)
    with pytest.raises(ValueError, match=f"incompatible DMC model {path}: its symmetries"):
        read_dmc_model(path)


def _train_py(tmp_path: Path, *args: object, process: bool = True) -> subprocess.CompletedProcess:
    """``train.py --runs-dir tmp_path --name sym ARGS``: a real process, or (``process=False``)
    its command called in this process."""
    if not process:
        return train_main("--runs-dir", tmp_path, "--name", "sym", *args, cwd=ROOT)
    return subprocess.run(
        [sys.executable, "train.py", "--runs-dir", str(tmp_path), "--name", "sym", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_train_py_ensemble_symmetries_writes_the_network_with_its_labellings(tmp_path):
    member = tmp_path / "member.safetensors"
    write_model(member, _network(1).arrays, _network(1).info)
    done = _train_py(tmp_path, "--ensemble", member, "--symmetries", 6, process=False)
    assert done.returncode == 0, done.stderr
    info, state = read_dmc_model(tmp_path / "sym" / "ensemble.safetensors")
    assert info["symmetries"] == 6
    obs, masks = _positions(3, steps=4)
    legal = masks.astype(bool)
    np.testing.assert_allclose(
        DMCAgent(state, info).values(obs, masks)[legal],
        _network(6).values(obs, masks)[legal],
        rtol=1e-5,
        atol=1e-5,
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (("--symmetries", 8), "--symmetries is a setting of --ensemble: give it with --ensemble"),
        (("--ensemble", "M", "--symmetries", 0), "--symmetries 0: allowed 1 .. 720"),
        (("--ensemble", "M", "--symmetries", 721), "--symmetries 721: allowed 1 .. 720"),
    ],
)
def test_train_py_refuses_symmetries_it_cannot_write_in_one_line(args, named, tmp_path):
    member = tmp_path / "member.safetensors"
    write_model(member, _network(1).arrays, _network(1).info)
    # The real train.py for the first case; the command in this process for the others.
    first = args[0] == "--symmetries"
    done = _train_py(tmp_path, *(member if a == "M" else a for a in args), process=first)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], done.stderr
    assert not (tmp_path / "sym").exists()


def _dmc_learner(**settings):
    config = make_config("dmc", game=Config(players=4), net=[32, 16], seed=5, **settings)
    config.check()
    learner = DMCLearner(config)
    learner.start()
    return learner


def _decisions() -> tuple[np.ndarray, np.ndarray]:
    """Positions of a 2-player table (4 colours) and a 4-player one (6), each with a random legal
    action."""
    obs, masks = _positions(2, 4, steps=24)
    rng = np.random.default_rng(2)
    return obs, np.array([rng.choice(np.flatnonzero(m)) for m in masks], np.int64)


def test_relabel_reads_each_decision_under_a_labelling_of_its_own_colours_in_play():
    """Every relabelled decision is its position and action under one permutation of the colours
    that row has in play (a 2-player row's two colours out of play stay put), drawn per row: many
    labellings appear, and the same draws give the same copies."""
    learner = _dmc_learner(relabel=True)
    obs, actions = _decisions()
    state = learner.relabel_rng.bit_generator.state
    new_obs, new_actions = learner.relabelled(obs, actions)
    seen = set()
    for row in range(len(obs)):
        colours = int(views(obs[row : row + 1])["colours"].sum())
        obs_maps, action_maps = colour_relabellings(colours, math.factorial(colours))
        match = np.flatnonzero(
            (obs[row][obs_maps] == new_obs[row]).all(1)
            & (action_maps[:, actions[row]] == new_actions[row])
        )
        assert len(match), row
        perms = colour_permutations(colours, math.factorial(colours))
        assert all(perms[k][colours:] == tuple(range(colours, 6)) for k in match)
        seen.add((colours, int(match[0])))
    assert len({k for c, k in seen if c == 4}) > 10 and len({k for c, k in seen if c == 6}) > 50
    assert (new_obs != obs).any(1).mean() > 0.9
    learner.relabel_rng.bit_generator.state = state
    again = learner.relabelled(obs, actions)
    np.testing.assert_array_equal(again[0], new_obs)
    np.testing.assert_array_equal(again[1], new_actions)


def test_with_relabel_an_update_regresses_the_relabelled_decisions_onto_their_own_returns():
    """An update with ``relabel`` is exactly the update without it on the relabelled copies of
    the same decisions, with the same returns; without ``relabel`` the decisions go in as
    played."""
    plain, relabelling = _dmc_learner(), _dmc_learner(relabel=True)
    twin = _dmc_learner(relabel=True)
    obs, actions = _decisions()
    n = len(obs)
    returns = np.random.default_rng(0).normal(size=n).astype(np.float32)
    others = {f.name: np.zeros(n, np.int64) for f in fields(Finished)}
    batch = Finished(**{**others, "obs": obs, "actions": actions, "returns": returns})
    new_obs, new_actions = twin.relabelled(obs, actions)
    relabelling._update(batch)
    plain._update(replace(batch, obs=new_obs, actions=new_actions))
    for name, value in relabelling.qnet.state().items():
        np.testing.assert_array_equal(value, plain.qnet.state()[name])
    unchanged = _dmc_learner()
    unchanged._update(batch)
    assert any(
        not np.array_equal(value, plain.qnet.state()[name])
        for name, value in unchanged.qnet.state().items()
    )
