"""The game's declared constants and settings: the action space, the phases, and
:class:`Config`, the one place the game settings are declared (every CLI flag and environment
argument for them comes from its fields and docstrings).

============  =============================================================
index         meaning
============  =============================================================
0 .. 3578     play combo ``combos.COMBO_CARDS[i]``
3579          pass (``PASS``)
3580 .. 3633  take card id ``a - 3580`` from the combo just beaten (``TAKE``)
3634 .. 6700  Goat games only: play ``combos.GOAT_COMBO_CARDS[a - 3634]`` (``GOAT_PLAY``)
6701          Goat games only: take the Goat (``GOAT_TAKE``)
============  =============================================================

A game without the Goat has the first 3,634 actions (``NUM_ACTIONS``), a game with it all 6,702
(``NUM_GOAT_ACTIONS``): the Goat's actions come after today's, so every index of a game without
the Goat means what it always meant (RULES G5).

:func:`check_action` is the one rule for what an action may be, at every layer.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np

from odin_env.cards import GOAT, NUM_CARDS, NUM_COLOURS
from odin_env.combos import (
    COMBO_BITS,
    COMBO_NUMBER,
    COMBO_SIZE,
    GOAT_COMBO_BITS,
    GOAT_COMBO_NUMBER,
    GOAT_COMBO_SIZE,
    NUM_COMBOS,
    NUM_GOAT_COMBOS,
)

PASS = NUM_COMBOS
TAKE = NUM_COMBOS + 1
NUM_ACTIONS = TAKE + NUM_CARDS
GOAT_PLAY = NUM_ACTIONS
"""The first action of a Goat game's plays that hold the Goat (G5)."""
GOAT_TAKE = GOAT_PLAY + NUM_GOAT_COMBOS
"""Taking the Goat from the combo just beaten (G5)."""
NUM_GOAT_ACTIONS = GOAT_TAKE + 1
PLAY_BITS: tuple[int, ...] = (*COMBO_BITS, *[0] * (GOAT_PLAY - PASS), *GOAT_COMBO_BITS, 0)
"""Per action (of a Goat game; a game without the Goat has the first 3,634): the card-set int a
play puts down, 0 for a pass or a take."""
_NO_PLAY = [0] * (GOAT_PLAY - PASS)
PLAY_SIZE: tuple[int, ...] = (*COMBO_SIZE.tolist(), *_NO_PLAY, *GOAT_COMBO_SIZE.tolist(), 0)
"""Per action, as :data:`PLAY_BITS`: the number of cards a play puts down (0: not a play)."""
PLAY_NUMBER: tuple[int, ...] = (*COMBO_NUMBER.tolist(), *_NO_PLAY, *GOAT_COMBO_NUMBER.tolist(), 0)
"""Per action, as :data:`PLAY_BITS`: a play's number (R5, G2; 0: not a play)."""

LEAD, FOLLOW, TAKING, OVER = 0, 1, 2, 3
PHASE_NAMES = ("lead", "follow", "take", "over")

MIN_PLAYERS, MAX_PLAYERS = 2, 6
FIRST_PLAYER_RULES = ("rotate", "winner", "random", "fixed")
EPISODES = ("game", "hand")
REWARDS = ("penalty", "win")
TWO_PLAYER_COLOURS = 4
MAX_THRESHOLD = 1000
"""The highest threshold: a game's length grows with it (about 25 actions a point), and one to
1,000 already takes some 25,000 actions."""


@dataclass(frozen=True)
class Config:
    """One game's settings. Every field is checked; a bad value raises ``ValueError``."""

    players: int = 4
    """Seats at the table, 2-6 (R2)."""
    threshold: int = 15
    """The game ends after a hand in which a total reaches or passes this (R14); 1-1000."""
    colours: int | None = None
    """Colours in play, 2-6 and at least ``players``; ``None``: 4 for 2 players, else 6 (R3)."""
    first_player: str = "rotate"
    """Who leads each hand's first trick: rotate, winner, random or fixed (R15)."""
    episode: str = "game"
    """``game``: play hands until the threshold; ``hand``: one hand is the whole episode."""
    reward: str = "penalty"
    """``penalty``: minus the cards left, paid at each hand's end; ``win``: at the episode's end
    1/w to each of the w players on the lowest total, 0 to the others (so a return is a win
    share)."""
    goat: bool = False
    """Play with the Grumpy Goat (Board Game Arena's variant, RULES G1-G5): one more card, of no
    colour and the number 0, dealt every hand, costing 5 when left in a hand."""
    seed: int | None = field(default=None, compare=False)
    """Default seed of a new game when none is given."""

    @property
    def num_actions(self) -> int:
        """The size of this game's action space: 3,634, or 6,702 with the Goat (G5)."""
        return NUM_GOAT_ACTIONS if self.goat else NUM_ACTIONS

    def __post_init__(self) -> None:
        if not isinstance(self.goat, (bool, np.bool_)):
            raise ValueError(f"goat must be true or false; got {self.goat!r}")
        object.__setattr__(self, "goat", bool(self.goat))
        _check_int("players", self.players, MIN_PLAYERS, MAX_PLAYERS)
        _check_int("threshold", self.threshold, 1, MAX_THRESHOLD)
        if self.colours is None:
            object.__setattr__(
                self, "colours", TWO_PLAYER_COLOURS if self.players == 2 else NUM_COLOURS
            )
        _check_int("colours", self.colours, max(2, self.players), NUM_COLOURS)
        for name, allowed in (
            ("first_player", FIRST_PLAYER_RULES),
            ("episode", EPISODES),
            ("reward", REWARDS),
        ):
            if getattr(self, name) not in allowed:
                raise ValueError(
                    f"{name} must be one of {', '.join(allowed)}; got {getattr(self, name)!r}"
                )


def refuse_goat(config: Config, what: str) -> None:
    """``ValueError`` (one line, naming the setting) when ``config`` plays with the Goat, which
    ``what`` does not support yet: never a silent wrong game."""
    if config.goat:
        raise ValueError(
            f"goat: {what} does not support the Goat yet (the rules engine, odin_env.rules.Game, "
            "plays it); use goat=False"
        )


def _check_int(name: str, value: object, low: int, high: int | None) -> None:
    allowed = f"{low}-{high}" if high is not None else f">= {low}"
    if name == "colours" and low > 2:
        allowed += f" (9 cards for each of the {low} players needs {low}+ colours)"
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"{name} must be an integer {allowed}; got {value!r}")
    if value < low or (high is not None and value > high):
        raise ValueError(f"{name} must be {allowed}; got {value}")


ACTION_RANGES = f"0-{NUM_COMBOS - 1} play, {PASS} pass, {TAKE}-{NUM_ACTIONS - 1} take"
GOAT_ACTION_RANGES = (
    f"{ACTION_RANGES}, {GOAT_PLAY}-{GOAT_TAKE - 1} play with the Goat, {GOAT_TAKE} take the Goat"
)


class ActionTypeError(TypeError, ValueError):
    """An action that is not an integer. A ``TypeError``, and a ``ValueError`` too so that code
    catching ``ValueError`` for every refused action keeps working."""


def is_take(action: int) -> bool:
    """Whether ``action`` takes a card (R10; G5: the Goat's take comes after its plays)."""
    return TAKE <= action < NUM_ACTIONS or action == GOAT_TAKE


def taken_card(action: int) -> int:
    """The card id a take action takes (the Goat's: 54)."""
    return GOAT if action == GOAT_TAKE else action - TAKE


def check_action(action: object, goat: bool = False) -> int:
    """The one rule for what an action may be, at every layer (engine, AEC env, wrappers).

    Returns ``action`` as a Python ``int`` when it is an integer (a Python ``int`` or a numpy
    integer; ``bool`` is not one) in ``0 .. NUM_ACTIONS - 1`` (``NUM_GOAT_ACTIONS - 1`` in a
    game with the Goat). Anything else raises :class:`ActionTypeError` (a ``TypeError``) when it
    is not an integer, ``ValueError`` when it is out of range; both messages name the action and
    the allowed range. Whether the action is legal in the position is a separate question
    (``Game.apply``).
    """
    most = NUM_GOAT_ACTIONS if goat else NUM_ACTIONS
    if type(action) is int and 0 <= action < most:  # the common case, first
        return action
    ranges = GOAT_ACTION_RANGES if goat else ACTION_RANGES
    if type(action) is not int:
        if isinstance(action, bool) or not isinstance(action, (int, np.integer)):
            raise ActionTypeError(
                f"illegal action {action!r}: not an integer; an action is an integer "
                f"0-{most - 1} ({ranges})"
            )
        action = int(action)
    if not 0 <= action < most:
        raise ValueError(
            f"illegal action {action}: out of range; an action is an integer "
            f"0-{most - 1} ({ranges})"
        )
    return action


def check_seed(seed: object) -> int | None:
    """``seed`` as an int, or ``None``; ``ValueError`` unless it is ``None`` or an integer
    ``>= 0`` (numpy's generators take no negative seed)."""
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be None or an integer >= 0; got {seed!r}")
    return int(seed)


def check_options(options: object, allowed: tuple[str, ...], where: str) -> dict:
    """``options`` of ``where``'s ``reset`` as a dict (``None`` is ``{}``); ``ValueError`` naming
    the allowed keys when it is not a dict or holds another key: an option that is not read
    must not pass silently."""
    names = ", ".join(repr(a) for a in allowed) or "none"
    if options is None:
        return {}
    if not isinstance(options, dict):
        raise ValueError(f"{where} options must be a dict (keys: {names}); got {options!r:.80}")
    unknown = sorted(map(repr, set(options) - set(allowed)))
    if unknown:
        raise ValueError(f"{where} options: unknown key {', '.join(unknown)}; allowed: {names}")
    return options


def game_config(config: Config | None, settings: dict[str, Any]) -> Config:
    """``config``, or a :class:`Config` of ``settings`` (its field names; ``num_players`` is
    taken as PettingZoo's name for ``players``); ``ValueError`` naming an unknown setting or a
    conflict. What the environments' constructors share."""
    settings = dict(settings)
    if "num_players" in settings:
        alias = settings.pop("num_players")
        if settings.get("players") is None:
            settings["players"] = alias
        elif settings["players"] != alias:
            raise ValueError(f"players={settings['players']} and num_players={alias} disagree")
    names = [f.name for f in fields(Config)]
    unknown = sorted(set(settings) - set(names))
    if unknown:
        raise ValueError(f"unknown game setting {unknown[0]!r}: allowed are {', '.join(names)}")
    if config is not None:
        if settings:
            raise ValueError(f"give a Config or settings, not both; got {sorted(settings)}")
        if not isinstance(config, Config):
            raise ValueError(f"config must be an odin_env.rules.Config; got {config!r}")
        return config
    return Config(**settings)


__all__ = [
    "ACTION_RANGES", "EPISODES", "FIRST_PLAYER_RULES", "FOLLOW", "GOAT_ACTION_RANGES",
    "GOAT_PLAY", "GOAT_TAKE", "LEAD", "MAX_PLAYERS", "MAX_THRESHOLD", "MIN_PLAYERS",
    "NUM_ACTIONS", "NUM_GOAT_ACTIONS", "OVER", "PLAY_BITS", "PLAY_NUMBER", "PLAY_SIZE", "PASS",
    "PHASE_NAMES", "REWARDS",
    "TAKE", "TAKING", "TWO_PLAYER_COLOURS", "ActionTypeError", "Config", "check_action",
    "check_options", "check_seed", "game_config", "is_take", "refuse_goat", "taken_card",
]  # fmt: skip
