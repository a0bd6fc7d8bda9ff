"""The policy the lab trains: sb3-contrib's masked actor-critic, scored over the legal set.

:class:`LegalSetPolicy` is ``MaskableActorCriticPolicy`` with the action distribution computed
over the legal actions only. Why: Odin has 3,634 actions and rarely more than a few dozen are
legal. sb3-contrib's ``MaskableCategorical`` builds a full 3,634-way ``Categorical`` twice per
call, validates it, and spends most of the update in softmax, entropy and their gradients over
actions that can never be chosen; its ``Simplex`` check can also fail on float32 round-off. Here
the legal actions are flat (row, action) pairs (:class:`LegalPairs`), each pair's logit is the
dot product of the row's latent with the action's row of the output layer, and ``log_softmax``
runs over each row's pairs alone (padded at ``-inf`` to the longest list): exact, no magic
constant, nothing to validate.

Shared action features: each action's score is the usual per-action output plus
``feature_net(latent) . ACTION_FEATURES[action]`` (:mod:`agents.features`), so what is learnt about
one combo carries over to every combo sharing its traits.

Residual policies (``prior``): the observation has one more column, the action a hand-written
agent picks there (:data:`agents.ppo.PRIOR_AT`), and a learned ``prior_weight`` is added to that
action's logit (residual policy learning, Silver et al. 2018, on logits): a fresh policy plays
as its heuristic and PPO learns where to depart from it.

A critic that reads the full state (``critic="full"``; PerfectDou, Yang et al. 2022): the
observation ends with :data:`odin_env.batched.HIDDEN_SIZE` more columns, the other seats' hands
and the cards set aside (:meth:`odin_env.batched.BatchedGames.hidden`), which only the value
network reads; the actor reads the game observation alone, so the played model never sees them.

:func:`snapshot` freezes a live policy into the numpy player :class:`agents.ppo.NumpyPolicy`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from agents.features import ACTION_FEATURES, NUM_ACTION_FEATURES
from agents.ppo import PRIOR_AT, PRIOR_WEIGHT, NumpyPolicy, check_prior
from odin_env.full_state import HIDDEN_SIZE
from odin_env.observation import OBS_SIZE
from odin_env.rules import NUM_ACTIONS

CRITICS = ("observation", "full")
"""What the value network reads: the learner's observation, or also the hidden full state."""


def prior_space() -> spaces.Box:
    """Observation space of a policy with a prior: the game observation, then the prior's action."""
    return spaces.Box(0.0, np.inf, (OBS_SIZE + 1,), np.float32)


def observation_space(prior: str | None, critic: str) -> spaces.Box:
    """The policy's input: the game observation, the prior's action (with a prior), the hidden
    state (with the full critic)."""
    width = OBS_SIZE + (prior is not None) + (HIDDEN_SIZE if critic == "full" else 0)
    return spaces.Box(0.0, np.inf, (width,), np.float32)


class FullState(BaseFeaturesExtractor):
    """The critic's input with ``critic="full"``: the game observation and the hidden state (the
    prior's action column, if any, is left out)."""

    def __init__(self, observation_space: spaces.Box):
        super().__init__(observation_space, OBS_SIZE + HIDDEN_SIZE)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        hidden = observations[:, -HIDDEN_SIZE:]
        return th.cat([observations[:, :OBS_SIZE], hidden], dim=1)


class GameObservation(BaseFeaturesExtractor):
    """The game observation part of a prior policy's observation (the prior's action column is
    read by the policy's head, not by the network)."""

    def __init__(self, observation_space: spaces.Box):
        super().__init__(observation_space, OBS_SIZE)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return observations[:, :OBS_SIZE]


@dataclass(frozen=True)
class LegalPairs:
    """Every row's legal actions as flat (row, action) pairs, in row order.

    ``rows[k]``, ``cols[k]``: the row and action of pair ``k``; ``pos[k]``: its place in its
    row's list; ``width``: the longest list. Scoring the pairs alone costs (pairs x hidden) instead
    of (rows x 3,634 x hidden), and costs nothing for the padding a rectangular layout needs."""

    rows: th.Tensor
    cols: th.Tensor
    pos: th.Tensor
    width: int

    @staticmethod
    def of_masks(masks: th.Tensor) -> LegalPairs:
        """The pairs of ``(rows, 3634)`` masks. Raises ``ValueError`` for a row with no legal
        action (a terminal state's mask)."""
        masks = masks.bool()
        counts = masks.sum(1)
        if bool((counts == 0).any()):
            raise ValueError(
                "an action mask has no legal action: the policy was asked to act after the end"
            )
        rows, cols = masks.nonzero(as_tuple=True)
        starts = th.cumsum(counts, 0) - counts
        pos = th.arange(rows.numel(), device=masks.device) - starts[rows]
        return LegalPairs(rows, cols, pos, int(counts.max()))


class LegalSetPolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` whose distribution covers only the legal actions, with
    shared action features (see the module docstring). ``forward``, ``evaluate_actions`` (what
    MaskablePPO trains with) and ``get_distribution`` (``predict``) all use the same logits."""

    def __init__(
        self,
        *args: Any,
        action_features: bool = True,
        prior: str | None = None,
        critic: str = "observation",
        **kwargs: Any,
    ):
        check_prior(prior)
        if critic not in CRITICS:
            raise ValueError(f"critic must be one of {', '.join(CRITICS)}; got {critic!r}")
        self.action_features = action_features
        self.prior = prior
        self.critic = critic
        if prior is not None or critic == "full":
            kwargs.setdefault("features_extractor_class", GameObservation)
        if critic == "full":
            kwargs["share_features_extractor"] = False
        super().__init__(*args, **kwargs)
        if critic == "full":
            # No parameters in either extractor: swapping the critic's changes no optimizer.
            self.vf_features_extractor = FullState(self.observation_space)

    def _build_mlp_extractor(self) -> None:
        super()._build_mlp_extractor()
        if self.critic == "full":
            net = self.mlp_extractor.value_net
            if not len(net):
                raise ValueError("critic 'full' needs at least one hidden layer in net_vf")
            first = net[0]
            # The critic's first layer reads the hidden state beside the game observation.
            net[0] = th.nn.Linear(first.in_features + HIDDEN_SIZE, first.out_features)

    def _build(self, lr_schedule: Any) -> None:
        super()._build(lr_schedule)
        if self.action_features:
            # Scores each action by what it does (which cards go, how many, ...) so that what
            # is learnt about one combo carries over to every combo sharing those traits.
            self.feature_net = th.nn.Linear(self.mlp_extractor.latent_dim_pi, NUM_ACTION_FEATURES)
            th.nn.init.orthogonal_(self.feature_net.weight, gain=0.01)
            th.nn.init.zeros_(self.feature_net.bias)
            features = th.as_tensor(np.array(ACTION_FEATURES))
            self.register_buffer("features", features, persistent=False)
        if self.prior is not None:
            # The residual's starting point: the prior's choice is favoured by this many nats.
            self.prior_weight = th.nn.Parameter(th.tensor(PRIOR_WEIGHT))
        if self.action_features or self.prior is not None:
            self.optimizer = self.optimizer_class(
                self.parameters(), lr=lr_schedule(1), **self.optimizer_kwargs
            )

    def _get_constructor_parameters(self) -> dict[str, Any]:
        data = super()._get_constructor_parameters()
        data["action_features"] = self.action_features
        data["prior"] = self.prior
        data["critic"] = self.critic
        return data

    def _prior_of(self, obs: th.Tensor) -> th.Tensor:
        return obs[:, PRIOR_AT].long()

    def dense_logits(self, latent_pi: th.Tensor, obs: th.Tensor | None = None) -> th.Tensor:
        """Unmasked scores of all 3,634 actions (``obs``: needed by a prior policy)."""
        logits = self.action_net(latent_pi)
        if self.action_features:
            logits = logits + self.feature_net(latent_pi) @ self.features.T
        if self.prior is not None:
            bonus = th.nn.functional.one_hot(self._prior_of(obs), NUM_ACTIONS)
            logits = logits + self.prior_weight * bonus
        return logits

    def pair_log_probs(
        self, latent_pi: th.Tensor, pairs: LegalPairs, obs: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor]:
        """``(log_probs, valid)``, both ``(rows, pairs.width)``: each row's log-softmax over its
        legal actions, in ``pairs`` order, padded at ``-inf`` (``valid`` False). ``obs``: needed
        by a prior policy. The same logits as :meth:`dense_logits` at the legal actions."""
        rows, cols = pairs.rows, pairs.cols
        head = self.action_net
        # index_select's backward is an index_add into the (3,634 x hidden) output layer: only
        # the legal rows are touched, and nothing is padded.
        scores = (latent_pi.index_select(0, rows) * head.weight.index_select(0, cols)).sum(1)
        scores = scores + head.bias.index_select(0, cols)
        if self.action_features:
            wants = self.feature_net(latent_pi).index_select(0, rows)
            scores = scores + (wants * self.features.index_select(0, cols)).sum(1)
        if self.prior is not None:
            chosen = (cols == self._prior_of(obs).index_select(0, rows)).to(scores.dtype)
            scores = scores + self.prior_weight * chosen
        padded = scores.new_full((latent_pi.shape[0], pairs.width), float("-inf"))
        padded = padded.index_put((rows, pairs.pos), scores)
        valid = th.zeros(padded.shape, dtype=th.bool, device=padded.device)
        valid[rows, pairs.pos] = True
        return th.log_softmax(padded, dim=1), valid

    def get_distribution(self, obs: th.Tensor, action_masks: Any = None) -> Any:
        latent_pi, _ = self._latents(obs)
        distribution = self.action_dist.proba_distribution(
            action_logits=self.dense_logits(latent_pi, obs)
        )
        if action_masks is not None:
            distribution.apply_masking(action_masks)
        return distribution

    @staticmethod
    def entropy(valid: th.Tensor, log_probs: th.Tensor) -> th.Tensor:
        finite = log_probs.masked_fill(~valid, 0.0)
        return -(finite.exp() * finite).masked_fill(~valid, 0.0).sum(1)

    def forward(
        self, obs: th.Tensor, deterministic: bool = False, action_masks: Any = None
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        if action_masks is None and self.prior is None:
            return super().forward(obs, deterministic, action_masks)
        if action_masks is None:
            action_masks = th.ones(obs.shape[0], NUM_ACTIONS, dtype=th.bool)
        latent_pi, latent_vf = self._latents(obs)
        values = self.value_net(latent_vf)
        masks = th.as_tensor(action_masks, device=obs.device).reshape(-1, NUM_ACTIONS)
        pairs = LegalPairs.of_masks(masks)
        log_probs, _ = self.pair_log_probs(latent_pi, pairs, obs)
        if deterministic:
            chosen = log_probs.argmax(1)  # ties: the lowest action id, as over dense logits
        else:
            # Gumbel-max draws from the softmax; the padding stays at -inf.
            noise = -th.log(-th.log(th.rand_like(log_probs).clamp_(min=1e-20)))
            chosen = (log_probs + noise).argmax(1)
        ids = th.zeros(log_probs.shape, dtype=th.long, device=obs.device)
        ids[pairs.rows, pairs.pos] = pairs.cols
        actions = ids.gather(1, chosen[:, None]).squeeze(1)
        return actions, values, log_probs.gather(1, chosen[:, None]).squeeze(1)

    def evaluate_actions(
        self, obs: th.Tensor, actions: th.Tensor, action_masks: Any = None
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        if action_masks is None and self.prior is None:
            return super().evaluate_actions(obs, actions, action_masks)
        if action_masks is None:
            action_masks = th.ones(obs.shape[0], NUM_ACTIONS, dtype=th.bool)
        latent_pi, latent_vf = self._latents(obs)
        values = self.value_net(latent_vf)
        masks = th.as_tensor(action_masks, device=obs.device).reshape(-1, NUM_ACTIONS)
        pairs = LegalPairs.of_masks(masks)
        log_probs, valid = self.pair_log_probs(latent_pi, pairs, obs)
        actions = actions.long().reshape(-1)
        hit = pairs.cols == actions.index_select(0, pairs.rows)  # at most one pair per row
        if int(hit.sum()) != masks.shape[0]:
            raise ValueError("an action in the batch is not legal under its mask")
        taken = log_probs[pairs.rows[hit], pairs.pos[hit]]
        return values, taken, self.entropy(valid, log_probs)

    def _latents(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        features = self.extract_features(obs)
        if self.share_features_extractor:
            return self.mlp_extractor(features)
        pi_features, vf_features = features
        return (
            self.mlp_extractor.forward_actor(pi_features),
            self.mlp_extractor.forward_critic(vf_features),
        )


def snapshot(policy: MaskableActorCriticPolicy, **kwargs: Any) -> NumpyPolicy:
    """A frozen numpy copy of a live torch policy (a snapshot of the learner)."""
    activation = policy.activation_fn.__name__
    kwargs.setdefault("prior", getattr(policy, "prior", None))
    return NumpyPolicy.from_state_dict(policy.state_dict(), activation, **kwargs)


__all__ = [
    "CRITICS", "FullState", "GameObservation", "LegalSetPolicy", "LegalPairs", "observation_space",
    "prior_space", "snapshot",
]  # fmt: skip
