"""One PPO update on a self-play rollout: the fast path, and sb3-contrib's as its oracle.

:func:`train_on_rollout` runs :func:`ppo_update`: MaskablePPO's ``train()`` step for step (the same
epochs, the same minibatch draws from numpy's global generator, per-minibatch advantage
normalization, clipped surrogate, value and entropy losses, gradient clipping, Adam, ``target_kl``
early stop, the same logged figures), with the legal actions of the whole rollout found once as
flat pairs (:class:`odin_lab.training.policy.LegalPairs`) instead of a float mask per minibatch.
Why: in ``model.train()`` on a ``MaskableRolloutBuffer`` a third of the update went to copying and
converting (rows x 3,634) masks and to finding the legal sets again in each minibatch of each
epoch. :func:`sb3_update` (``model.train()`` on a filled buffer) is kept as the reference the
tests hold :func:`ppo_update` to: same seed, same weights after an update.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from sb3_contrib.common.maskable.buffers import MaskableRolloutBuffer
from stable_baselines3.common.logger import Logger
from stable_baselines3.common.utils import explained_variance

from agents.base import legal_pairs
from odin_lab.training.collector import Rollout
from odin_lab.training.learner import held_interrupts
from odin_lab.training.policy import LegalPairs, LegalSetPolicy


def minibatch_size(decisions: int, batch_size: int) -> int:
    """``batch_size``, or the smallest larger size that leaves no minibatch of ``decisions`` rows
    with a single row (``decisions`` >= 2).

    MaskablePPO normalizes the advantages of each minibatch by their standard deviation, which is
    NaN for one row and then poisons every weight. A fixed-size SB3 rollout can avoid that once
    and for all; a self-play rollout's length varies from one update to the next."""
    if decisions < 2:
        raise ValueError(f"a PPO update needs at least 2 decisions; got {decisions}")
    size = max(batch_size, 2)
    while decisions % size == 1:
        size += 1
    return size


def fill_buffer(model: Any, rollout: Rollout) -> MaskableRolloutBuffer:
    """A ``MaskableRolloutBuffer`` holding ``rollout`` as ``buffer_size = len(rollout)`` steps of
    one environment, ready for ``model.train()`` (advantages and returns already in)."""
    n = len(rollout)
    buffer = MaskableRolloutBuffer(
        1,
        model.observation_space,
        model.action_space,
        device=model.device,
        gamma=model.gamma,
        gae_lambda=model.gae_lambda,
        n_envs=1,
    )
    # Replace the 1-step arrays by the rollout's own (n, 1, ...) arrays: nothing is reallocated.
    buffer.buffer_size = n
    buffer.observations = rollout.obs[:, None]
    buffer.actions = rollout.actions.reshape(n, 1, 1)
    buffer.rewards = rollout.rewards[:, None]
    buffer.episode_starts = np.zeros((n, 1), dtype=np.float32)
    buffer.values = rollout.values[:, None]
    buffer.log_probs = rollout.log_probs[:, None]
    buffer.advantages = rollout.advantages[:, None]
    buffer.returns = rollout.returns[:, None]
    buffer.action_masks = rollout.masks.astype(np.float32)[:, None]
    buffer.pos, buffer.full, buffer.generator_ready = n, True, False
    return buffer


def _ensure_logger(model: Any) -> None:
    if not hasattr(model, "_logger"):
        # train() records its losses; a model that never ran learn() has no logger yet.
        model.set_logger(Logger(folder=None, output_formats=[]))


def sb3_update(model: Any, rollout: Rollout) -> None:
    """The reference update: sb3-contrib's ``model.train()`` on ``rollout`` in a filled buffer
    (minibatches enlarged as :func:`minibatch_size` says). Leaves ``num_timesteps`` alone."""
    _ensure_logger(model)
    own, size = model.rollout_buffer, model.batch_size
    buffer = fill_buffer(model, rollout)
    model.batch_size = minibatch_size(len(rollout), size)
    model.rollout_buffer = buffer
    try:
        model.train()
    finally:
        model.rollout_buffer, model.batch_size = own, size


class _Pairs:
    """The rollout's legal pairs, and the minibatch slices of them."""

    def __init__(self, masks: np.ndarray, actions: np.ndarray):
        rows, cols = legal_pairs(masks)
        counts = np.bincount(rows, minlength=len(masks))
        if (counts == 0).any():
            raise ValueError("a decision of the rollout has no legal action")
        self.starts = np.cumsum(counts) - counts
        self.counts = counts
        self.cols = cols
        # The taken action's place in its row's list (the log-probability to read).
        taken = cols == actions[rows]
        if taken.sum() != len(masks):
            raise ValueError("an action of the rollout is not legal under its mask")
        self.taken = np.nonzero(taken)[0] - self.starts

    def of(self, idx: np.ndarray) -> tuple[LegalPairs, th.Tensor]:
        counts = self.counts[idx]
        ends = np.cumsum(counts)
        pos = np.arange(ends[-1]) - np.repeat(ends - counts, counts)
        src = np.repeat(self.starts[idx], counts) + pos
        rows = np.repeat(np.arange(len(idx)), counts)
        pairs = LegalPairs(
            th.from_numpy(rows),
            th.from_numpy(self.cols[src]),
            th.from_numpy(pos),
            int(counts.max()),
        )
        return pairs, th.from_numpy(self.taken[idx])


def ppo_update(model: Any, rollout: Rollout) -> None:
    """MaskablePPO's ``train()`` on ``rollout`` (see the module docstring), for a
    :class:`odin_lab.training.policy.LegalSetPolicy` without a value clip range. Leaves
    ``num_timesteps`` alone."""
    policy = model.policy
    if not isinstance(policy, LegalSetPolicy) or model.clip_range_vf is not None:
        raise ValueError("ppo_update needs a LegalSetPolicy and no clip_range_vf; use sb3_update")
    _ensure_logger(model)
    n = len(rollout)
    size = minibatch_size(n, model.batch_size)
    legal = _Pairs(rollout.masks, rollout.actions)  # refuses an illegal action before any change
    policy.set_training_mode(True)
    model._update_learning_rate(policy.optimizer)
    clip_range = model.clip_range(model._current_progress_remaining)
    # Copies: a rollout from a Ray actor is read-only, and torch refuses to share those.
    obs = th.tensor(rollout.obs)
    old_log_probs = th.tensor(rollout.log_probs)
    advantages_all = th.tensor(rollout.advantages)
    returns_all = th.tensor(rollout.returns)
    figures: dict[str, list[float]] = {"entropy": [], "pg": [], "value": [], "kl": [], "clip": []}
    continue_training, loss = True, th.zeros(())
    for _ in range(model.n_epochs):
        figures["kl"] = []  # SB3 logs the last epoch's
        indices = np.random.permutation(n)  # the draw MaskableRolloutBuffer.get makes
        for start in range(0, n, size):
            idx = indices[start : start + size]
            pairs, taken = legal.of(idx)
            rows = th.from_numpy(idx)
            batch_obs = obs.index_select(0, rows)
            latent_pi, latent_vf = policy._latents(batch_obs)
            values = policy.value_net(latent_vf).flatten()
            log_probs, valid = policy.pair_log_probs(latent_pi, pairs, batch_obs)
            log_prob = log_probs[th.arange(len(idx)), taken]
            entropy = policy.entropy(valid, log_probs)
            advantages = advantages_all.index_select(0, rows)
            if model.normalize_advantage:
                advantages = (advantages - advantages.mean()) / (advantages.std() + 1e-8)
            log_ratio = log_prob - old_log_probs.index_select(0, rows)
            ratio = th.exp(log_ratio)
            policy_loss = -th.min(
                advantages * ratio, advantages * th.clamp(ratio, 1 - clip_range, 1 + clip_range)
            ).mean()
            value_loss = th.nn.functional.mse_loss(returns_all.index_select(0, rows), values)
            entropy_loss = -th.mean(entropy)
            loss = policy_loss + model.ent_coef * entropy_loss + model.vf_coef * value_loss
            with th.no_grad():
                approx_kl = float(th.mean((th.exp(log_ratio) - 1) - log_ratio))
                clipped = float(th.mean((th.abs(ratio - 1) > clip_range).float()))
            for key, value in zip(
                figures,
                (entropy_loss.item(), policy_loss.item(), value_loss.item(), approx_kl, clipped),
            ):
                figures[key].append(value)
            if model.target_kl is not None and approx_kl > 1.5 * model.target_kl:
                continue_training = False
                break
            policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
            policy.optimizer.step()
        model._n_updates += 1
        if not continue_training:
            break
    logger = model.logger
    logger.record("train/entropy_loss", np.mean(figures["entropy"]))
    logger.record("train/policy_gradient_loss", np.mean(figures["pg"]))
    logger.record("train/value_loss", np.mean(figures["value"]))
    logger.record("train/approx_kl", np.mean(figures["kl"]))
    logger.record("train/clip_fraction", np.mean(figures["clip"]))
    logger.record("train/loss", loss.item())
    logger.record("train/explained_variance", explained_variance(rollout.values, rollout.returns))
    logger.record("train/n_updates", model._n_updates, exclude="tensorboard")
    logger.record("train/clip_range", clip_range)


def train_on_rollout(model: Any, rollout: Rollout) -> None:
    """One PPO update (``n_epochs`` passes in ``batch_size`` minibatches, enlarged when needed so
    no minibatch holds a single decision: :func:`minibatch_size`) on ``rollout`` (at least 2
    decisions): :func:`ppo_update` for the lab's policy, :func:`sb3_update` for any other. Adds
    its decisions to ``model.num_timesteps``.

    The update is whole or not at all: Ctrl-C or SIGTERM during it takes effect once it ends,
    so a checkpoint saved on the interrupt holds the weights of the step count it records."""
    n = len(rollout)
    if n == 0:
        raise ValueError("the rollout holds no closed decision to train on")
    minibatch_size(n, model.batch_size)  # refuses a single decision before anything changes
    with held_interrupts():
        if isinstance(model.policy, LegalSetPolicy) and model.clip_range_vf is None:
            ppo_update(model, rollout)
        else:
            sb3_update(model, rollout)
        model.num_timesteps += n


__all__ = ["fill_buffer", "minibatch_size", "ppo_update", "sb3_update", "train_on_rollout"]
