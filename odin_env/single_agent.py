"""Odin as a Gymnasium environment for one learning seat (for single-agent RL such as PPO).

The other seats are played by opponents *inside* :meth:`SingleAgentEnv.step`: after the
learner's action the game runs on (opponents' choices and every forced decision, see
``Game.play_forced``) until the learner faces a real choice again or the episode ends. The
environment is built on :class:`odin_env.rules.Game` directly, not on the AEC env, for speed.

Spaces: the observation is the learner's ``float32[OBS_SIZE]`` vector of
:mod:`odin_env.observation` (seat-relative, so slot 0 is always the learner; 11 entries more in
a game with the Goat), bounded by ``Box(0, observation.high(config))``; the action space is the
shared ``Discrete(3634)`` (``Discrete(6702)`` with the Goat, RULES G5). Opponents that do not
play the Goat refuse a Goat game in one line at their first decision.
:meth:`SingleAgentEnv.action_masks` gives the legal-action mask for sb3-contrib's
``MaskablePPO``; ``info["action_mask"]`` carries the same mask, so a vectorised trainer need not
ask each subprocess for it separately.

Rewards: the learner receives **its own** reward: the sum of what the game paid its seat over
everything that happened since its previous action, its own action included; this covers hands
ended by an opponent and the end of the episode. (PettingZoo's SB3 tutorial wrapper returns the
next player's observation with the previous player's reward; this environment does not.)
``reward="penalty"``: minus the cards left at each hand's end; ``reward="win"``: the learner's
win share at the episode's end.

Opponents (``opponents``), agent objects, never names (this package imports no agents):

- ``None`` (default): every other seat plays uniformly at random (drawn from the env's own
  generator, so ``reset(seed=...)`` fixes them too);
- one :class:`Policy` (anything with ``name`` and ``act(observation, action_mask)``, such as
  ``agents.make("greedy")``): it plays every other seat;
- a sequence of ``players - 1`` policies: they play the other seats in seat order;
- an :class:`OpponentDraw`: a callable ``draw(rng, seat) -> (kind, table)`` called once per
  episode with the env's generator and the learner's seat, returning a name for the episode's
  opponents and one policy per seat (``None`` at the learner's). Training's opponent pool is one
  (``odin_lab.training.pool.OpponentPool``: a kind drawn per episode, frozen snapshots of the
  learner).

Each policy with ``reset(seat, seed)`` is reset before each episode with a seed drawn from the
env's generator.

Seat: drawn per episode (``seat=None``, default: seat research needs every seat) or fixed.
``reset(options={"game": game, "seat": s})`` starts from a built position (``Game.from_position``)
with the learner in seat ``s``; opponents and forced decisions run until the learner must choose.
Another key, or a seat that is not an integer seat (``1.7``, ``True``), is a ``ValueError``.

Episode end: ``terminated`` is true when the game (or the hand, with ``episode="hand"``) is
over; there is no truncation. The final ``info`` holds ``opponent`` (the kind), ``seat``,
``win`` (the learner's win share, 0..1), ``penalty`` (its penalty total) and ``hands``.

Illegal actions: ``illegal="raise"`` raises ``ValueError`` and leaves the state unchanged;
``illegal="terminate"`` (default, so that Gymnasium's env checker, which samples actions
without a mask, can step it) ends the episode with reward ``ILLEGAL_REWARD[reward]`` and
``info["illegal_action"]``.
"""

from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from odin_env.observation import box, observe
from odin_env.render import NO_RENDER_MODE, describe
from odin_env.rules import Config, Game
from odin_env.spec import check_action, check_options, check_seed, game_config

ILLEGAL_MODES = ("terminate", "raise")
ILLEGAL_REWARD = {"penalty": -9.0, "win": -1.0}
"""What an illegal action pays with ``illegal="terminate"``: the worst a hand can cost."""


class RenderModeError(TypeError, ValueError):
    """An unsupported ``render_mode``. Also a ``TypeError``: SB3's ``make_vec_env`` first asks
    for ``render_mode="rgb_array"`` and falls back to the env's default on ``TypeError``."""


class Policy(Protocol):
    """What an opponent must offer: the ``agents.base.Agent`` protocol."""

    name: str

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...


class OpponentDraw(Protocol):
    """Draws one episode's opponents: ``(kind, table)`` with ``table[seat] is None``."""

    def __call__(
        self, rng: np.random.Generator, seat: int
    ) -> tuple[str, Sequence[Policy | None]]: ...


RANDOM = "random"
"""The kind reported in ``info["opponent"]`` for the default uniform random opponents."""


def _check_seat(seat: object, players: int, name: str) -> None:
    """``ValueError`` unless ``seat`` is ``None`` or an integer seat ``0 .. players - 1`` (not a
    bool, not a float: 1.7 is no seat)."""
    if seat is not None and (
        isinstance(seat, bool) or not isinstance(seat, (int, np.integer)) or not 0 <= seat < players
    ):
        raise ValueError(
            f"{name} must be None (drawn per episode) or 0-{players - 1}; got {seat!r:.80}"
        )


class SingleAgentEnv(gym.Env):
    """One learning seat against opponents that act inside ``step``; see the module docstring."""

    # render_fps: a text picture per decision; Gymnasium's checkers ask for a rate.
    metadata = {"render_modes": ["ansi", "human"], "render_fps": 1}

    def __init__(
        self,
        config: Config | None = None,
        *,
        opponents: Policy | Sequence[Policy] | OpponentDraw | None = None,
        seat: int | None = None,
        illegal: str = "terminate",
        render_mode: str | None = None,
        **settings: Any,
    ):
        super().__init__()
        self.config = config = game_config(config, settings)
        players = config.players
        self.opponents = opponents
        if not _is_draw(opponents) and opponents is not None and not _is_policy(opponents):
            opponents = list(opponents) if isinstance(opponents, Sequence) else []
            if len(opponents) != players - 1 or not all(map(_is_policy, opponents)):
                raise ValueError(
                    f"opponents must be None, one policy (with act), {players - 1} policies for "
                    f"the other seats, or a draw(rng, seat) callable; got {self.opponents!r}"
                )
            self.opponents = opponents
        _check_seat(seat, players, "seat")
        if illegal not in ILLEGAL_MODES:
            raise ValueError(f"illegal must be one of {', '.join(ILLEGAL_MODES)}; got {illegal!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise RenderModeError(f"render_mode must be None, ansi or human; got {render_mode!r}")
        self.fixed_seat = None if seat is None else int(seat)
        self.illegal = illegal
        self.render_mode = render_mode
        self.observation_space = box(config)
        self.action_space = spaces.Discrete(config.num_actions)
        self.game: Game | None = None
        self.seat = 0
        self.kind = RANDOM
        self._players: list[Policy | None] = []
        self._pending = 0.0
        self._ended = True

    # -- opponents -------------------------------------------------------------------------------

    def _draw_opponents(self, rng: np.random.Generator) -> None:
        n, seat, opponents = self.config.players, self.seat, self.opponents
        if opponents is None:
            self.kind, table = RANDOM, [None] * n
        elif _is_draw(opponents):
            self.kind, table = opponents(rng, seat)
            table = list(table)
            if len(table) != n or table[seat] is not None:
                raise ValueError(
                    f"the opponent draw must return {n} seats with None at the learner's seat "
                    f"{seat}; got {table!r}"
                )
        else:
            others = [opponents] * (n - 1) if _is_policy(opponents) else list(opponents)
            table = others[:seat] + [None] + others[seat:]
            self.kind = "+".join(dict.fromkeys(p.name for p in others))
        for s, policy in enumerate(table):
            if policy is not None and hasattr(policy, "reset"):
                policy.reset(s, int(rng.integers(2**63)))
        self._players = table

    # -- the Gymnasium API -----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=check_seed(seed))
        rng = self.np_random
        options = check_options(options, ("game", "seat"), "reset")
        _check_seat(options.get("seat"), self.config.players, "reset options: seat")
        while True:
            n = self.config.players
            seat = options.get("seat", self.fixed_seat)
            self.seat = int(rng.integers(n)) if seat is None else int(seat)
            self._draw_opponents(rng)
            given = options.get("game")
            if given is not None and not isinstance(given, Game):
                raise ValueError(
                    f"reset options: game must be an odin_env.rules.Game; got {given!r}"
                )
            # A copy: the caller's position stays as it was, so it can start many episodes.
            self.game = (
                copy.deepcopy(given)
                if given is not None
                else Game(self.config, seed=int(rng.integers(2**63)))
            )
            if self.game.config != self.config or not 0 <= self.seat < n:
                raise ValueError(
                    f"reset options: the game must use this env's settings, seat 0-{n - 1}"
                )
            self._pending = 0.0
            self._ended = False
            self._run_opponents()
            if "game" in options and self.game.is_over:
                raise ValueError("reset options: the game ended before the learner's first choice")
            # An opponent can end a one-hand episode before the learner's first choice (a
            # whole-hand lead); such a deal teaches nothing, so deal again.
            if not self.game.is_over:
                break
        if self.render_mode == "human":
            self.render()
        return observe(self.game, self.seat), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        game = self.game
        if game is None or self._ended:
            raise RuntimeError("step() called before reset() or after the episode ended")
        action = check_action(action, self.config.goat)  # in the action space, in every mode
        if action not in game.legal:
            if self.illegal == "raise":
                game.apply(action)  # raises the engine's ValueError naming the problem
            self._ended = True
            info = self._info()
            info["illegal_action"] = int(action)
            info.update(self._outcome())
            return observe(game, self.seat), ILLEGAL_REWARD[self.config.reward], True, False, info
        self._collect(game.apply(int(action)))
        self._run_opponents()
        reward, self._pending = self._pending, 0.0
        info = self._info()
        if game.is_over:
            self._ended = True
            info.update(self._outcome())
        if self.render_mode == "human":
            self.render()
        return observe(game, self.seat), reward, game.is_over, False, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as a bool mask (all false once the episode is over)."""
        if self.game is None or self._ended:
            return np.zeros(self.config.num_actions, dtype=bool)
        return self.game.legal_mask().view(np.bool_)

    def render(self) -> str | None:
        """The learner's view as text (``"ansi"``) or printed (``"human"``, also after each
        ``reset`` and ``step``). Without a render mode it warns in one line what to pass and
        returns ``None``."""
        if self.render_mode is None:
            warnings.warn(NO_RENDER_MODE, UserWarning, stacklevel=2)
            return None
        if self.game is None:
            return None
        text = describe(self.game, self.seat)
        if self.render_mode == "human":
            print(text, end="\n\n")
            return None
        return text

    # -- internals ---------------------------------------------------------------------------------

    def _collect(self, paid: list[float] | None) -> None:
        if paid is not None:
            self._pending += paid[self.seat]

    def _run_opponents(self) -> None:
        """Play forced decisions and opponents' choices until the learner must choose."""
        game, seat, players = self.game, self.seat, self._players
        self._collect(game.play_forced())
        while not game.is_over and game.current != seat:
            current = game.current
            player = players[current]
            if player is None:  # the default opponents: uniform over the legal actions
                action = game.legal[int(self.np_random.integers(len(game.legal)))]
            else:
                action = player.act(observe(game, current), game.legal_mask())
            self._collect(game.apply(action))
            self._collect(game.play_forced())

    def _info(self) -> dict[str, Any]:
        return {"action_mask": self.action_masks(), "seat": self.seat, "opponent": self.kind}

    def _outcome(self) -> dict[str, Any]:
        game = self.game
        winners = game.winners
        return {
            "win": 1.0 / len(winners) if self.seat in winners else 0.0,
            "penalty": game.totals[self.seat],
            "hands": len(game.history),
        }


def _is_policy(obj: object) -> bool:
    return callable(getattr(obj, "act", None))


def _is_draw(obj: object) -> bool:
    return callable(obj) and not _is_policy(obj)


__all__ = [
    "ILLEGAL_MODES", "ILLEGAL_REWARD", "OpponentDraw", "Policy", "SingleAgentEnv",
]  # fmt: skip
