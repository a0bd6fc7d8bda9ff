"""The linear feature player: each legal action scored by a weighted sum of features that the
observation alone gives, the argmax played (ties: the lowest action index).

The features (:data:`FEATURES`, each documented there) describe what an action does to the
acting seat's hand (cards and combos left, the largest combo kept, the take that follows a
beating play), what it plays (size, high values, how far it beats the table), and how it meets
the table (opponents near going out, the owner of the trick, the penalty standing). A feature
that is equal for every action of a decision cannot change its argmax, so the table's state
enters only multiplied by something that differs between actions ("cards left while an opponent
is down to 1-2 cards"). Everything is read from the observation through
:func:`odin_env.observation.views` and the mask: the acting seat's hand, the table, the combo it
may take from, the discard pile, the cards each seat is publicly known to hold, hand sizes and
penalty totals. Nothing hidden at a real table.

A model file is a lab model file (docs/model-format.md) whose ``model`` JSON says
``"algo": "linear"`` and lists its ``architecture.features`` by name (any subset of
:data:`FEATURES`, in any order), with the tensor ``policy/weights`` holding one finite weight per
named feature; features it does not name weigh 0. ``train.py --algo cem`` fits such files
(:mod:`odin_lab.training.cem`). Numpy only at play time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from agents.base import argmax_by_row, legal_pairs, refuse_goat
from agents.batched_linear import FEATURE_ORDER, batch_features
from agents.hand import VALUE_LINE, VALUE_OF, cover
from agents.model_file import is_zip, model_path, read_parts
from odin_env.cards import NUM_CARDS, NUM_COLOURS, NUM_VALUES, VALUE_BITS
from odin_env.combos import COMBO_BITS, COMBO_NUMBER, COMBO_SIZE
from odin_env.observation import NUM_PLANES, OBS_SIZE, PLANES_SIZE, hand_sizes, players_of, views
from odin_env.rules import NUM_ACTIONS, PASS, TAKE

ALGO = "linear"
"""The ``algo`` entry of a linear model's ``model`` JSON, and its agent spec's kind."""
BUNDLED_LINEAR = Path(__file__).resolve().parent / "models" / "linear_4p.safetensors"
"""The bundled linear player (``agents.make("linear")``): fitted by ``train.py --algo cem`` at 4
players; a held-out opponent for the lab's networks (its model card is beside it)."""

FEATURES: dict[str, str] = {
    "out": "1 if the action empties the hand (goes out)",
    "cards_left": "cards in hand after the action and the take it leads to, / 9",
    "combos_left": "fewest combos that hand splits into (plays still needed to go out), / 9",
    "cards_left_danger": "cards_left, when an opponent holds 1-2 cards (else 0)",
    "combos_left_danger": "combos_left, when an opponent holds 1-2 cards (else 0)",
    "cards_left_standing": "cards_left times the seat's own penalty total / threshold",
    "cards_left_ahead": "cards_left times how far the seat leads: the lowest other total minus "
    "its own, / threshold (negative when behind)",
    "largest_left": "the most cards of that hand sharing a colour or a value (its largest "
    "combo), / 9",
    "singles_left": "cards of that hand sharing neither colour nor value with another (playable "
    "only alone), / 9",
    "shed": "cards played, / 9 (0 for a pass or a take)",
    "top_value": "highest value of the combo played, / 9",
    "high_shed": "cards of value 7-9 played, / 9",
    "lead_single": "1 for leading a single card (leading the whole hand is out)",
    "pass": "1 for a pass",
    "pass_owner_near": "a pass on a trick whose owner holds 1-2 cards (it leads next)",
    "pass_table_size": "a pass, times the size of the combo on the table / 9",
    "pass_last": "a pass that ends the trick (every other seat has passed since the last play)",
    "margin": "how far the play's number beats the table's: the difference of their leading "
    "values / 9 at the same size, 0 when it has one card more",
    "size_up": "1 for a play of one card more than the table",
    "exposed_plus": "opponents holding exactly one card more than the play (they could go out "
    "over it), / (players - 1)",
    "exposed_same": "opponents of 1-2 cards holding as many cards as the play, times the share "
    "of values above its leading value, / (players - 1)",
    "higher_out": "cards the seat cannot see in its hand, the table or the discard pile whose "
    "value tops the play's leading value, / 54 (how many could beat it)",
    "breaks_finisher": "a play that uses cards of the hand's largest combo (its fullest colour "
    "or value) without going out",
    "links_broken": "for each card played, the cards of its colour or value left in hand, / 16",
    "take_value": "value of the card taken (the best take after a beating play), / 9",
    "take_links": "cards of the taken card's colour or value in hand, / 13",
}
"""Every feature by name, with what it measures (the model file lists the names it uses)."""
NAMES = tuple(FEATURES)
if NAMES != FEATURE_ORDER:  # the numba kernel writes its columns in this order
    raise ImportError("agents.linear.FEATURES and agents.batched_linear.FEATURE_ORDER differ")
NUM_FEATURES = len(NAMES)
_INDEX = {name: i for i, name in enumerate(NAMES)}
_TENSOR = "weights"
"""The one tensor of a linear model, ``policy/weights``: one weight per named feature."""

_SIZE = COMBO_SIZE.tolist()
_NUMBER = COMBO_NUMBER.tolist()
_TOP = [n // 10 ** (s - 1) for n, s in zip(_NUMBER, _SIZE)]  # leading value (R5)
_VALUES = [VALUE_LINE[v] for v in range(NUM_VALUES)]
_COLOURS = [VALUE_BITS << (c * NUM_VALUES) for c in range(NUM_COLOURS)]
_LINES = _COLOURS + _VALUES
_S = _INDEX


def _card_sets(obs: np.ndarray) -> list[list[int]]:
    """The card-set ints of each row's planes (hand, table, take, discard, known[0..5])."""
    planes = obs[:, :PLANES_SIZE].reshape(len(obs), NUM_PLANES, NUM_CARDS) > 0.5
    packed = np.zeros((len(obs), NUM_PLANES, 8), dtype=np.uint8)
    packed[:, :, :7] = np.packbits(planes, axis=2, bitorder="little")
    return packed.view("<u8")[..., 0].tolist()


def _links(hand: int, card: int) -> int:
    """Cards of ``hand`` sharing ``card``'s colour or value (``card`` itself not counted)."""
    line = _COLOURS[card // NUM_VALUES] | _VALUES[card % NUM_VALUES]
    return (hand & line & ~(1 << card)).bit_count()


def _best_take(hand: int, cards: int) -> int:
    """The card of ``cards`` the player is assumed to take into ``hand`` after beating: fewest
    combos, then most links, then the highest value (the shaper's rule)."""
    best, pick = None, -1
    bits = cards
    while bits:
        low = bits & -bits
        c = low.bit_length() - 1
        bits ^= low
        key = (cover(hand | low), -_links(hand, c), -VALUE_OF[c])
        if best is None or key < best:
            best, pick = key, c
    return pick


def _largest_line(hand: int) -> int:
    """The largest combo ``hand`` holds: its fullest colour or value line (first found on a
    tie), as a card set."""
    best = 0
    for line in _LINES:
        part = hand & line
        if part.bit_count() > best.bit_count():
            best = part
    return best


def _hand_features(x: np.ndarray, after: int) -> None:
    """The features of the hand left after an action, written into ``x``."""
    cards = after.bit_count()
    x[_S["cards_left"]] = cards / 9.0
    if not cards:
        x[_S["out"]] = 1.0
        return
    x[_S["combos_left"]] = cover(after) / 9.0
    x[_S["largest_left"]] = _largest_line(after).bit_count() / 9.0
    alone, bits = 0, after
    while bits:
        low = bits & -bits
        alone += _links(after, low.bit_length() - 1) == 0
        bits ^= low
    x[_S["singles_left"]] = alone / 9.0


def row_features(obs_row: dict[str, Any], sets: list[int], actions: np.ndarray) -> np.ndarray:
    """``(len(actions), NUM_FEATURES)`` float64: the features of each legal action of one
    decision. ``obs_row``: the row's :func:`odin_env.observation.views`; ``sets``: its card
    sets (:func:`_card_sets`)."""
    hand, table, take_from, discard, *known = sets
    players = players_of(obs_row)
    sizes = hand_sizes(obs_row)[:players].tolist()
    penalty = obs_row["penalty"][:players].tolist()
    phase = int(np.argmax(obs_row["phase"]))
    owner_row = obs_row["table_owner"][:players]
    owner = int(np.argmax(owner_row)) if owner_row.any() else -1
    passes = round(float(obs_row["passes"][0]) * (players - 1))
    deck = 0
    for c, on in enumerate(obs_row["colours"].tolist()):
        deck |= _COLOURS[c] if on else 0
    others = deck & ~(hand | table | take_from | discard)  # cards this seat cannot place itself
    higher = [0] * (NUM_VALUES + 1)  # higher[t]: cards in `others` of value above t
    for v in range(NUM_VALUES - 1, -1, -1):
        higher[v] = higher[v + 1] + (others & _VALUES[v]).bit_count()
    opp = sizes[1:]
    danger = 1.0 if min(opp) <= 2 else 0.0
    ahead = min(penalty[1:]) - penalty[0]
    finisher = _largest_line(hand) if phase != 2 else 0
    out = np.zeros((len(actions), NUM_FEATURES))
    for i, a in enumerate(actions.tolist()):
        x = out[i]
        if a >= TAKE:  # the take phase: `hand` is what the play left
            c = a - TAKE
            after = hand | 1 << c
            x[_S["take_value"]] = VALUE_OF[c] / 9.0
            x[_S["take_links"]] = _links(hand, c) / 13.0
        elif a == PASS:
            after = hand
            x[_S["pass"]] = 1.0
            if owner > 0 and sizes[owner] <= 2:
                x[_S["pass_owner_near"]] = 1.0
            x[_S["pass_table_size"]] = table.bit_count() / 9.0
            x[_S["pass_last"]] = 1.0 if passes == players - 2 else 0.0
        else:
            bits, size, top = COMBO_BITS[a], _SIZE[a], _TOP[a]
            left = hand & ~bits
            after = left
            if table and left:  # a beating play: one card of the table comes back
                c = _best_take(left, table)
                after = left | 1 << c
                x[_S["take_value"]] = VALUE_OF[c] / 9.0
                x[_S["take_links"]] = _links(left, c) / 13.0
            x[_S["shed"]] = size / 9.0
            x[_S["top_value"]] = top / 9.0
            x[_S["high_shed"]] = (bits & (_VALUES[6] | _VALUES[7] | _VALUES[8])).bit_count() / 9.0
            x[_S["lead_single"]] = 1.0 if phase == 0 and left else 0.0
            if table:
                t_size = table.bit_count()
                if size == t_size:
                    x[_S["margin"]] = (top - _top_of(table)) / 9.0
                else:
                    x[_S["size_up"]] = 1.0
            plus = sum(1 for s in opp if s == size + 1)
            same = sum(1 for s in opp if s == size and s <= 2)
            x[_S["exposed_plus"]] = plus / (players - 1)
            x[_S["exposed_same"]] = same * (9 - top) / 8.0 / (players - 1)
            x[_S["higher_out"]] = higher[top] / 54.0
            if left and bits & finisher:
                x[_S["breaks_finisher"]] = 1.0
            links = 0
            rest = bits
            while rest:
                low = rest & -rest
                links += _links(left, low.bit_length() - 1)
                rest ^= low
            x[_S["links_broken"]] = links / 16.0
        _hand_features(x, after)
        cards = x[_S["cards_left"]]
        x[_S["cards_left_danger"]] = cards * danger
        x[_S["combos_left_danger"]] = x[_S["combos_left"]] * danger
        x[_S["cards_left_standing"]] = cards * penalty[0]
        x[_S["cards_left_ahead"]] = cards * ahead
    return out


def _top_of(bits: int) -> int:
    """The leading value of the combo ``bits`` (its number's first digit, R5)."""
    return max(VALUE_OF[c] for c in range(NUM_CARDS) if bits >> c & 1)


def features(obs: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(rows, actions, X)`` of a batch: every legal (row, action) pair, rows ascending and each
    row's actions ascending, and ``X[k]`` the :data:`FEATURES` of pair ``k``
    (``(P, NUM_FEATURES)`` float64), computed in one numba call
    (:func:`agents.batched_linear.batch_features`; :func:`row_features` is the same in Python).
    ``ValueError`` for a row without a legal action."""
    refuse_goat(mask, "the linear feature players")
    obs = np.asarray(obs, dtype=np.float32).reshape(-1, OBS_SIZE)
    mask = np.asarray(mask).reshape(-1, NUM_ACTIONS).astype(bool, copy=False)
    if len(mask) != len(obs):
        raise ValueError(f"{len(obs)} observations but {len(mask)} masks")
    if not mask.any(1).all():
        raise ValueError("an action mask has no legal action: this agent is not the one to act")
    rows, actions = legal_pairs(mask)
    return rows, actions, batch_features(obs, rows, actions)


def python_features(obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """:func:`features`' ``X`` computed row by row in Python (:func:`row_features`): the
    reference the numba kernel is tested against."""
    obs = np.asarray(obs, dtype=np.float32).reshape(-1, OBS_SIZE)
    mask = np.asarray(mask).reshape(-1, NUM_ACTIONS).astype(bool, copy=False)
    rows, actions = legal_pairs(mask)
    starts = np.r_[0, np.cumsum(mask.sum(1))]
    sets = _card_sets(obs)
    v = views(obs)
    out = np.zeros((len(actions), NUM_FEATURES))
    for r in range(len(obs)):
        part = slice(starts[r], starts[r + 1])
        out[part] = row_features({k: a[r] for k, a in v.items()}, sets[r], actions[part])
    return out


def scores(x: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """``x @ weights`` for the pairs' features ``x`` ``(P, F)`` and ``weights`` ``(F,)`` (or one
    row per pair, ``(P, F)``), summed feature by feature in a fixed order: a pair's score is the
    same bits whatever else is in the batch (a matrix product's rounding depends on the batch,
    which made a batched choice differ from the single one on near-ties)."""
    total = np.zeros(len(x))
    for f in range(x.shape[1]):
        total += x[:, f] * weights[..., f]
    return total


def check_weights(names: Any, weights: Any) -> np.ndarray:
    """The full weight vector (:data:`NAMES` order, 0 where not named) of a model that names
    ``names`` with ``weights``; ``ValueError`` (one line) for an unknown or repeated name, a
    count that does not match, or a weight that is not a finite number."""
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names) or not names:
        raise ValueError(f"its feature names must be a non-empty list of names; got {names!r}")
    unknown = [n for n in names if n not in _INDEX]
    if unknown:
        raise ValueError(f"unknown feature {unknown[0]!r}; the features are {', '.join(NAMES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"a feature is named twice in {names}")
    array = np.asarray(weights)
    if array.shape != (len(names),):
        raise ValueError(
            f"its weights have shape {array.shape}; {len(names)} features need ({len(names)},)"
        )
    if not np.issubdtype(array.dtype, np.floating) or not np.isfinite(array).all():
        raise ValueError("its weights are not all finite floating-point numbers")
    full = np.zeros(NUM_FEATURES)
    full[[_INDEX[n] for n in names]] = array
    return full


def linear_info(names: list[str], players: int | None, provenance: dict | None = None) -> dict:
    """The ``model`` JSON of a linear model file (docs/model-format.md)."""
    return {
        "algo": ALGO,
        "architecture": {"features": list(names)},
        "observation_size": OBS_SIZE,
        "num_actions": NUM_ACTIONS,
        "players": players,
        "provenance": provenance or {},
    }


def linear_state(names: list[str], weights: Any) -> dict[str, np.ndarray]:
    """The ``policy/`` tensors of a linear model file weighing ``names`` (checked as
    :func:`check_weights` does); its ``model`` JSON is :func:`linear_info` of the same names."""
    check_weights(list(names), np.asarray(weights, dtype=np.float32))
    return {_TENSOR: np.asarray(weights, dtype=np.float32)}


def read_linear(path: str | Path) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """``(info, {"weights": array})`` of a linear model file or checkpoint, checked (names
    known, one finite weight each). Nothing is unpickled. ``FileNotFoundError`` for a missing
    file; ``ValueError`` naming the file and the problem otherwise."""
    path = model_path(path, "linear")
    if is_zip(path):
        raise ValueError(
            f"cannot load linear model {path}: it is a .zip, which loading would unpickle; refused"
        )
    info, state = read_parts(path, "linear")
    algo = info.get("algo", "ppo") if isinstance(info, dict) else None
    if algo != ALGO:
        raise ValueError(
            f"cannot load linear model {path}: its header names algo {algo!r}"
            + (f" (play it as {algo}:PATH)" if isinstance(algo, str) else "")
        )
    if set(state) != {_TENSOR}:
        raise ValueError(
            f"incompatible linear model {path}: it holds tensors {sorted(state)}, a linear model "
            f"holds policy/{_TENSOR} alone"
        )
    arch = info.get("architecture")
    try:
        check_weights(arch.get("features") if isinstance(arch, dict) else None, state[_TENSOR])
    except ValueError as error:
        raise ValueError(f"incompatible linear model {path}: {error}") from None
    return info, state


class LinearAgent:
    """A linear feature player as an :class:`agents.base.Agent` and a batched agent (see the
    module docstring). Deterministic; numpy only; keeps no state between decisions.

    ``names``: the features it weighs; ``weights``: one finite weight each."""

    def __init__(self, names: list[str], weights: Any, name: str = ALGO):
        self.full = check_weights(list(names), np.asarray(weights, dtype=np.float64))
        self.names, self.weights, self.name = list(names), np.asarray(weights, np.float32), name

    @classmethod
    def load(cls, path: str | Path, name: str = ALGO) -> LinearAgent:
        """The player of a linear model file or checkpoint (:func:`read_linear`)."""
        info, state = read_linear(path)
        agent = cls(info["architecture"]["features"], state[_TENSOR], name)
        agent.path = Path(path)
        return agent

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Nothing to reset: the player is deterministic."""

    def act_batch(self, observations: np.ndarray, action_masks: np.ndarray) -> np.ndarray:
        """One legal action per row: the highest score (ties: the lowest index)."""
        rows, actions, x = features(observations, action_masks)
        return argmax_by_row(rows, actions, scores(x, self.full))

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The action for one observation and its mask."""
        return int(self.act_batch(observation[None], action_mask[None])[0])


__all__ = [
    "ALGO", "BUNDLED_LINEAR", "FEATURES", "NAMES", "NUM_FEATURES", "LinearAgent",
    "check_weights", "features", "linear_info", "linear_state", "python_features", "read_linear",
    "row_features", "scores",
]  # fmt: skip
