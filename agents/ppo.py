"""The PPO player: a trained policy played with numpy (no torch at play time).

:class:`NumpyPolicy` is the actor of a policy trained by :mod:`odin_lab.training` (the network that
:class:`odin_lab.training.policy.LegalSetPolicy` trains): hidden layers, an output row per action,
and the shared action features (:data:`ACTION_FEATURES`, folded into the output layer once at load).
It plays deterministically (the most probable legal action) by default, or samples with a seeded
generator (Gumbel-max over the legal actions).

Residual policies: a policy whose ``prior`` names a hand-written agent adds ``prior_weight`` to
the logit of the action that agent picks in the same position (from the same observation and
mask, so the player still sees only what the observation shows).

:class:`PPOAgent` loads a model file (``PPOAgent.load()`` with no path: :data:`BUNDLED_MODEL`);
:class:`BundledPPO` (``agents.make("ppo")``) plays each table size with the bundled model trained
for it.
Model files are safetensors with JSON metadata (docs/model-format.md): loading one never
unpickles anything and needs no torch. An SB3 ``.zip`` is refused unless imported explicitly
(:data:`SB3_OPT_IN`).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import legal_pairs, refuse_goat
from agents.heuristics import HEURISTICS
from agents.model_check import ACTIVATIONS as _ACTIVATIONS
from agents.model_check import check_model
from odin_env.cards import NUM_CARDS, NUM_VALUES
from odin_env.combos import COMBO_CARDS, COMBO_MASKS, NUM_COMBOS
from odin_env.observation import LAYOUT, OBS_SIZE
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, NUM_ACTIONS, PASS, TAKE

BUNDLED_DIR = Path(__file__).resolve().parent / "models"
BUNDLED_MODEL = BUNDLED_DIR / "ppo_4p.safetensors"
"""The bundled model of ``PPOAgent.load()``, and the one :class:`BundledPPO` plays at a table
size that has no model of its own."""


def _action_features() -> np.ndarray:
    """``(3634, F)``: what each action does, in terms shared between actions (see the module
    docstring): cards played, card taken, combo size, kind of action, combo type, values."""
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


_PLAYERS = LAYOUT["players"][0]
"""The observation's one-hot of the table size (2 .. 6)."""

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
            value = state[key]
            # torch tensors (a live policy's state dict) or arrays (a loaded model file)
            return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)

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


# -- model files (see docs/model-format.md) ------------------------------------------------------

MODEL_FORMAT = "odin-lab"
"""``format`` entry of a model file's safetensors metadata."""
FORMAT_VERSION = 1
"""The newest format version this code reads and writes."""
POLICY = "policy/"
"""Prefix of the policy's tensors (its torch state-dict names follow)."""
SB3_OPT_IN = (
    "train.py --import-sb3-zip PATH --name NAME (or PPOAgent.load(PATH, trust_pickle=True)); "
    "importing unpickles the file, so only for files you trust"
)


def _zip_refusal(path: Path) -> ValueError:
    return ValueError(
        f"refusing to load {path}: it is an SB3 .zip, and reading one unpickles it (runs code "
        f"stored in it); convert a trusted one once with {SB3_OPT_IN}"
    )


def is_zip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(4) == b"PK\x03\x04" or path.suffix.lower() == ".zip"


def read_model(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(info, policy state)`` of a lab model file or checkpoint: the metadata's ``model``
    JSON and the policy's tensors by their torch state-dict names, as numpy arrays. Nothing is
    unpickled: the file is safetensors (a JSON header and raw arrays).

    ``FileNotFoundError`` for a missing file; ``ValueError`` naming the file and the problem for
    an SB3 ``.zip`` (with the import opt-in), a corrupt or an incompatible one."""

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no PPO model at {path}")
    if is_zip(path):
        raise _zip_refusal(path)
    info, state = read_parts(path, "PPO")
    check_model(path, info, state)
    return info, state


def read_parts(path: Path, kind: str) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """The ``model`` JSON and the ``policy/`` tensors of a lab model file of any kind (a
    safetensors file, never unpickled); ``ValueError`` naming ``kind`` and the file for one that
    is not readable as such (no lab metadata, a version this code does not read, corrupt)."""
    from safetensors import safe_open

    try:
        with safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
            if meta.get("format") != MODEL_FORMAT:
                raise ValueError("no odin-lab metadata")
            version = int(meta.get("version", "0"))
            if not 1 <= version <= FORMAT_VERSION:
                raise ValueError(f"format version {version}; this code reads 1 to {FORMAT_VERSION}")
            info = json.loads(meta["model"])
            state = {k[len(POLICY) :]: f.get_tensor(k) for k in f.keys() if k.startswith(POLICY)}  # noqa: SIM118
    except Exception as error:  # noqa: BLE001 - every failure becomes one clear message
        first = (str(error).splitlines() or [""])[0]
        raise ValueError(
            f"cannot load {kind} model {path}: not a readable odin-lab model file "
            f"({type(error).__name__}: {first})"
        ) from None
    return info, state


def model_info(
    net_pi: list[int],
    net_vf: list[int],
    activation: str,
    action_features: bool,
    prior: str | None,
    players: int | None,
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``model`` JSON of a model file (see docs/model-format.md)."""
    return {
        "architecture": {
            "net_pi": [int(n) for n in net_pi],
            "net_vf": [int(n) for n in net_vf],
            "activation": activation,
            "action_features": bool(action_features),
            "prior": prior,
        },
        "observation_size": OBS_SIZE + (prior is not None),
        "num_actions": NUM_ACTIONS,
        "players": players,
        "provenance": provenance or {},
    }


def model_bytes(
    state: dict[str, Any],
    info: dict[str, Any],
    extra: dict[str, Any] | None = None,
    metadata: dict[str, str] | None = None,
) -> bytes:
    """A model file's bytes: ``state``'s arrays under ``policy/``, ``extra``'s arrays as named,
    and the metadata (``format``, ``version``, ``model`` = ``info`` as JSON, then
    ``metadata``)."""
    from safetensors.numpy import save

    tensors = {POLICY + k: np.require(_array(v), requirements="C") for k, v in state.items()}
    tensors.update({k: np.require(_array(v), requirements="C") for k, v in (extra or {}).items()})
    header = {"format": MODEL_FORMAT, "version": str(FORMAT_VERSION), "model": json.dumps(info)}
    return save(tensors, metadata={**header, **(metadata or {})})


def write_model(path: str | Path, state: dict[str, Any], info: dict[str, Any]) -> Path:
    """Write a lab model file atomically; return its path."""
    from odin_lab.files import write_atomic

    write_atomic(Path(path), model_bytes(state, info))
    return Path(path)


def _array(value: Any) -> np.ndarray:
    # torch tensors (a live policy's state dict) or arrays (a loaded model file)
    return value.detach().cpu().numpy() if hasattr(value, "detach") else np.asarray(value)


def read_sb3_zip(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(info, policy state)`` of a MaskablePPO ``.zip``. **Unpickles the file**: this is the
    explicit import opt-in (:data:`SB3_OPT_IN`), for trusted files only. Needs torch."""
    import warnings

    from stable_baselines3.common.save_util import load_from_zip_file

    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no PPO model at {path}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the policy class is not needed, only its weights
            data, params, _ = load_from_zip_file(path, device="cpu", print_system_info=False)
    except Exception as error:  # noqa: BLE001 - every failure becomes one clear message
        raise ValueError(
            f"cannot import {path}: not a readable MaskablePPO .zip ({type(error).__name__})"
        ) from None
    if data is None or not params or "policy" not in params:
        raise ValueError(f"cannot import {path}: the .zip holds no policy parameters")
    state = {k: _array(v) for k, v in params["policy"].items()}
    kwargs = data.get("policy_kwargs") or {}
    arch = kwargs.get("net_arch") or {}
    activation = kwargs.get("activation_fn")
    info = model_info(
        arch.get("pi", []) if isinstance(arch, dict) else list(arch),
        arch.get("vf", []) if isinstance(arch, dict) else list(arch),
        getattr(activation, "__name__", "Tanh" if activation is None else str(activation)),
        "feature_net.weight" in state,
        kwargs.get("prior"),
        None,
        {"imported_from": path.name, "num_timesteps": data.get("num_timesteps")},
    )
    obs_shape = getattr(data.get("observation_space"), "shape", None)
    if obs_shape != (info["observation_size"],):
        info["observation_size"] = obs_shape[0] if obs_shape else None
    if getattr(data.get("action_space"), "n", None) != NUM_ACTIONS:
        info["num_actions"] = getattr(data.get("action_space"), "n", None)
    check_model(path, info, state)
    return info, state


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
    "ACTION_FEATURES", "BUNDLED_DIR", "BUNDLED_MODEL", "BundledPPO", "FORMAT_VERSION",
    "MODEL_FORMAT", "NumpyPolicy", "PPOAgent", "PRIOR_AT", "PRIOR_WEIGHT", "SB3_OPT_IN",
    "bundled_models", "check_prior", "model_bytes", "model_info", "prior_actions", "read_model",
    "read_sb3_zip", "write_model",
]  # fmt: skip
