"""The environments refuse what they would otherwise misread (issue 24, class 9): unknown
``reset`` options in both envs, a ``reset`` seat that is no integer seat, an ``auto_forced``
that is no bool; and PettingZoo's ``last()`` still answers once every agent has left."""

from __future__ import annotations

import numpy as np
import pytest

import odin_env
from odin_env.single_agent import SingleAgentEnv


def play_out(environment) -> None:
    """Step every agent to the episode's end, then every dead agent out (``agent_iter``)."""
    for _agent in environment.agent_iter():
        observation, _, terminated, truncated, _ = environment.last()
        if terminated or truncated:
            environment.step(None)
        else:
            environment.step(int(np.flatnonzero(observation["action_mask"])[0]))


@pytest.mark.parametrize(
    "make",
    [
        lambda: odin_env.env(players=3, episode="hand"),
        lambda: odin_env.env(players=3, episode="hand", illegal="terminate"),
        lambda: odin_env.raw_env(players=3, episode="hand"),
    ],
)
def test_last_after_every_agent_left_is_the_final_observation_not_a_keyerror(make):
    environment = make()
    environment.reset(seed=4)
    play_out(environment)
    assert environment.agents == []
    observation, reward, terminated, truncated, info = environment.last()
    assert reward == 0.0 and terminated and not truncated and info == {}
    assert observation["action_mask"].sum() == 0 and observation["observation"].any()
    assert environment.last(observe=False)[0] is None
    environment.reset(seed=5)  # and the env plays on
    assert environment.last()[2] is False


@pytest.mark.parametrize("options", [{"seat": 1}, {"bogus": True}, {"game": None}])
def test_the_aec_env_refuses_every_reset_option_naming_the_allowed_keys(options):
    for environment in (odin_env.env(players=2), odin_env.raw_env(players=2)):
        with pytest.raises(ValueError, match="unknown key .*; allowed: 'options'"):
            environment.reset(seed=1, options=options)
    environment = odin_env.raw_env(players=2)
    environment.reset(seed=1, options={})  # empty options are no options
    environment.reset(seed=1, options=None)
    environment.reset(seed=1, options={"options": 1})  # PettingZoo's api_test sends this


def test_both_envs_refuse_options_that_are_not_a_dict():
    with pytest.raises(ValueError, match="options must be a dict"):
        odin_env.raw_env(players=2).reset(options=["seat"])
    with pytest.raises(ValueError, match="options must be a dict \\(keys: 'game', 'seat'\\)"):
        SingleAgentEnv(players=2).reset(options=["seat"])


def test_the_gymnasium_env_refuses_unknown_options_naming_the_allowed_keys():
    with pytest.raises(ValueError, match="unknown key 'sead'; allowed: 'game', 'seat'"):
        SingleAgentEnv(players=2).reset(seed=1, options={"sead": 1})


@pytest.mark.parametrize("seat", [1.7, 1.0, True, "1", -1, 2, np.float64(1.0)])
def test_the_gymnasium_env_refuses_a_reset_seat_that_is_no_integer_seat(seat):
    environment = SingleAgentEnv(players=2)
    with pytest.raises(ValueError, match="reset options: seat must be None .* or 0-1"):
        environment.reset(seed=1, options={"seat": seat})


@pytest.mark.parametrize("seat", [0, 1, np.int64(1)])
def test_an_integer_reset_seat_is_the_learners_seat(seat):
    environment = SingleAgentEnv(players=2)
    environment.reset(seed=1, options={"seat": seat})
    assert environment.seat == int(seat)


@pytest.mark.parametrize("value", ["no", "False", 0, 1, None, 1.0])
def test_auto_forced_must_be_a_bool(value):
    for build in (odin_env.env, odin_env.raw_env):
        with pytest.raises(ValueError, match="auto_forced must be True or False"):
            build(players=2, auto_forced=value)


def test_auto_forced_false_asks_for_forced_decisions():
    assert odin_env.raw_env(players=2, auto_forced=np.bool_(False)).auto_forced is False
    assert odin_env.env(players=2, auto_forced=False).unwrapped.auto_forced is False
