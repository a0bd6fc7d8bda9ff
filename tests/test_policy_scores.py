"""The numpy policy scores only the legal actions (:meth:`agents.ppo.NumpyPolicy.legal_scores`):
on real positions it agrees with the full output layer (:meth:`~agents.ppo.NumpyPolicy.logits`,
the reference) and so plays the same actions."""

from __future__ import annotations

import numpy as np
import pytest

from agents.ppo import BUNDLED_DIR, PPOAgent, prior_actions
from agents.registry import make_batch_agent
from odin_env.batched import BatchedGames
from odin_env.rules import Config


def positions(players: int, count: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of ``count`` decisions of games between random players."""
    games = BatchedGames(Config(players=players), 32, seed=seed)
    player = make_batch_agent("random", seed)
    observations, masks = [], []
    while sum(len(o) for o in observations) < count:
        observations.append(games.obs.copy())
        masks.append(games.mask.copy())
        games.step(player.act_batch(games.obs, games.mask))
    return np.concatenate(observations)[:count], np.concatenate(masks)[:count]


@pytest.mark.parametrize("name", ["ppo_2p", "ppo_4p", "net_4p"])
def test_legal_scores_are_the_masked_logits_and_pick_the_same_actions(name):
    agent = PPOAgent.load(BUNDLED_DIR / f"{name}.safetensors")
    players = agent.info["players"]
    observations, masks = positions(players, 600, seed=11)
    legal = masks.astype(bool)
    reference = np.where(legal, agent.logits(observations), -np.inf)
    fast = agent.legal_scores(observations, legal)
    assert np.isneginf(fast[~legal]).all()
    np.testing.assert_allclose(fast[legal], reference[legal], rtol=1e-5, atol=1e-4)
    assert (fast.argmax(1) == reference.argmax(1)).all()
    if agent.prior is not None:  # a residual model: the prior's action gets a bonus
        chosen = prior_actions(agent._prior_agent, observations, masks)
        reference[np.arange(len(chosen)), chosen] += agent.prior_weight
    assert (agent.act_batch(observations, masks) == reference.argmax(1)).all()
