"""The PPO player: a trained policy played with numpy (no torch at play time).

:class:`NumpyPolicy` is the actor of a policy trained by :mod:`odin_lab.training` (the network that
:class:`odin_lab.training.policy.LegalSetPolicy` trains): hidden layers, an output row per action,
and the shared action features (:data:`agents.features.ACTION_FEATURES`, folded into the output
layer once at load). It plays deterministically (the most probable legal action) by default, or
samples with a seeded generator (Gumbel-max over the legal actions).

Residual policies: a policy whose ``prior`` names a hand-written agent adds ``prior_weight`` to
the logit of the action that agent picks in the same position (from the same observation and
mask, so the player still sees only what the observation shows).

:class:`PPOAgent` loads a model file (``PPOAgent.load()`` with no path: :data:`BUNDLED_MODEL`);
:class:`BundledPPO` (``agents.make("ppo")``) plays each table size with the bundled model trained
for it. Model files are read by :mod:`agents.model_file` (never unpickled, no torch).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import legal_pairs, refuse_goat
from agents.features import ACTION_FEATURES
from agents.heuristics import HEURISTICS
from agents.model_check import ACTIVATIONS as _ACTIVATIONS
from agents.model_file import as_array, is_zip, read_model, read_sb3_zip
from odin_env.observation import LAYOUT, OBS_SIZE
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, NUM_ACTIONS

BUNDLED_DIR = Path(__file__).resolve().parent / "models"
BUNDLED_MODEL = BUNDLED_DIR / "ppo_4p.safetensors"
"""The bundled model of ``PPOAgent.load()``, and the one :class:`BundledPPO` plays at a table
size that has no model of its own."""
_PLAYERS = LAYOUT["players"][0]
"""The observation's one-hot of the table size (2 .. 6)."""


# -- residual policies over a heuristic's choice ---------------------------------------------------

PRIOR_AT = OBS_SIZE
"""Column of a prior policy's observation that holds the prior agent's action (after the game
observation's ``OBS_SIZE`` columns)."""
PRIOR_WEIGHT = 2.0
"""Initial logit bonus of the prior's action (a learned parameter afterwards)."""


def check_prior(spec: str | None) -> None:
    """``ValueError`` unless ``spec`` is ``None`` or a hand-written agent's name."""
    allowed = list(HEURISTICS)
    if spec is not None and spec not in allowed:
        raise ValueError(f"prior must be one of {', '.join(allowed)}; got {spec!r}")


def prior_actions(agent: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The prior agent's action for each row of game observations and masks (in one call when
    the agent has a batched form: the heuristics' batched forms act exactly as they do)."""
    if hasattr(agent, "act_batch"):
        return agent.act_batch(observations, masks)
    return np.array([agent.act(o, m) for o, m in zip(observations, masks)], dtype=np.int64)


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
            self._prior_agent = HEURISTICS[prior]()
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
            return as_array(state[key])

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

    def hidden(self, observations: np.ndarray) -> np.ndarray:
        """The last hidden layer's activations of a batch ``(n, OBS_SIZE)``."""
        h = np.asarray(observations, np.float32)
        act = _ACTIVATIONS[self.activation]
        for w, b in self.layers[:-1]:
            h = act(h @ w.T + b)
        return h

    def logits(self, observations: np.ndarray) -> np.ndarray:
        """Unmasked action scores of a batch ``(n, OBS_SIZE)``: every action's, the reference
        that :meth:`legal_scores` is tested against."""
        w, b = self.layers[-1]
        return self.hidden(observations) @ w.T + b

    def legal_scores(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """The scores of a batch's legal actions, ``-inf`` elsewhere: :meth:`logits` under the
        masks, computed for the legal actions only. A position has a few dozen of the 3,581
        actions, and the output layer is most of the network's arithmetic."""
        h = self.hidden(observations)
        rows, cols = legal_pairs(masks)
        w, b = self.layers[-1]
        scores = np.full(masks.shape, -np.inf, np.float32)
        scores[rows, cols] = np.einsum("ij,ij->i", h[rows], w[cols]) + b[cols]
        return scores

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Reseed the sampling generator (used only when not deterministic)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One legal action per row of a batch of (game) observations and masks."""
        refuse_goat(action_masks, "a PPO model trained without the Goat")
        masks = np.asarray(action_masks).astype(bool, copy=False).reshape(-1, NUM_ACTIONS)
        if not masks.any(1).all():
            raise ValueError("an action mask has no legal action: this agent is not the one to act")
        observations = np.reshape(observations, (-1, OBS_SIZE))
        scores = self.legal_scores(observations, masks)
        if self._prior_agent is not None:
            chosen = prior_actions(self._prior_agent, observations, action_masks)
            scores[np.arange(len(chosen)), chosen] += self.prior_weight
        if self.deterministic:
            return scores.argmax(1)
        # Gumbel-max: a sample from the softmax over the legal actions, one generator call.
        return (scores + self.rng.gumbel(size=scores.shape)).argmax(1)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The action for one observation and its mask."""
        return int(self.act_batch(observation[None], action_mask[None])[0])


class PPOAgent(NumpyPolicy):
    """A trained policy as an :class:`agents.base.Agent` (numpy inference).

    Works at any table size from 2 to 6: the observation says how many play and the mask keeps
    every choice legal (a model trained at 4 players is strongest at 4)."""

    info: dict[str, Any]
    """The model file's ``model`` metadata (architecture, players, provenance)."""

    @classmethod
    def load(
        cls,
        path: str | Path | None = None,
        deterministic: bool = True,
        seed: int | None = None,
        trust_pickle: bool = False,
    ) -> PPOAgent:
        """Load a lab model file or checkpoint (``None``: the bundled model). Nothing is
        unpickled; an SB3 ``.zip`` is refused unless ``trust_pickle`` (which unpickles it)."""
        path = BUNDLED_MODEL if path is None else Path(path)
        if trust_pickle and path.is_file() and is_zip(path):
            info, state = read_sb3_zip(path)
        else:
            info, state = read_model(path)
        arch = info["architecture"]
        try:
            agent = cls.from_state_dict(
                state,
                arch["activation"],
                deterministic=deterministic,
                seed=seed,
                name="ppo",
                prior=arch.get("prior"),
            )
        except (KeyError, ValueError, TypeError) as error:
            raise ValueError(f"incompatible PPO model {path}: {error}") from None
        agent.info = info
        agent.path = path
        agent._warned = set()
        return agent

    def table_note(self, players: int) -> str | None:
        """One line for a person at a table of ``players`` when the model was not trained for
        that size (``None`` when it was, or its file does not say). A front end that shows the
        line takes the warning's place: :meth:`act_batch` no longer warns about that size."""
        trained = (getattr(self, "info", None) or {}).get("players")
        if trained is None or trained == players:
            return None
        self._warned.add(players)
        return f"its model was trained for {trained} players, not {players}: expect weaker play"

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """As :meth:`NumpyPolicy.act_batch`; warns once per table size the model was not
        trained for (it plays legally there, but weaker), unless :meth:`table_note` told it."""
        refuse_goat(action_masks, "a PPO model trained without the Goat")
        trained = (getattr(self, "info", None) or {}).get("players")
        if trained is not None:
            rows = np.reshape(observations, (-1, OBS_SIZE))
            if len(rows):
                players = int(rows[0, _PLAYERS].argmax()) + MIN_PLAYERS
                if players != trained and players not in self._warned:
                    self._warned.add(players)
                    warnings.warn(
                        f"PPO model {self.path} was trained for {trained} players and plays "
                        f"at {players}: expect it to be weaker there",
                        stacklevel=2,
                    )
        return super().act_batch(observations, action_masks)


def bundled_models() -> dict[int, Path]:
    """The bundled model file of each table size that has one (``models/ppo_{n}p.safetensors``)."""
    files = {n: BUNDLED_DIR / f"ppo_{n}p.safetensors" for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)}
    return {n: path for n, path in files.items() if path.is_file()}


class BundledPPO:
    """The bundled PPO player, ``agents.make("ppo")``: each row is played by the bundled model
    trained for its table size (:func:`bundled_models`, read from the observation), or by
    :data:`BUNDLED_MODEL` where there is none (which then warns that it was trained for another
    size). Files are loaded on first use."""

    def __init__(self, seed: int | None = None, deterministic: bool = True):
        self.name = "ppo"
        self.seed = seed
        self.deterministic = deterministic
        self.files = bundled_models()
        self._agents: dict[Path, PPOAgent] = {}

    def model_for(self, players: int) -> PPOAgent:
        """The model that plays a table of ``players``."""
        path = self.files.get(players, BUNDLED_MODEL)
        if path not in self._agents:
            agent = PPOAgent.load(path, deterministic=self.deterministic, seed=self.seed)
            self._agents[path] = agent
        return self._agents[path]

    def table_note(self, players: int) -> str | None:
        """:meth:`PPOAgent.table_note` of the model that plays ``players``."""
        return self.model_for(players).table_note(players)

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Reseed every loaded model (used only when not deterministic)."""
        if seed is not None:
            self.seed = seed
            for agent in self._agents.values():
                agent.reset(seat, seed)

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One legal action per row, each from the model of its row's table size."""
        refuse_goat(action_masks, "the bundled PPO models")
        rows = np.reshape(observations, (-1, OBS_SIZE))
        masks = np.reshape(action_masks, (len(rows), NUM_ACTIONS))
        sizes = rows[:, _PLAYERS].argmax(1) + MIN_PLAYERS
        actions = np.empty(len(rows), dtype=np.int64)
        for players in np.unique(sizes):
            at = sizes == players
            actions[at] = self.model_for(int(players)).act_batch(rows[at], masks[at])
        return actions

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The action for one observation and its mask."""
        return int(self.act_batch(observation[None], action_mask[None])[0])


__all__ = [
    "BUNDLED_DIR",
    "BUNDLED_MODEL",
    "BundledPPO",
    "NumpyPolicy",
    "PPOAgent",
    "PRIOR_AT",
    "PRIOR_WEIGHT",
    "bundled_models",
    "check_prior",
    "prior_actions",
]
