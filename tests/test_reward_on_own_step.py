"""odin_env.wrappers.RewardOnOwnStep under Tianshou's PettingZooEnv (what it is for): summed
over each agent's own steps, the rewards are exactly its engine totals whoever ended each hand,
and the settling turns at the game's end allow only PASS."""

from __future__ import annotations

import numpy as np
import pytest
from tianshou.env import PettingZooEnv

import odin_env
from odin_env.rules import PASS
from odin_env.wrappers import RewardOnOwnStep


def own_step_sums(players: int, reward: str, seed: int, wrap: bool = True):
    """A seeded random game as Tianshou's collector plays it: each step's reward vector is
    credited to the agent that acted, only in its own entry; stop at the first termination."""
    base = odin_env.env(players=players, threshold=20, reward=reward)
    env = PettingZooEnv(RewardOnOwnStep(base) if wrap else base)
    rng = np.random.default_rng(seed)
    obs, _ = env.reset(seed=seed)
    sums, settling = np.zeros(players), []
    while True:
        acting = env.agent_idx[obs["agent_id"]]
        legal = np.flatnonzero(obs["mask"])
        if base.unwrapped.game.is_over:
            settling.append((acting, legal.tolist()))
        obs, rewards, terminated, truncated, _ = env.step(int(rng.choice(legal)))
        sums[acting] += rewards[acting]
        if terminated or truncated:
            return sums, base.unwrapped.game, settling


@pytest.mark.parametrize("players", [2, 4, 6])
@pytest.mark.parametrize("reward", ["penalty", "win"])
def test_r13_each_agent_sees_its_engine_total_over_its_own_steps(players, reward):
    for seed in range(3):
        sums, game, settling = own_step_sums(players, reward, seed)
        if reward == "penalty":
            expected = [-t for t in game.totals]
        else:
            expected = [1 / len(game.winners) if s in game.winners else 0.0 for s in range(players)]
        assert sums.tolist() == pytest.approx(expected)
        # Every agent but the one that ended the game settles once, with only PASS legal.
        assert len(settling) == players - 1 and len({a for a, _ in settling}) == players - 1
        assert all(legal == [PASS] for _, legal in settling)


def test_without_it_tianshou_sees_a_fraction_of_the_reward():
    sums, game, _ = own_step_sums(4, "penalty", 0, wrap=False)
    assert sums.sum() > -sum(game.totals) / 2


def test_a_settling_turn_refuses_anything_but_pass_and_a_settled_game_refuses_steps():
    env = RewardOnOwnStep(odin_env.env(players=2, threshold=1))
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    while not env.unwrapped.game.is_over:
        env.step(int(rng.choice(np.flatnonzero(env.observe(env.agent_selection)["action_mask"]))))
    with pytest.raises(ValueError, match=f"a settling turn takes only PASS \\({PASS}\\); got 0"):
        env.step(0)
    env.step(PASS)
    assert all(env.terminations.values())
    with pytest.raises(ValueError, match="the game is over and settled: reset"):
        env.step(PASS)
