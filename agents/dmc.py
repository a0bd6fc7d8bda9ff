"""The deep Monte Carlo (DMC) player: a Q-network over (observation, action) pairs, played with
numpy (no torch at play time).

A DMC model (trained by ``train.py --algo dmc``, Zha et al., DouZero, ICML 2021) scores each
legal action ``a`` of an observation ``o`` with ``Q(o, a)``, an estimate of the return the seat
gets from that decision to the episode's end, and plays the legal action of highest ``Q``
(ties: the lowest action index). The network reads the concatenation of the observation and the
action's row of the lab's shared action features (:data:`agents.features.ACTION_FEATURES`: cards
played, card taken, size, kind, ...). Its first layer is kept in two parts, one per input, so the
observation's part is computed once per row and the action's once per action (folded into a
``(3634, width)`` table at load), and only the legal (row, action) pairs pass the later layers:

    z0 = relu(state_in(o) + action_in(features[a]))
    z_{i+1} = relu(hidden[i](z_i))
    Q(o, a) = q(z_last)

A model's ``symmetries`` (its JSON; 1 when absent) is how many labellings of the colours in
play the player reads each position under: with ``k > 1`` the value of an action is the mean of
``Q`` over the identity and ``k - 1`` other permutations of those colours
(:func:`odin_env.symmetry.colour_permutations`), each applied to the observation and the action
alike (:func:`odin_env.symmetry.colour_relabelling`). Colours are a symmetry of the game, so
this changes what the player plays only through the network's errors, which the mean averages
out: the same network, read ``k`` times.

A model file is a lab model file (docs/model-format.md) whose ``model`` JSON says
``"algo": "dmc"`` and whose ``policy/`` tensors are the network's (:data:`TENSORS`). The player
reads only the observation and the mask.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import argmax_by_row, legal_pairs, refuse_goat
from agents.features import ACTION_FEATURES, NUM_ACTION_FEATURES
from agents.model_file import MODEL_FORMAT, is_zip, model_path, read_parts
from odin_env.files import read_head
from odin_env.observation import OBS_SIZE
from odin_env.rules import NUM_ACTIONS
from odin_env.symmetry import colour_relabellings, colours_in_play

ALGO = "dmc"
"""The ``algo`` entry of a DMC model's ``model`` JSON, and its agent spec's kind (``dmc:PATH``)."""
BUNDLED_DMC = Path(__file__).resolve().parent / "models" / "dmc.safetensors"
"""The bundled DMC network, ``agents.make("dmc")``: one network for every table size, 2-6
players, with no heuristic and no search inside (its card: ``models/dmc.json``)."""
BUNDLED_DMC_ONE = BUNDLED_DMC.with_name("dmc_one.safetensors")
"""The bundle taught to one network read once (``dmc:agents/models/dmc_one.safetensors``): a
sixteenth of the bundle's arithmetic a decision, for players that call a network often (a
search's playouts; its card: ``models/dmc_one.json``)."""
ACTIVATION = "ReLU"
"""The activation of every hidden layer."""
MAX_SYMMETRIES = 720
"""The most colour labellings a model may ask its player to read a position under (6!, all of
them at 6 colours): it bounds the work a model file can ask for."""
TENSORS = (
    "state_in.weight", "state_in.bias", "action_in.weight", "hidden.<i>.weight",
    "hidden.<i>.bias", "q.weight", "q.bias",
)  # fmt: skip
"""The network's tensors (torch state-dict names): the first layer's observation part
``(net[0], OBS_SIZE)`` with its bias and action part ``(net[0], F)``, the hidden layers ``i`` =
0 .. len(net) - 2 ``(net[i + 1], net[i])``, and the output ``(1, net[-1])``."""


def dmc_info(
    net: list[int],
    players: int | None,
    provenance: dict | None = None,
    horizon: str = "hand",
    symmetries: int = 1,
) -> dict:
    """The ``model`` JSON of a DMC model file (docs/model-format.md); ``horizon``: what its
    values estimate (the ``horizon`` it was trained with; see :func:`value_horizon`);
    ``symmetries``: the colour labellings its player averages over (the module docstring)."""
    return {
        "algo": ALGO,
        "architecture": {
            "net": [int(n) for n in net],
            "activation": ACTIVATION,
            "action_features": NUM_ACTION_FEATURES,
        },
        "observation_size": OBS_SIZE,
        "num_actions": NUM_ACTIONS,
        "players": players,
        "horizon": horizon,
        "symmetries": int(symmetries),
        "provenance": provenance or {},
    }


def value_horizon(info: dict[str, Any]) -> str:
    """What a DMC network's values estimate, from its ``model`` JSON: ``hand`` (minus its seat's
    penalty for the hand; files that name no horizon, made before the others existed), ``win``
    (its seat's chance to win the game once the hand ends) or ``episode`` (its return to the
    game's end)."""
    return str(info.get("horizon", "hand"))


def play_symmetries(info: dict[str, Any]) -> int:
    """How many colour labellings the player of a DMC model's ``model`` JSON averages its values
    over (1 when the file names none); ``ValueError`` unless an int in 1 .. MAX_SYMMETRIES."""
    k = info.get("symmetries", 1)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_SYMMETRIES:
        raise ValueError(f"its symmetries is {k!r}; allowed: an integer 1 .. {MAX_SYMMETRIES}")
    return k


def model_algo(path: str | Path) -> str | None:
    """The algorithm a lab model file's header names (``"ppo"`` when it names none: files made
    before DMC), or ``None`` when ``path`` is not a readable lab model file. Reads the header
    only."""
    from safetensors import safe_open

    try:
        if read_head(path, 4) == b"PK\x03\x04":
            return None
        with safe_open(str(path), framework="np") as f:
            meta = f.metadata() or {}
        if meta.get("format") != MODEL_FORMAT:
            return None
        info = json.loads(meta["model"])
        return str(info.get("algo", "ppo")) if isinstance(info, dict) else None
    except Exception:  # noqa: BLE001 - any failure: not a model file this function can name
        return None


def read_dmc_model(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(info, network state)`` of a DMC model file or checkpoint: the ``model`` JSON and the
    ``policy/`` tensors by their names (:data:`TENSORS`). Nothing is unpickled.

    ``FileNotFoundError`` for a missing file; ``ValueError`` naming the file and the problem for
    a file that is not a readable DMC model of this game (a PPO model, an SB3 ``.zip``, a
    corrupt file, other sizes)."""
    path = model_path(path, "DMC")
    if is_zip(path):
        raise ValueError(
            f"cannot load DMC model {path}: not a readable odin-lab model file (ValueError: it "
            "is a .zip, which loading would unpickle; refused)"
        )
    info, state = read_parts(path, "DMC")
    algo = info.get("algo", "ppo") if isinstance(info, dict) else None
    if algo != ALGO:
        raise ValueError(
            f"cannot load DMC model {path}: its header names algo {algo!r}"
            + (f" (play it as {algo}:PATH)" if isinstance(algo, str) else "")
        )
    try:
        check_state(info, state)
    except ValueError as error:
        raise ValueError(f"incompatible DMC model {path}: {error}") from None
    return info, state


def check_state(info: dict[str, Any], state: dict[str, np.ndarray]) -> None:
    """``ValueError`` unless ``state`` holds exactly the network ``info``'s architecture names,
    for this game's observation, actions and action features."""
    arch = info.get("architecture")
    net = arch.get("net") if isinstance(arch, dict) else None
    if not net or not all(isinstance(n, int) and n > 0 for n in net):
        raise ValueError(f"its metadata has no usable architecture ({arch!r})")
    if arch.get("activation") != ACTIVATION or info.get("num_actions") != NUM_ACTIONS:
        raise ValueError(
            f"activation {arch.get('activation')!r}, actions {info.get('num_actions')}; this "
            f"version plays {ACTIVATION} networks over {NUM_ACTIONS} actions"
        )
    play_symmetries(info)
    shapes = {
        "state_in.weight": (net[0], OBS_SIZE),
        "state_in.bias": (net[0],),
        "action_in.weight": (net[0], NUM_ACTION_FEATURES),
        "q.weight": (1, net[-1]),
        "q.bias": (1,),
    }
    for i, (n_in, n_out) in enumerate(zip(net, net[1:])):
        shapes[f"hidden.{i}.weight"], shapes[f"hidden.{i}.bias"] = (n_out, n_in), (n_out,)
    for name, array in state.items():
        if not np.issubdtype(np.asarray(array).dtype, np.floating) or not np.isfinite(array).all():
            raise ValueError(f"its tensor {name} is not finite floating-point numbers")
    got = {k: tuple(v.shape) for k, v in state.items()}
    if got != shapes:
        wrong = sorted(set(got) ^ set(shapes)) or [k for k in shapes if got[k] != shapes[k]]
        raise ValueError(
            f"its tensors do not fit a {net} network reading {OBS_SIZE} observation entries and "
            f"{NUM_ACTION_FEATURES} action features (first misfit: {wrong[0]}; was it trained on "
            "this version?)"
        )


def ensemble_state(
    members: list[tuple[dict[str, Any], dict[str, Any]]],
    provenance: dict | None = None,
    symmetries: int = 1,
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """One DMC network whose ``Q`` is the mean of the ``members``' ``Q`` (``(info, state)``
    pairs, as :func:`read_dmc_model` gives them): an output ensemble written as one network of
    the same depth, its layers the members' side by side, whose player reads each position under
    ``symmetries`` colour labellings (the members' own are not carried). The first layer stacks
    the members' rows, each hidden layer is block-diagonal (a member's units read only its own),
    and the output weighs every member's last layer by ``1 / k``, so the play is exactly the
    average of the members' values, at the cost of their summed widths.

    The members must have the same depth and horizon (values in the same units) and agree on
    the table size (``players``: one size, or every size). ``ValueError`` names the first that
    does not."""
    if not members:
        raise ValueError("an ensemble needs at least one network")
    first_info = members[0][0]
    depth, horizon = len(first_info["architecture"]["net"]), value_horizon(first_info)
    for k, (info, state) in enumerate(members):
        check_state(info, state)
        net = info["architecture"]["net"]
        if len(net) != depth:
            raise ValueError(f"member {k} has {len(net)} layers, member 0 {depth}: same depth only")
        if value_horizon(info) != horizon:
            raise ValueError(
                f"member {k} values horizon {value_horizon(info)!r}, member 0 {horizon!r}: "
                "values in other units cannot be averaged"
            )
        if info.get("players") != first_info.get("players"):
            raise ValueError(
                f"member {k} plays players {info.get('players')}, member 0 "
                f"{first_info.get('players')}"
            )
    states = [{k: np.asarray(v, np.float64) for k, v in state.items()} for _, state in members]
    count = len(states)

    def stacked(name: str) -> np.ndarray:
        return np.concatenate([s[name] for s in states])

    def block_diagonal(name: str) -> np.ndarray:
        blocks = [s[name] for s in states]
        out = np.zeros((sum(b.shape[0] for b in blocks), sum(b.shape[1] for b in blocks)))
        row = col = 0
        for b in blocks:
            out[row : row + b.shape[0], col : col + b.shape[1]] = b
            row, col = row + b.shape[0], col + b.shape[1]
        return out

    state = {
        "state_in.weight": stacked("state_in.weight"),
        "state_in.bias": stacked("state_in.bias"),
        "action_in.weight": stacked("action_in.weight"),
        "q.weight": np.concatenate([s["q.weight"] for s in states], axis=1) / count,
        "q.bias": np.mean([s["q.bias"] for s in states], axis=0),
    }
    for i in range(depth - 1):
        state[f"hidden.{i}.weight"] = block_diagonal(f"hidden.{i}.weight")
        state[f"hidden.{i}.bias"] = stacked(f"hidden.{i}.bias")
    net = [sum(info["architecture"]["net"][i] for info, _ in members) for i in range(depth)]
    info = dmc_info(net, first_info.get("players"), provenance, horizon, symmetries)
    play_symmetries(info)
    return info, {k: v.astype(np.float32) for k, v in state.items()}


def labelled_mean(
    pair_values: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray],
    observations: np.ndarray,
    rows: np.ndarray,
    actions: np.ndarray,
    symmetries: int,
) -> np.ndarray:
    """The mean of ``pair_values(observations, rows, actions)`` (one value per pair) over the
    first ``symmetries`` colour labellings of each row's colours in play
    (:func:`odin_env.symmetry.colour_relabellings`; 1: the position as it is)."""
    if symmetries == 1:
        return pair_values(observations, rows, actions)
    observations = np.asarray(observations, np.float32)
    colours = colours_in_play(observations)[rows]
    out = np.empty(len(rows), np.float32)
    for count in np.unique(colours):
        pairs = colours == count
        maps = colour_relabellings(int(count), symmetries)
        total = sum(
            pair_values(observations[:, obs], rows[pairs], action[actions[pairs]])
            for obs, action in zip(*maps)
        )
        out[pairs] = total / len(maps.obs)
    return out


class DMCAgent:
    """A DMC Q-network as an :class:`agents.base.Agent` and a batched agent: the legal action of
    highest ``Q`` (see the module docstring). Deterministic; numpy only.

    ``state``: the network's arrays (:data:`TENSORS`, numpy or anything ``np.asarray`` reads);
    ``info``: its ``model`` JSON (:func:`dmc_info`)."""

    def __init__(self, state: dict[str, Any], info: dict[str, Any], name: str = ALGO):
        state = {k: np.asarray(v, dtype=np.float32) for k, v in state.items()}
        check_state(info, state)
        self.name, self.info = name, info
        self.arrays = state
        """The network's arrays by name, as given (float32)."""
        net = info["architecture"]["net"]
        self.state_in = (state["state_in.weight"].T.copy(), state["state_in.bias"])
        # The action part of the first layer, once per action: rows of this table are added
        # to the observation part of each legal pair.
        self.action_table = ACTION_FEATURES @ state["action_in.weight"].T
        self.hidden = [
            (state[f"hidden.{i}.weight"].T.copy(), state[f"hidden.{i}.bias"])
            for i in range(len(net) - 1)
        ]
        self.q = (state["q.weight"][0].copy(), float(state["q.bias"][0]))
        self.symmetries = play_symmetries(info)

    @classmethod
    def load(cls, path: str | Path) -> DMCAgent:
        """The player of a DMC model file or checkpoint (:func:`read_dmc_model`)."""
        info, state = read_dmc_model(path)
        agent = cls(state, info)
        agent.path = Path(path)
        return agent

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Nothing to reset: the player is deterministic and keeps no state between games."""

    def pair_values(
        self, observations: np.ndarray, rows: np.ndarray, actions: np.ndarray
    ) -> np.ndarray:
        """``Q(observations[rows[k]], actions[k])`` for each pair ``k``: float32 ``(P,)``, the
        network's own (under the labelling given; :meth:`values` averages over several)."""
        w, b = self.state_in
        z = np.asarray(observations, np.float32) @ w + b
        z = np.maximum(z[rows] + self.action_table[actions], 0.0)
        for w, b in self.hidden:
            z = np.maximum(z @ w + b, 0.0)
        w, b = self.q
        return z @ w + b

    def values(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """``(n, 3634)`` float32: the value of each legal action of each row, ``-inf``
        elsewhere: ``Q``, or its mean over the model's colour labellings (the module
        docstring)."""
        rows, actions, q = self._legal_values(observations, action_masks)
        out = np.full((np.size(action_masks) // NUM_ACTIONS, NUM_ACTIONS), -np.inf, np.float32)
        out[rows, actions] = q
        return out

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One legal action per row: the highest ``Q`` (ties: the lowest index)."""
        return argmax_by_row(*self._legal_values(observations, action_masks))

    def _legal_values(
        self, observations: np.ndarray, action_masks: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(rows, actions, values)`` of every legal pair, in :func:`agents.base.legal_pairs`'
        order; ``ValueError`` for a Goat game, counts of observations and masks that differ,
        or a row with no legal action."""
        refuse_goat(action_masks, "a DMC model trained without the Goat")
        observations = np.reshape(observations, (-1, OBS_SIZE))
        masks = np.asarray(action_masks).reshape(-1, NUM_ACTIONS)
        if len(masks) != len(observations):
            raise ValueError(f"{len(observations)} observations but {len(masks)} masks")
        if not masks.any(1).all():
            raise ValueError("an action mask has no legal action: this agent is not the one to act")
        rows, actions = legal_pairs(masks)
        q = labelled_mean(self.pair_values, observations, rows, actions, self.symmetries)
        return rows, actions, q

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The action for one observation and its mask."""
        return int(self.act_batch(observation[None], action_mask[None])[0])


__all__ = [
    "ACTIVATION", "ALGO", "DMCAgent", "MAX_SYMMETRIES", "TENSORS", "check_state", "dmc_info",
    "ensemble_state", "labelled_mean", "model_algo", "play_symmetries", "read_dmc_model",
]  # fmt: skip
