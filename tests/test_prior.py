"""Residual policies over a heuristic (``prior``): the policy reads the heuristic's choice beside
the observation and adds a learned bonus to it; torch and numpy play agree, a fresh one plays as
its heuristic, and the choice travels through collection, saving and loading."""

from __future__ import annotations

import numpy as np
import pytest
import torch as th
from gymnasium import spaces

from agents.ppo import PRIOR_AT, PRIOR_WEIGHT, PPOAgent, prior_actions
from agents.registry import make
from odin_env.batched import BatchedGames
from odin_env.observation import OBS_SIZE, observe
from odin_env.rules import NUM_ACTIONS, Config, Game
from odin_lab.training.algorithms import make_config
from odin_lab.training.collector import SelfPlayCollector
from odin_lab.training.model import build_model
from odin_lab.training.policy import LegalSetPolicy, prior_space, snapshot
from odin_lab.training.ppo import write_policy

PLANNER = make("planner")


def prior_policy(seed: int = 0) -> LegalSetPolicy:
    th.manual_seed(seed)
    return LegalSetPolicy(
        prior_space(),
        spaces.Discrete(NUM_ACTIONS),
        lambda _: 3e-4,
        net_arch={"pi": [32], "vf": [16]},
        activation_fn=th.nn.ReLU,
        prior="planner",
    )


def positions(count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Game observations and masks of real decisions of planner games (several players)."""
    obs, masks = [], []
    game_seed = seed
    while len(obs) < count:
        game = Game(Config(players=3 + game_seed % 3), seed=game_seed)
        game_seed += 1
        while not game.is_over and len(obs) < count:
            game.play_forced()
            if game.is_over:
                break
            o, m = observe(game, game.current), game.legal_mask()
            obs.append(o)
            masks.append(m)
            game.apply(PLANNER.act(o, m))
    return np.array(obs), np.array(masks)


def with_prior(obs: np.ndarray, masks: np.ndarray) -> np.ndarray:
    chosen = prior_actions(PLANNER, obs, masks)
    return np.concatenate([obs, chosen[:, None].astype(np.float32)], axis=1)


def test_a_fresh_prior_policy_plays_exactly_as_its_heuristic():
    # Before any training the network's scores are near zero, so the bonus decides: the most
    # probable action is the planner's at every decision, in torch and in numpy play.
    obs, masks = positions(300)
    policy = prior_policy()
    expected = prior_actions(PLANNER, obs, masks)
    with th.no_grad():
        best, _, _ = policy(
            th.as_tensor(with_prior(obs, masks)),
            deterministic=True,
            action_masks=th.as_tensor(masks),
        )
    assert np.array_equal(best.numpy(), expected)
    player = snapshot(policy)
    assert player.prior == "planner" and player.prior_weight == pytest.approx(PRIOR_WEIGHT)
    assert np.array_equal(player.act_batch(obs, masks), expected)


def test_the_bonus_is_a_learned_logit_on_the_prior_action_in_every_code_path():
    # Train-time log-probabilities (gathered legal sets), rollout log-probabilities (dense) and
    # sb3-contrib's masked distribution agree, and each equals a plain softmax over the legal
    # actions of the network's scores plus the weight on the prior's action.
    obs, masks = positions(64, seed=5)
    policy = prior_policy(seed=1)
    with th.no_grad():
        policy.prior_weight.fill_(1.3)
        policy.action_net.weight.normal_(0, 0.5)
    x, m = th.as_tensor(with_prior(obs, masks)), th.as_tensor(masks)
    rng = np.random.default_rng(0)
    actions = th.as_tensor([rng.choice(np.flatnonzero(row)) for row in masks])
    with th.no_grad():
        _, log_prob, _ = policy.evaluate_actions(x, actions, action_masks=m)
        reference = policy.get_distribution(x, action_masks=masks).log_prob(actions)
        sampled, _, sampled_log_prob = policy(x, action_masks=m)
        latent, _ = policy._latents(x)
        scores = policy.dense_logits(latent, x).numpy()
    plain = policy.action_net(latent) + policy.feature_net(latent) @ policy.features.T
    bonus = scores - plain.detach().numpy()
    chosen = x[:, PRIOR_AT].long().numpy()
    expected_bonus = np.zeros_like(bonus)
    expected_bonus[np.arange(64), chosen] = 1.3
    np.testing.assert_allclose(bonus, expected_bonus, atol=1e-5)
    legal = np.where(masks.astype(bool), scores, -np.inf)
    log_softmax = legal - np.logaddexp.reduce(legal, axis=1, keepdims=True)
    np.testing.assert_allclose(log_prob, log_softmax[np.arange(64), actions], atol=1e-4)
    np.testing.assert_allclose(reference, log_prob, atol=1e-4)
    np.testing.assert_allclose(sampled_log_prob, log_softmax[np.arange(64), sampled], atol=1e-4)
    # The weight gets a gradient: PPO can strengthen or weaken the prior.
    policy.evaluate_actions(x, actions, action_masks=m)[1].sum().backward()
    assert policy.prior_weight.grad is not None and policy.prior_weight.grad != 0


def test_collection_stores_the_prior_action_beside_the_learner_observation():
    config = make_config("ppo", prior="planner", net_pi=[16], net_vf=[16], n_envs=1, n_steps=64)
    model = build_model(config)
    assert model.observation_space.shape == (OBS_SIZE + 1,)
    collector = SelfPlayCollector(model, BatchedGames(Config(players=4), 8, 0))
    rollout = collector.collect(8 * 12)
    assert rollout.obs.shape[1] == OBS_SIZE + 1 and len(rollout) > 0
    game_obs = rollout.obs[:, :OBS_SIZE]
    expected = prior_actions(PLANNER, game_obs, rollout.masks)
    assert np.array_equal(rollout.obs[:, PRIOR_AT].astype(np.int64), expected)


def test_a_saved_prior_model_loads_with_its_prior_and_plays_the_same(tmp_path):
    config = make_config("ppo", prior="planner", net_pi=[16], net_vf=[16])
    model = build_model(config)
    with th.no_grad():
        model.policy.prior_weight.fill_(0.7)
        model.policy.action_net.weight.normal_(0, 0.3)
    write_policy(model, tmp_path / "prior.safetensors")
    agent = PPOAgent.load(tmp_path / "prior.safetensors")
    assert agent.prior == "planner" and agent.prior_weight == pytest.approx(0.7)
    obs, masks = positions(80, seed=9)
    live = snapshot(model.policy)
    assert np.array_equal(agent.act_batch(obs, masks), live.act_batch(obs, masks))
    # With the weight at 0.7 the network overrules the planner somewhere: the prior is not all.
    assert not np.array_equal(agent.act_batch(obs, masks), prior_actions(PLANNER, obs, masks))


@pytest.mark.parametrize("prior", ["random", "ppo", "grandmaster"])
def test_a_prior_must_be_a_heuristic(prior):
    with pytest.raises(ValueError, match="prior must be one of greedy, shaper, planner"):
        make_config("ppo", prior=prior).check()


def test_averaging_models_averages_every_parameter_and_refuses_a_mismatch(tmp_path):
    from agents.model_file import read_model
    from odin_lab.training.checkpoints import average_models

    paths = []
    for seed, weight in ((0, 1.0), (1, 3.0)):
        config = make_config("ppo", prior="planner", net_pi=[16], net_vf=[16], seed=seed)
        model = build_model(config)
        with th.no_grad():
            model.policy.prior_weight.fill_(weight)
        paths.append(tmp_path / f"m{seed}.safetensors")
        write_policy(model, paths[-1])
    out = average_models(paths, tmp_path / "soup.safetensors")
    states = [read_model(p)[1] for p in paths]
    _, soup = read_model(out)
    for key, value in soup.items():
        assert np.allclose(value, (states[0][key] + states[1][key]) / 2)
    assert PPOAgent.load(out).prior_weight == pytest.approx(2.0)
    other = make_config("ppo", net_pi=[16], net_vf=[16])
    unlike = build_model(other)
    write_policy(unlike, tmp_path / "x.safetensors")
    with pytest.raises(ValueError, match="different architectures or priors"):
        average_models([paths[0], tmp_path / "x.safetensors"], tmp_path / "bad.safetensors")
    # One input: its policy alone, exactly.
    alone = average_models(paths[:1], tmp_path / "alone.safetensors")
    for key, value in read_model(alone)[1].items():
        assert np.array_equal(value, states[0][key])
    with pytest.raises(ValueError, match="at least one model"):
        average_models([], tmp_path / "none.safetensors")
    assert not (tmp_path / "bad.safetensors").exists()
