"""PPO agents: the masked policy the lab trains, and a fast numpy player for trained models.

:class:`LegalSetPolicy` is sb3-contrib's ``MaskableActorCriticPolicy`` with the action
distribution computed over the legal actions only. Why: Odin has 3,634 actions and rarely more
than a few dozen are legal. sb3-contrib's ``MaskableCategorical`` builds a full 3,634-way
``torch.distributions.Categorical`` twice per call (unmasked, then with masked logits set to
``-1e8``), validates it, and spends most of PPO's update time in softmax, entropy and their
gradients over actions that can never be chosen. Its validation can also fail: the float32
probabilities of thousands of categories (3,600 of them ``exp(-1e8 - lse)``) can sum to 1 only
within a few ``1e-6``, which trips the ``Simplex`` check when stale probabilities are
re-validated. Here the legal actions of each row are gathered (padded to the batch's largest
legal set), their logits come from the gathered rows of the output layer, and ``log_softmax``
runs over those alone, with padding at ``-inf``: exact, no magic constant, no ``Distribution``
object, hence nothing to validate, and several times faster. The parameters are exactly those of
the parent class plus one layer (below), and a saved model is a standard MaskablePPO ``.zip``.

Shared action features: with one output row per action, what the policy learns about playing
red 3 says nothing about playing red 4. Each action's score is therefore the usual per-action
output plus ``feature_net(latent) . ACTION_FEATURES[action]``, where the fixed table describes
what the action does (cards played, card taken, size, pass/take/play, same colour or value,
highest and lowest value). This generalises across the 3,579 combos and costs one small layer.

Residual policies (``prior``): a policy built with ``prior="planner"`` (any hand-written agent)
reads one more observation column, the action that heuristic picks in the position (computed
from the same observation and mask, so the policy still sees only what the observation shows),
and adds a learned weight (``prior_weight``, initially ``PRIOR_WEIGHT``) to that action's logit.
A fresh one therefore plays as its heuristic, and PPO learns where departing from it pays (the
residual policy learning of Silver et al. 2018 and Johannink et al. 2019, on logits). The heuristic
is named in the saved model's ``policy_kwargs``; :class:`NumpyPolicy` recomputes its choice at
play time.

:class:`PPOAgent` plays a saved model with numpy (no torch at play time): deterministic (the
most probable legal action) by default, or sampled with a seeded generator. ``PPOAgent.load()``
with no path loads the bundled model ``agents/models/ppo_4p.zip``. Loading a ``.zip`` unpickles
part of it: load only trusted files.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import torch as th
from gymnasium import spaces
from sb3_contrib.common.maskable.policies import MaskableActorCriticPolicy
from stable_baselines3.common.torch_layers import BaseFeaturesExtractor

from agents.files import write_atomic
from odin_env.observation import OBS_SIZE
from odin_env.rules import NUM_ACTIONS

BUNDLED_MODEL = Path(__file__).resolve().parent / "models" / "ppo_4p.zip"
_ACTIVATIONS = {"ReLU": lambda x: np.maximum(x, 0.0), "Tanh": np.tanh}


def _action_features() -> np.ndarray:
    """``(3634, F)``: what each action does, in terms shared between actions (see the module
    docstring): cards played, card taken, combo size, kind of action, combo type, values."""
    from odin_env.cards import NUM_CARDS, NUM_VALUES
    from odin_env.combos import COMBO_CARDS, COMBO_MASKS, NUM_COMBOS
    from odin_env.rules import PASS, TAKE

    size_at = 2 * NUM_CARDS
    kind_at = size_at + NUM_VALUES
    table = np.zeros((NUM_ACTIONS, kind_at + 7), dtype=np.float32)
    table[:NUM_COMBOS, :NUM_CARDS] = COMBO_MASKS
    for i, cards in enumerate(COMBO_CARDS):
        values = [c % NUM_VALUES + 1 for c in cards]
        table[i, size_at + len(cards) - 1] = 1.0
        table[i, kind_at + 2] = 1.0
        if len(cards) > 1:
            table[i, kind_at + (3 if len({c // NUM_VALUES for c in cards}) == 1 else 4)] = 1.0
        table[i, kind_at + 5] = max(values) / NUM_VALUES
        table[i, kind_at + 6] = min(values) / NUM_VALUES
    table[PASS, kind_at] = 1.0
    for card in range(NUM_CARDS):
        table[TAKE + card, NUM_CARDS + card] = 1.0
        table[TAKE + card, kind_at + 1] = 1.0
    table.flags.writeable = False
    return table


ACTION_FEATURES = _action_features()
"""Per action: 54 cards played, 54 card taken, 9 size one-hot, pass, take, play, same colour,
same value, highest and lowest value / 9."""
NUM_ACTION_FEATURES = ACTION_FEATURES.shape[1]


# -- residual policies over a heuristic's choice ---------------------------------------------------

PRIOR_AT = OBS_SIZE
"""Column of a prior policy's observation that holds the prior agent's action (after the game
observation's ``OBS_SIZE`` columns)."""
PRIOR_WEIGHT = 2.0
"""Initial logit bonus of the prior's action (a learned parameter afterwards)."""


def prior_space() -> spaces.Box:
    """Observation space of a policy with a prior: the game observation, then the prior's action."""
    return spaces.Box(0.0, np.inf, (OBS_SIZE + 1,), np.float32)


def check_prior(spec: str | None) -> None:
    """``ValueError`` unless ``spec`` is ``None`` or a hand-written agent's name."""
    from agents.base import agent_names

    allowed = [name for name in agent_names() if name not in ("random", "ppo")]
    if spec is not None and spec not in allowed:
        raise ValueError(f"prior must be one of {', '.join(allowed)}; got {spec!r}")


def prior_actions(agent: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The prior agent's action for each row of game observations and masks."""
    return np.array([agent.act(o, m) for o, m in zip(observations, masks)], dtype=np.int64)


class GameObservation(BaseFeaturesExtractor):
    """The game observation part of a prior policy's observation (the prior's action column is
    read by the policy's head, not by the network)."""

    def __init__(self, observation_space: spaces.Box):
        super().__init__(observation_space, OBS_SIZE)

    def forward(self, observations: th.Tensor) -> th.Tensor:
        return observations[:, :OBS_SIZE]


# -- training-time policy -------------------------------------------------------------------------


def legal_sets(masks: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
    """Each row's legal action ids, padded: ``(ids, valid)``, both ``(batch, largest set)``.

    Raises ``ValueError`` for a row with no legal action (a terminal state's mask)."""
    masks = masks.bool()
    counts = masks.sum(1)
    if bool((counts == 0).any()):
        raise ValueError(
            "an action mask has no legal action: the policy was asked to act after the end"
        )
    rows, cols = masks.nonzero(as_tuple=True)
    width = int(counts.max())
    starts = th.cumsum(counts, 0) - counts
    pos = th.arange(rows.numel(), device=masks.device) - starts[rows]
    ids = th.zeros(masks.shape[0], width, dtype=th.long, device=masks.device)
    valid = th.zeros(masks.shape[0], width, dtype=th.bool, device=masks.device)
    ids[rows, pos] = cols
    valid[rows, pos] = True
    return ids, valid


class LegalSetPolicy(MaskableActorCriticPolicy):
    """``MaskableActorCriticPolicy`` whose distribution covers only the legal actions, with
    shared action features (see the module docstring). ``forward``, ``evaluate_actions`` (what
    MaskablePPO trains with) and ``get_distribution`` (``predict``) all use the same logits."""

    def __init__(
        self, *args: Any, action_features: bool = True, prior: str | None = None, **kwargs: Any
    ):
        check_prior(prior)
        self.action_features = action_features
        self.prior = prior
        if prior is not None:
            kwargs.setdefault("features_extractor_class", GameObservation)
        super().__init__(*args, **kwargs)

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

    def _legal_log_probs(
        self, latent_pi: th.Tensor, action_masks: Any, obs: th.Tensor | None = None
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        masks = th.as_tensor(action_masks, device=latent_pi.device).reshape(-1, NUM_ACTIONS)
        ids, valid = legal_sets(masks)
        head = self.action_net
        # Gathering the output rows of the legal actions costs batch x width x hidden instead of
        # batch x 3,634 x hidden, and its gradient touches only those rows.
        logits = th.einsum("bh,blh->bl", latent_pi, head.weight[ids]) + head.bias[ids]
        if self.action_features:
            logits = logits + th.einsum(
                "bf,blf->bl", self.feature_net(latent_pi), self.features[ids]
            )
        if self.prior is not None:
            chosen = (ids == self._prior_of(obs)[:, None]).to(logits.dtype)
            logits = logits + self.prior_weight * chosen
        log_probs = th.log_softmax(logits.masked_fill(~valid, float("-inf")), dim=1)
        return ids, valid, log_probs

    def get_distribution(self, obs: th.Tensor, action_masks: Any = None) -> Any:
        latent_pi, _ = self._latents(obs)
        distribution = self.action_dist.proba_distribution(
            action_logits=self.dense_logits(latent_pi, obs)
        )
        if action_masks is not None:
            distribution.apply_masking(action_masks)
        return distribution

    @staticmethod
    def _entropy(valid: th.Tensor, log_probs: th.Tensor) -> th.Tensor:
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
        # Rollouts score a handful of observations without gradients: there the dense logits
        # cost less than gathering (a few large ops beat many small ones).
        masks = th.as_tensor(action_masks, device=obs.device).reshape(-1, NUM_ACTIONS).bool()
        if not bool(masks.any(1).all()):
            raise ValueError(
                "an action mask has no legal action: the policy was asked to act after the end"
            )
        logits = self.dense_logits(latent_pi, obs).masked_fill(~masks, float("-inf"))
        log_probs = th.log_softmax(logits, dim=1)
        if deterministic:
            actions = log_probs.argmax(1)
        else:
            # Gumbel-max draws from the softmax; illegal actions stay at -inf. (torch.multinomial
            # over 3,634 columns cost more than the whole network here.)
            noise = -th.log(-th.log(th.rand_like(log_probs).clamp_(min=1e-20)))
            actions = (log_probs + noise).argmax(1)
        return actions, values, log_probs.gather(1, actions[:, None]).squeeze(1)

    def evaluate_actions(
        self, obs: th.Tensor, actions: th.Tensor, action_masks: Any = None
    ) -> tuple[th.Tensor, th.Tensor, th.Tensor]:
        if action_masks is None and self.prior is None:
            return super().evaluate_actions(obs, actions, action_masks)
        if action_masks is None:
            action_masks = th.ones(obs.shape[0], NUM_ACTIONS, dtype=th.bool)
        latent_pi, latent_vf = self._latents(obs)
        values = self.value_net(latent_vf)
        ids, valid, log_probs = self._legal_log_probs(latent_pi, action_masks, obs)
        hit = (ids == actions.long().reshape(-1, 1)) & valid
        if not bool(hit.any(1).all()):
            raise ValueError("an action in the batch is not legal under its mask")
        taken = log_probs.gather(1, hit.float().argmax(1, keepdim=True)).squeeze(1)
        return values, taken, self._entropy(valid, log_probs)

    def _latents(self, obs: th.Tensor) -> tuple[th.Tensor, th.Tensor]:
        features = self.extract_features(obs)
        if self.share_features_extractor:
            return self.mlp_extractor(features)
        pi_features, vf_features = features
        return (
            self.mlp_extractor.forward_actor(pi_features),
            self.mlp_extractor.forward_critic(vf_features),
        )


# -- numpy play-time policy -----------------------------------------------------------------------


class NumpyPolicy:
    """The actor of a trained policy as numpy arrays: picklable, cheap, no torch threads.

    ``layers``: ``(weight, bias)`` pairs of the hidden layers, then the output layer."""

    def __init__(
        self,
        layers: list[tuple[np.ndarray, np.ndarray]],
        activation: str = "Tanh",
        deterministic: bool = True,
        seed: int | None = None,
        name: str = "ppo",
        features: tuple[np.ndarray, np.ndarray] | None = None,
        prior: str | None = None,
        prior_weight: float = PRIOR_WEIGHT,
    ):
        if activation not in _ACTIVATIONS:
            raise ValueError(
                f"activation must be one of {', '.join(_ACTIVATIONS)}; got {activation!r}"
            )
        self.layers = [(np.asarray(w, np.float32), np.asarray(b, np.float32)) for w, b in layers]
        self.features = None
        if features is not None:
            # Folded into the output layer once: scores = h @ (W + F_table @ Wf).T + ...
            fw, fb = (np.asarray(x, np.float32) for x in features)
            self.features = (fw, fb)
            w, b = self.layers[-1]
            self.layers[-1] = (w + ACTION_FEATURES @ fw, b + ACTION_FEATURES @ fb)
        check_prior(prior)
        self.prior = prior
        self.prior_weight = float(prior_weight)
        self._prior_agent = None
        if prior is not None:
            from agents.base import make

            self._prior_agent = make(prior)
        self.activation = activation
        self.deterministic = deterministic
        self.rng = np.random.default_rng(seed)
        self.name = name
        if self.layers[0][0].shape[1] != OBS_SIZE or self.layers[-1][0].shape[0] != NUM_ACTIONS:
            raise ValueError(
                f"incompatible policy: it reads {self.layers[0][0].shape[1]} inputs and scores "
                f"{self.layers[-1][0].shape[0]} actions; Odin has {OBS_SIZE} and {NUM_ACTIONS}"
            )

    @classmethod
    def from_state_dict(cls, state: dict[str, Any], activation: str, **kwargs: Any) -> NumpyPolicy:
        """Build from a ``MaskableActorCriticPolicy`` state dict (torch tensors or arrays)."""

        def arr(key: str) -> np.ndarray:
            value = state[key]
            return (
                value.detach().cpu().numpy() if isinstance(value, th.Tensor) else np.asarray(value)
            )

        hidden = sorted(
            {int(k.split(".")[2]) for k in state if k.startswith("mlp_extractor.policy_net.")}
        )
        layers = [
            (arr(f"mlp_extractor.policy_net.{i}.weight"), arr(f"mlp_extractor.policy_net.{i}.bias"))
            for i in hidden
        ]
        layers.append((arr("action_net.weight"), arr("action_net.bias")))
        if "feature_net.weight" in state:
            kwargs["features"] = (arr("feature_net.weight"), arr("feature_net.bias"))
        if "prior_weight" in state:
            kwargs["prior_weight"] = float(arr("prior_weight"))
        return cls(layers, activation, **kwargs)

    @classmethod
    def from_policy(cls, policy: MaskableActorCriticPolicy, **kwargs: Any) -> NumpyPolicy:
        """A frozen copy of a live torch policy (a snapshot of the learner)."""
        activation = policy.activation_fn.__name__
        kwargs.setdefault("prior", getattr(policy, "prior", None))
        return cls.from_state_dict(policy.state_dict(), activation, **kwargs)

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """Unmasked action scores of a batch ``(n, OBS_SIZE)``."""
        h = np.asarray(observations, np.float32)
        act = _ACTIVATIONS[self.activation]
        for w, b in self.layers[:-1]:
            h = act(h @ w.T + b)
        w, b = self.layers[-1]
        return h @ w.T + b

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Reseed the sampling generator (used only when not deterministic)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One legal action per row of a batch of (game) observations and masks."""
        masks = np.asarray(action_masks).astype(bool, copy=False).reshape(-1, NUM_ACTIONS)
        if not masks.any(1).all():
            raise ValueError("an action mask has no legal action: this agent is not the one to act")
        observations = np.reshape(observations, (-1, OBS_SIZE))
        logits = self.logits(observations)
        if self._prior_agent is not None:
            chosen = prior_actions(self._prior_agent, observations, action_masks)
            logits[np.arange(len(chosen)), chosen] += self.prior_weight
        scores = np.where(masks, logits, -np.inf)
        if self.deterministic:
            return scores.argmax(1)
        # Gumbel-max: a sample from the softmax over the legal actions, one generator call.
        return (scores + self.rng.gumbel(size=scores.shape)).argmax(1)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The action for one observation and its mask."""
        return int(self.act_batch(observation[None], action_mask[None])[0])


# -- loading saved models -------------------------------------------------------------------------


def read_model(path: str | Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(data, policy state dict)`` of a MaskablePPO ``.zip``; one clear error if it is not one.

    ``FileNotFoundError`` for a missing file; ``ValueError`` naming the file and the problem for
    a corrupt or incompatible one."""
    from stable_baselines3.common.save_util import load_from_zip_file

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no PPO model at {path}")
    try:
        with zipfile.ZipFile(path) as archive:
            bad = archive.testzip()
        if bad is not None:
            raise zipfile.BadZipFile(f"member {bad} is damaged")
        data, params, _ = load_from_zip_file(path, device="cpu", print_system_info=False)
    except Exception as error:  # noqa: BLE001 - every failure becomes one clear message
        raise ValueError(
            f"cannot load PPO model {path}: not a readable MaskablePPO .zip "
            f"({type(error).__name__}: {error})"
        ) from None
    if data is None or not params or "policy" not in params:
        raise ValueError(f"cannot load PPO model {path}: the .zip holds no policy parameters")
    state = params["policy"]
    obs_space, act_space = data.get("observation_space"), data.get("action_space")
    obs_shape = getattr(obs_space, "shape", None)
    n_actions = getattr(act_space, "n", None)
    prior = (data.get("policy_kwargs") or {}).get("prior")
    expected = (OBS_SIZE + (prior is not None),)
    if obs_shape != expected or n_actions != NUM_ACTIONS or "action_net.weight" not in state:
        raise ValueError(
            f"incompatible PPO model {path}: observations {obs_shape}, actions {n_actions}; "
            f"Odin needs ({OBS_SIZE},) and {NUM_ACTIONS} (was it trained on this version?)"
        )
    return data, state


def _activation_name(data: dict[str, Any]) -> str:
    activation = (data.get("policy_kwargs") or {}).get("activation_fn", th.nn.Tanh)
    return getattr(activation, "__name__", str(activation))


class PPOAgent(NumpyPolicy):
    """A trained MaskablePPO model as an :class:`agents.base.Agent` (numpy inference).

    Works at any table size from 2 to 6: the observation says how many play and the mask keeps
    every choice legal (a model trained at 4 players is strongest at 4)."""

    @classmethod
    def load(
        cls, path: str | Path | None = None, deterministic: bool = True, seed: int | None = None
    ) -> PPOAgent:
        """Load a MaskablePPO ``.zip`` (``None``: the bundled model). Trusted files only."""
        path = BUNDLED_MODEL if path is None else Path(path)
        data, state = read_model(path)
        try:
            return cls.from_state_dict(
                state,
                _activation_name(data),
                deterministic=deterministic,
                seed=seed,
                name="ppo",
                prior=(data.get("policy_kwargs") or {}).get("prior"),
            )
        except (KeyError, ValueError) as error:
            raise ValueError(f"incompatible PPO model {path}: {error}") from None


def average_models(paths: list[str | Path], out: str | Path) -> Path:
    """Write the parameter average of trained policies (a "model soup", Wortsman et al. 2022) to
    ``out`` as a policy-only MaskablePPO ``.zip``; return ``out``.

    The inputs must share one architecture (and prior): checkpoints of one run, or of runs
    fine-tuned from the same start, whose average plays better than each of them (the bundled
    model is one, see the README). ``ValueError`` names an input that does not fit; nothing is
    written then."""
    if len(paths) < 2:
        raise ValueError(f"averaging needs at least two models; got {len(paths)}")
    states, first = [], None
    for path in paths:
        data, state = read_model(path)
        shape = {k: tuple(v.shape) for k, v in state.items()}
        kwargs = data.get("policy_kwargs") or {}
        if first is None:
            first = (shape, kwargs.get("prior"), str(path))
        elif (shape, kwargs.get("prior")) != first[:2]:
            raise ValueError(
                f"cannot average {path} with {first[2]}: different architectures or priors"
            )
        states.append(state)
    average = {k: sum(state[k].float() for state in states) / len(states) for k in states[0]}
    params = io.BytesIO()
    th.save(average, params)
    # The last input's zip with its policy parameters replaced (and no optimizer state).
    out_zip = io.BytesIO()
    with (
        zipfile.ZipFile(paths[-1]) as source,
        zipfile.ZipFile(out_zip, "w", zipfile.ZIP_DEFLATED) as target,
    ):
        for item in source.infolist():
            if item.filename == "policy.pth":
                target.writestr(item.filename, params.getvalue())
            elif item.filename != "policy.optimizer.pth":
                target.writestr(item.filename, source.read(item.filename))
    write_atomic(Path(out), out_zip.getvalue())
    return Path(out)


def save_policy_only(model: Any, path: str | Path) -> None:
    """Write ``model`` as a MaskablePPO ``.zip`` without its optimizer state (half the size),
    atomically; :class:`PPOAgent` loads it (``MaskablePPO.load`` needs the full checkpoint)."""
    buffer = io.BytesIO()
    model.save(buffer)
    out = io.BytesIO()
    with zipfile.ZipFile(buffer) as full, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as slim:
        for item in full.infolist():
            if item.filename != "policy.optimizer.pth":
                slim.writestr(item.filename, full.read(item.filename))
    write_atomic(Path(path), out.getvalue())


__all__ = [
    "BUNDLED_MODEL", "LegalSetPolicy", "NumpyPolicy", "PPOAgent", "average_models", "legal_sets",
    "read_model", "save_policy_only",
]  # fmt: skip
