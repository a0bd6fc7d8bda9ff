"""The library adapters of odin_env.wrappers: attributed rewards add up to each agent's engine
total whoever ended each hand; the mask in info; RLlib's observation key."""

from __future__ import annotations

import numpy as np
import pytest
from pettingzoo.test import api_test

import odin_env
from odin_env.wrappers import MaskInInfo, ObservationsKey, RewardAttribution


def play(env, seed: int) -> dict[str, float]:
    """A seeded random game, summing ``env.rewards[agent]`` each time ``agent`` is selected (what
    a per-agent buffer records), and counting the steps whose reward the selected agent lacks."""
    rng = np.random.default_rng(seed)
    env.reset(seed=seed)
    seen = dict.fromkeys(env.possible_agents, 0.0)
    for agent in env.agent_iter():
        obs, _, termination, truncation, _ = env.last()
        seen[agent] += env.rewards[agent]
        legal = np.flatnonzero(obs["action_mask"])
        env.step(None if termination or truncation else int(rng.choice(legal)))
    return seen


@pytest.mark.parametrize("players", [2, 4, 6])
@pytest.mark.parametrize("reward", ["penalty", "win"])
def test_r13_each_agent_sees_exactly_its_engine_total_whoever_ended_the_hands(players, reward):
    for seed in range(4):
        env = RewardAttribution(odin_env.env(players=players, threshold=20, reward=reward))
        seen = play(env, seed)
        game = env.unwrapped.game
        for seat, agent in enumerate(env.possible_agents):
            if reward == "penalty":
                expected = -game.totals[seat]
            else:
                expected = 1 / len(game.winners) if seat in game.winners else 0.0
            assert seen[agent] == pytest.approx(expected)


def test_without_the_wrapper_the_selected_agent_misses_most_of_its_reward():
    """Why the wrapper exists: the plain step rewards miss the hands others ended."""
    env = odin_env.env(players=4, threshold=20)
    seen = play(env, 0)
    totals = env.unwrapped.game.totals
    assert sum(seen.values()) > -sum(totals)


def test_mask_in_info_matches_the_observation():
    env = MaskInInfo(odin_env.env(players=3))
    env.reset(seed=1)
    for _ in range(20):
        agent = env.agent_selection
        obs = env.observe(agent)
        assert np.array_equal(env.infos[agent]["action_mask"], obs["action_mask"])
        env.step(int(np.flatnonzero(obs["action_mask"])[0]))


def test_rllib_observation_key_and_the_pettingzoo_api():
    env = ObservationsKey(odin_env.env(players=3))
    env.reset(seed=2)
    obs = env.observe(env.agent_selection)
    assert set(obs) == {"observations", "action_mask"}
    assert env.observation_space(env.agent_selection).contains(obs)
    api_test(ObservationsKey(odin_env.env(players=3)), num_cycles=200)
