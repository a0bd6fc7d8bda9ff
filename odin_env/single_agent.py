"""Odin as a Gymnasium environment for one learning seat (for single-agent RL such as PPO).

The other seats are played by opponents *inside* :meth:`SingleAgentEnv.step`: after the
learner's action the game runs on (opponents' choices and every forced decision, see
``Game.play_forced``) until the learner faces a real choice again or the episode ends. The
environment is built on :class:`odin_env.rules.Game` directly, not on the AEC env, for speed.

Spaces: the observation is the learner's ``float32[OBS_SIZE]`` vector of
:mod:`odin_env.observation` (seat-relative, so slot 0 is always the learner); the action space is
the shared ``Discrete(3634)``. :meth:`SingleAgentEnv.action_masks` gives the legal-action mask
for sb3-contrib's ``MaskablePPO``; ``info["action_mask"]`` carries the same mask, so a vectorised
trainer need not ask each subprocess for it separately.

Rewards: the learner receives **its own** reward: the sum of what the game paid its seat over
everything that happened since its previous action, its own action included; this covers hands
ended by an opponent and the end of the episode. (PettingZoo's SB3 tutorial wrapper returns the
next player's observation with the previous player's reward; this environment does not.)
``reward="penalty"``: minus the cards left at each hand's end; ``reward="win"``: the learner's
win share at the episode's end.

Opponents: ``opponents`` is a pool of kinds; one kind is drawn per episode and plays every other
seat. A kind is an agent spec of :func:`agents.make` (``random``, a heuristic name,
``ppo:PATH``) or ``self``: frozen snapshots of the learner, added with
:meth:`SingleAgentEnv.add_snapshot` (a bounded pool of the most recent ones; each opponent seat
draws one). While no snapshot exists, ``self`` is replaced by another kind of the pool (or by
``random`` when the pool has no other kind).

Seat: drawn per episode (``seat=None``, default: seat research needs every seat) or fixed.
``reset(options={"game": game, "seat": s})`` starts from a built position (``Game.from_position``)
with the learner in seat ``s``; opponents and forced decisions run until the learner must choose.

Episode end: ``terminated`` is true when the game (or the hand, with ``episode="hand"``) is
over; there is no truncation. The final ``info`` holds ``opponent`` (the kind), ``seat``,
``win`` (the learner's win share, 0..1), ``penalty`` (its penalty total) and ``hands``.

Illegal actions: ``illegal="raise"`` raises ``ValueError`` and leaves the state unchanged;
``illegal="terminate"`` (default, so that Gymnasium's env checker, which samples actions
without a mask, can step it) ends the episode with reward ``ILLEGAL_REWARD[reward]`` and
``info["illegal_action"]``.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from odin_env.observation import OBS_SIZE, observe
from odin_env.render import describe
from odin_env.rules import NUM_ACTIONS, Config, Game

SELF = "self"
ILLEGAL_MODES = ("terminate", "raise")
ILLEGAL_REWARD = {"penalty": -9.0, "win": -1.0}
"""What an illegal action pays with ``illegal="terminate"``: the worst a hand can cost."""
DEFAULT_MAX_SNAPSHOTS = 5


class Policy(Protocol):
    """What an opponent must offer: the :class:`agents.base.Agent` protocol."""

    name: str

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int: ...


class SingleAgentEnv(gym.Env):
    """One learning seat against opponents that act inside ``step``; see the module docstring."""

    metadata = {"render_modes": ["ansi"]}

    def __init__(
        self,
        players: int = 4,
        threshold: int = 15,
        colours: int | None = None,
        first_player: str = "rotate",
        episode: str = "game",
        reward: str = "penalty",
        opponents: Sequence[str] = ("random",),
        seat: int | None = None,
        max_snapshots: int = DEFAULT_MAX_SNAPSHOTS,
        illegal: str = "terminate",
        render_mode: str | None = None,
    ):
        super().__init__()
        self.config = Config(players, threshold, colours, first_player, episode, reward)
        if isinstance(opponents, str):
            opponents = [opponents]
        if not opponents:
            raise ValueError("opponents must name at least one kind (an agent spec or 'self')")
        self.opponents = [str(kind) for kind in opponents]
        for kind in self.opponents:
            if kind != SELF:
                check_spec(kind)
        if seat is not None and (
            isinstance(seat, bool)
            or not isinstance(seat, (int, np.integer))
            or not 0 <= seat < players
        ):
            raise ValueError(
                f"seat must be None (drawn per episode) or 0-{players - 1}; got {seat!r}"
            )
        if illegal not in ILLEGAL_MODES:
            raise ValueError(f"illegal must be one of {', '.join(ILLEGAL_MODES)}; got {illegal!r}")
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None or ansi; got {render_mode!r}")
        if max_snapshots < 1:
            raise ValueError(f"max_snapshots must be >= 1; got {max_snapshots}")
        self.fixed_seat = None if seat is None else int(seat)
        self.illegal = illegal
        self.render_mode = render_mode
        self.observation_space = spaces.Box(0.0, np.inf, (OBS_SIZE,), np.float32)
        self.action_space = spaces.Discrete(NUM_ACTIONS)
        self.snapshots: deque[Policy] = deque(maxlen=max_snapshots)
        self._agents: dict[tuple[str, int], Policy] = {}
        self.game: Game | None = None
        self.seat = 0
        self.kind = self.opponents[0]
        self._players: list[Policy | None] = []
        self._pending = 0.0
        self._ended = True

    # -- opponents -------------------------------------------------------------------------------

    def add_snapshot(self, policy: Policy) -> None:
        """Add a frozen learner snapshot to the ``self`` pool (the oldest drops out when full)."""
        self.snapshots.append(policy)

    def set_snapshots(self, policies: Sequence[Policy]) -> None:
        """Replace the ``self`` pool (the most recent ``max_snapshots`` are kept)."""
        self.snapshots.clear()
        self.snapshots.extend(policies)

    def _draw_opponents(self, rng: np.random.Generator) -> None:
        kinds = self.opponents
        if not self.snapshots and SELF in kinds:
            kinds = [k for k in kinds if k != SELF] or ["random"]
        self.kind = kinds[int(rng.integers(len(kinds)))]
        players: list[Policy | None] = []
        for seat in range(self.config.players):
            if seat == self.seat:
                players.append(None)
            elif self.kind == SELF:
                players.append(self.snapshots[int(rng.integers(len(self.snapshots)))])
            else:
                agent = self._agents.get((self.kind, seat))
                if agent is None:
                    from agents.base import make

                    agent = self._agents[self.kind, seat] = make(self.kind)
                if hasattr(agent, "reset"):
                    agent.reset(seat, int(rng.integers(2**63)))
                players.append(agent)
        self._players = players

    # -- the Gymnasium API -----------------------------------------------------------------------

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[np.ndarray, dict[str, Any]]:
        super().reset(seed=seed)
        rng = self.np_random
        options = options or {}
        unknown = set(options) - {"game", "seat"}
        if unknown:
            raise ValueError(f"reset options may be 'game' and 'seat'; got {sorted(unknown)}")
        while True:
            n = self.config.players
            seat = options.get("seat", self.fixed_seat)
            self.seat = int(rng.integers(n)) if seat is None else int(seat)
            self._draw_opponents(rng)
            self.game = options.get("game") or Game(self.config, seed=int(rng.integers(2**63)))
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
        return observe(self.game, self.seat), self._info()

    def step(self, action: int) -> tuple[np.ndarray, float, bool, bool, dict[str, Any]]:
        game = self.game
        if game is None or self._ended:
            raise RuntimeError("step() called before reset() or after the episode ended")
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
        return observe(game, self.seat), reward, game.is_over, False, info

    def action_masks(self) -> np.ndarray:
        """The learner's legal actions as a bool mask (all false once the episode is over)."""
        if self.game is None or self._ended:
            return np.zeros(NUM_ACTIONS, dtype=bool)
        return self.game.legal_mask().view(np.bool_)

    def render(self) -> str | None:
        if self.render_mode is None or self.game is None:
            return None
        return describe(self.game, self.seat)

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
            action = players[current].act(observe(game, current), game.legal_mask())
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


def check_spec(spec: str) -> None:
    """Fail early on an opponent spec ``agents.make`` would refuse (without loading a model)."""
    from agents.base import agent_names

    name, _, path = spec.partition(":")
    if name == "ppo" or (name in agent_names() and not path):
        return
    raise ValueError(
        f"unknown opponent {spec!r}: allowed are {', '.join(agent_names())}, ppo:PATH and 'self'"
    )


__all__ = ["SingleAgentEnv", "SELF", "check_spec", "ILLEGAL_REWARD", "ILLEGAL_MODES", "Policy"]
