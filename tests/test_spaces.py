"""Observation bounds and rendering of both environments: finite, true maxima for every field
(Gymnasium's and SB3's checkers pass with no warning at all), the penalty cap shared by the
engine and the batched kernels, and ``render()`` without a render mode saying what to pass."""

from __future__ import annotations

import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from stable_baselines3.common.env_checker import check_env as sb3_check_env

import odin_env
from agents import make
from odin_env.batched import BatchedGames
from odin_env.cards import parse_card
from odin_env.observation import LAYOUT, OBS_SIZE, high, observe, penalty_cap, views
from odin_env.rules import Config, Game
from odin_env.single_agent import SingleAgentEnv

PENALTY, THRESHOLD = LAYOUT["penalty"][0], LAYOUT["threshold"][0]


def cards(*names: str) -> list[int]:
    return [parse_card(n) for n in names]


@pytest.mark.parametrize("settings", [{}, {"players": 2, "threshold": 1}, {"threshold": 250}])
def test_gymnasium_and_sb3_checkers_pass_with_no_warning(settings, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        env = gym.make(odin_env.GYM_ID, opponents=make("greedy"), **settings)
        # Through gym.make the env has a spec, so the checker also renders in every mode.
        check_env(env.unwrapped)
        sb3_check_env(SingleAgentEnv(opponents=make("greedy"), **settings))
    assert "your hand:" in capsys.readouterr().out  # the "human" mode printed the view


@pytest.mark.parametrize("threshold", [1, 15, 250])
def test_both_spaces_are_finite_and_show_the_config(threshold):
    config = Config(players=5, threshold=threshold)
    single = SingleAgentEnv(config).observation_space
    aec = odin_env.env(config=config).observation_space("player_0")["observation"]
    for space in (single, aec):
        assert np.isfinite(space.high).all() and (space.low == 0).all()
        assert np.array_equal(space.high, high(config))
        assert space.high[THRESHOLD][0] == np.float32(threshold / 100)
        assert space.high[PENALTY][0] == np.float32((threshold + 8) / threshold)
    assert (np.delete(high(config), np.r_[PENALTY, THRESHOLD]) == 1).all()


def test_printed_spaces_name_their_bounds_by_field_not_all_574():
    config = Config(players=4, threshold=15)
    single = SingleAgentEnv(config).observation_space
    aec = odin_env.env(config=config).observation_space("player_0")
    expected = "Box(0.0, 1.0 but penalty 1.53 and threshold 0.15, (574,), float32)"
    assert repr(single) == str(single) == expected
    assert repr(aec) == (
        f"Dict('action_mask': Box(0, 1, (3634,), int8), 'observation': {expected})"
    )
    # Still a plain Box (TorchRL converts spaces by their exact type), equal to the bounds.
    assert type(single) is gym.spaces.Box
    assert single == gym.spaces.Box(0.0, high(config), (OBS_SIZE,), np.float32)


@pytest.mark.parametrize(
    "config",
    [
        Config(players=2, threshold=1),
        Config(players=3, threshold=2, first_player="winner"),
        Config(players=6, threshold=40),
        Config(players=4, threshold=3, episode="hand", reward="win"),
    ],
    ids=str,
)
def test_every_observation_of_random_games_lies_in_the_space(config):
    environment = odin_env.env(config=config)
    space = environment.observation_space("player_0")
    rng = np.random.default_rng(0)
    top = np.zeros(OBS_SIZE, dtype=np.float32)
    for game in range(3):
        environment.reset(seed=game)
        for agent in environment.agent_iter():
            obs, _, termination, truncation, _ = environment.last()
            assert space.contains(obs), agent
            top = np.maximum(top, obs["observation"])
            legal = np.flatnonzero(obs["action_mask"])
            environment.step(None if termination or truncation else int(rng.choice(legal)))
    # The fields that took the bound's own value somewhere: the planes and the counts reach 1.
    assert top[THRESHOLD][0] == high(config)[THRESHOLD][0]
    assert top[LAYOUT["hand_size"][0]][0] == 1.0


def position(config: Config, totals: list[int], lead: tuple[str, ...]) -> Game:
    """Seat 0 to lead holding ``lead``; seat 1 holds 9 cards, seats 2 and 3 one each."""
    hands = [
        cards(*lead),
        cards("R2", "R3", "R4", "R5", "R6", "R7", "R8", "R9", "Y1"),
        cards("G9"),
        cards("B9"),
    ]
    return Game.from_position(config, hands, current=0, totals=totals, seed=3)


def test_the_penalty_bound_is_reached_at_a_games_end():
    # Seat 1 sits one below the threshold and is caught with 9 cards: threshold + 8, the cap.
    config = Config(players=4, threshold=15)
    game = position(config, [0, 14, 0, 0], ("R1",))
    game.play_forced()  # seat 0 leads its last card and ends the hand, and the game (R13, R14)
    assert game.is_over
    assert game.totals[1] == penalty_cap(15) == 23
    obs = observe(game, 0)
    assert views(obs)["penalty"][1] == high(config)[PENALTY][1] == np.float32(23 / 15)


def test_a_built_hand_position_above_the_cap_shows_the_cap_in_both_engines():
    config = Config(players=4, threshold=10, episode="hand")
    game = position(config, [100, 3, 0, 18], ("R1", "Y5"))  # a one-hand episode: any totals
    game.apply(game.legal[0])  # seat 0 leads a card; seat 1 (9 cards) has a real choice
    assert game.current == 1 and len(game.legal) > 1
    obs = observe(game, 1)  # slots: seats 1, 2, 3, 0
    expected = [np.float32(3 / 10), np.float32(0.0), np.float32(18 / 10), np.float32(18 / 10)]
    assert views(obs)["penalty"][:4].tolist() == expected
    assert SingleAgentEnv(config).observation_space.contains(obs)
    games = BatchedGames(config, 2, seed=0)
    games.reset()
    games.load([1], game)
    assert np.array_equal(games.obs[1], obs)


@pytest.mark.parametrize("make_env", [odin_env.env, SingleAgentEnv], ids=["aec", "single"])
def test_render_without_a_mode_says_in_one_line_what_to_pass(make_env):
    environment = make_env()
    environment.reset(seed=0)
    with pytest.warns(UserWarning) as caught:
        assert environment.render() is None
    (message,) = [str(w.message) for w in caught]
    assert "\n" not in message
    assert message.startswith("render() needs a render mode")
    assert 'render_mode="ansi"' in message and 'render_mode="human"' in message


def test_single_agent_human_mode_prints_what_ansi_returns(capsys):
    ansi, human = SingleAgentEnv(render_mode="ansi"), SingleAgentEnv(render_mode="human")
    ansi.reset(seed=4)
    capsys.readouterr()
    human.reset(seed=4)  # human mode shows each new position by itself
    assert capsys.readouterr().out.strip() == ansi.render().strip()
    with pytest.raises(ValueError, match="render_mode must be None, ansi or human; got 'rgb'"):
        SingleAgentEnv(render_mode="rgb")
