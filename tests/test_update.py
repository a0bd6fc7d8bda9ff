"""The fast PPO update (training.update.ppo_update) against sb3-contrib's ``model.train()``: the
same seed gives the same weights and the same logged figures."""

from __future__ import annotations

import copy
import types

import numpy as np
import pytest
import torch as th
from sb3_contrib import MaskablePPO
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.vec_env import DummyVecEnv

from odin_env.batched import BatchedGames
from odin_env.rules import Config
from odin_env.single_agent import SingleAgentEnv
from odin_lab.training.algorithms import make_config
from odin_lab.training.collector import SelfPlayCollector
from odin_lab.training.model import build_model
from odin_lab.training.policy import LegalSetPolicy
from odin_lab.training.update import ppo_update, sb3_update, train_on_rollout

FIGURES = (
    "train/entropy_loss", "train/policy_gradient_loss", "train/value_loss", "train/approx_kl",
    "train/clip_fraction", "train/loss", "train/explained_variance", "train/n_updates",
)  # fmt: skip


def lab_model(prior: str | None = None, seed: int = 0):
    th.set_num_threads(1)
    config = make_config(
        "ppo",
        n_envs=1,
        n_steps=64,
        batch_size=96,
        n_epochs=3,
        net_pi=[32],
        net_vf=[24],
        prior=prior,
        seed=seed,
    )
    return build_model(config)


def rollout_of(model, games: int = 12, steps: int = 30, seed: int = 0):
    th.manual_seed(seed)
    return SelfPlayCollector(model, BatchedGames(Config(), games, seed=seed)).collect(games * steps)


def updated(model, rollout, update, seed: int):
    twin = copy.deepcopy(model)
    np.random.seed(seed)  # the minibatch draws of both updates
    update(twin, rollout)
    return twin


def assert_same(a, b, atol: float) -> None:
    for (name, x), y in zip(a.policy.named_parameters(), b.policy.parameters()):
        np.testing.assert_allclose(x.detach().numpy(), y.detach().numpy(), atol=atol, err_msg=name)
    for key in FIGURES:
        assert a.logger.name_to_value[key] == pytest.approx(
            b.logger.name_to_value[key], rel=1e-4, abs=atol
        ), key


@pytest.mark.parametrize("prior", [None, "planner"])
def test_the_fast_update_gives_sb3_contribs_weights_and_figures(prior):
    model = lab_model(prior)
    rollout = rollout_of(model)
    assert len(rollout) % 96 not in (0, 1)  # a short last minibatch is part of the test
    fast = updated(model, rollout, ppo_update, seed=3)
    reference = updated(model, rollout, sb3_update, seed=3)
    assert_same(fast, reference, atol=1e-6)
    moved = max(
        float((x - y).detach().abs().max())
        for x, y in zip(fast.policy.parameters(), model.policy.parameters())
    )
    assert moved > 1e-3  # the update did change the weights
    # Another minibatch order gives other weights: the draws are the same numpy draws as SB3's.
    other = updated(model, rollout, ppo_update, seed=4)
    with pytest.raises(AssertionError):
        assert_same(other, reference, atol=1e-6)


def test_the_fast_update_matches_sb3_contribs_own_masked_distribution():
    """Without action features the lab's policy is sb3-contrib's: its parent's
    ``evaluate_actions`` (a dense MaskableCategorical) is an independent reference."""
    th.manual_seed(0)
    env = DummyVecEnv([SingleAgentEnv])
    model = MaskablePPO(
        LegalSetPolicy,
        env,
        n_steps=64,
        batch_size=80,
        n_epochs=2,
        seed=0,
        device="cpu",
        policy_kwargs={"net_arch": [32], "action_features": False},
    )
    rollout = rollout_of(model, seed=1)
    fast = updated(model, rollout, ppo_update, seed=7)
    parent = copy.deepcopy(model)
    parent.policy.evaluate_actions = types.MethodType(
        MaskableActorCriticPolicy.evaluate_actions, parent.policy
    )
    np.random.seed(7)
    sb3_update(parent, rollout)
    assert_same(fast, parent, atol=2e-5)


def test_target_kl_stops_the_update_where_sb3_contrib_stops():
    model = lab_model()
    rollout = rollout_of(model)
    model.learning_rate, model.target_kl = 0.05, 1e-4
    model.lr_schedule = lambda _: 0.05
    fast = updated(model, rollout, ppo_update, seed=1)
    reference = updated(model, rollout, sb3_update, seed=1)
    assert_same(fast, reference, atol=1e-6)
    assert fast.logger.name_to_value["train/n_updates"] < model.n_epochs  # it stopped early


def test_train_on_rollout_counts_decisions_and_refuses_bad_rollouts_untouched():
    model = lab_model()
    rollout = rollout_of(model)
    before = [p.detach().clone() for p in model.policy.parameters()]
    bad = copy.copy(rollout)
    bad.actions = rollout.actions.copy()
    bad.actions[5] = int(np.flatnonzero(rollout.masks[5] == 0)[0])
    with pytest.raises(ValueError, match="not legal under its mask"):
        train_on_rollout(model, bad)
    assert all(th.equal(a, b) for a, b in zip(before, model.policy.parameters()))
    assert model.num_timesteps == 0
    train_on_rollout(model, rollout)
    assert model.num_timesteps == len(rollout)
