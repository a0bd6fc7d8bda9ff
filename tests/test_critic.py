"""The critic that reads the full state in training (``--critic full``, PerfectDou): the batched
engine's hidden state is exactly what the acting seat cannot see, only the value network reads
it, and the played model reads the observation alone."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th

from agents.batch import BatchRandomAgent
from agents.registry import make
from odin_env.batched import BatchedGames
from odin_env.cards import NUM_COLOURS, NUM_VALUES
from odin_env.full_state import HIDDEN_SIZE, hidden
from odin_env.observation import OBS_SIZE, SCALE, views
from odin_env.rules import Config
from odin_lab.training import make_config, train
from odin_lab.training.collector import SelfPlayCollector
from odin_lab.training.model import build_model

CARDS = NUM_COLOURS * NUM_VALUES


@pytest.mark.parametrize("players", [2, 4, 6])
def test_the_hidden_state_is_the_rest_of_the_deck_as_the_acting_seat_cannot_see_it(players):
    """Own hand, the other seats' hands, the table, the discards and the cards set aside are
    disjoint and make up the cards in play; each other hand has the size the observation shows."""
    games = BatchedGames(Config(players=players), 16, seed=3)
    agent = BatchRandomAgent(seed=1)
    rows = np.arange(games.batch)
    for _ in range(40):
        unseen = hidden(games, rows).reshape(games.batch, 6, CARDS).astype(bool)
        for i in rows:
            seen = views(games.obs[i])
            own = seen["hand"].reshape(-1) > 0
            table, discard = seen["table"].reshape(-1) > 0, seen["discard"].reshape(-1) > 0
            parts = [own, *unseen[i, : players - 1], table, discard, unseen[i, 5]]
            stacked = np.stack(parts).astype(int)
            assert stacked.sum(0).max() <= 1  # disjoint
            in_play = np.zeros(CARDS, dtype=bool)
            in_play[: games.config.colours * NUM_VALUES] = True
            assert np.array_equal(stacked.sum(0) > 0, in_play)
            assert not unseen[i, players - 1 : 5].any()  # no seats past the table's size
            sizes = np.rint(seen["hand_size"][1:players] * SCALE["hand_size"])
            assert np.array_equal(unseen[i, : players - 1].sum(1), sizes)
        games.step(agent.act_batch(games.obs, games.mask))


def full_critic_model():
    th.manual_seed(0)
    config = make_config("ppo", critic="full", net_pi=[32], net_vf=[32], n_envs=1, n_steps=64)
    return build_model(config)


def test_only_the_value_reads_the_hidden_state():
    model = full_critic_model()
    rollout = SelfPlayCollector(model, BatchedGames(batch=8, seed=0)).collect(8 * 8)
    assert rollout.obs.shape[1] == OBS_SIZE + HIDDEN_SIZE
    obs, masks = th.as_tensor(rollout.obs), th.as_tensor(rollout.masks)
    other = obs.clone()
    other[:, OBS_SIZE:] = th.as_tensor(
        np.random.default_rng(1).integers(0, 2, other[:, OBS_SIZE:].shape)
    )
    actions = th.as_tensor(rollout.actions)
    policy = model.policy
    with th.no_grad():
        values, log_probs, entropy = policy.evaluate_actions(obs, actions, action_masks=masks)
        values2, log_probs2, entropy2 = policy.evaluate_actions(other, actions, action_masks=masks)
        chosen = policy.forward(obs, deterministic=True, action_masks=masks)[0]
        chosen2 = policy.forward(other, deterministic=True, action_masks=masks)[0]
    assert th.equal(log_probs, log_probs2) and th.equal(entropy, entropy2)
    assert th.equal(chosen, chosen2)
    assert not th.allclose(values, values2)  # the critic does read it


def test_a_full_critic_run_trains_and_its_player_reads_the_observation_alone(tmp_path):
    config = make_config(
        "ppo",
        name="full",
        runs_dir=str(tmp_path),
        critic="full",
        opponents=["greedy"],
        selfplay_batch=8,
        n_envs=2,
        n_steps=32,
        batch_size=64,
        n_epochs=1,
        net_pi=[32],
        net_vf=[32],
        total_steps=128,
        eval_every=64,
        eval_deals=1,
        eval_opponents=["random"],
        checkpoint_every=64,
        seed=2,
    )
    path = train(config)
    player = make(f"ppo:{tmp_path / 'full' / 'best.safetensors'}")
    assert player.info["observation_size"] == OBS_SIZE
    assert player.info["architecture"]["critic"] == "full"
    games = BatchedGames(batch=4, seed=5)
    assert games.mask[np.arange(4), player.act_batch(games.obs, games.mask)].all()
    config.total_steps = 256
    assert train(config, resume=True) == path  # the checkpoint holds the critic's layers


def test_imitation_with_the_full_critic_is_refused_with_its_reason():
    with pytest.raises(ValueError, match="imitate reads recorded games"):
        make_config("ppo", critic="full", imitate="greedy").check()
    with pytest.raises(ValueError, match="critic must be one of observation, full"):
        make_config("ppo", critic="perfect").check()
