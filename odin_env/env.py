"""Odin as a PettingZoo AEC environment.

``odin_env.env(players=4, threshold=15, ...)`` returns the environment wrapped in PettingZoo's
order-enforcing wrapper; ``raw_env`` is the bare one. The settings are those of
:class:`odin_env.rules.Config` (``num_players`` is accepted as PettingZoo's usual name for
``players``), plus ``render_mode`` (``"ansi"`` or ``"human"``) and ``auto_forced``.

Agents: ``player_0 .. player_{n-1}``; seat order is clockwise = increasing index (R16).

Actions: ``Discrete(3634)`` for every agent.

============  =============================================================
index         meaning
============  =============================================================
0 .. 3578     play combo ``odin_env.combos.COMBO_CARDS[i]``
3579          pass
3580 .. 3633  take card id ``a - 3580`` from the combo just beaten (R10)
============  =============================================================

After a play that beats a combo, the same agent acts again with only take actions legal.
With ``auto_forced=True`` (default) a decision with one legal action (pass when nothing beats
the table, taking from a one-card combo, a lead with one card left) is applied without asking,
so agents are asked only for real choices.

Observations: ``{"observation": float32[OBS_SIZE], "action_mask": int8[3634]}``; the encoding
is documented plane by plane in :mod:`odin_env.observation`, and every entry lies in
``[0, observation.high(config)]``, the space's bounds. With the Goat (``goat=True``, RULES
G1-G5) there are 6,702 actions (the Goat's after these), the mask is ``int8[6702]`` and the
observation ends with the Goat's field (:func:`odin_env.observation.observation_size`). The
mask is the legal set for the acting agent and all zeros for the others.

Rewards: ``reward="penalty"``: at each hand's end every agent receives minus the cards left in
its hand; ``reward="win"``: at the episode's end each of the ``w`` agents on the lowest total
receives ``1/w``, the others 0. Every agent receives its own reward, whoever ended the hand;
PettingZoo's ``last()`` returns it when the agent is next selected.

Episodes end by termination of every agent (``episode="hand"``: after one hand; ``"game"``: when
a total reaches the threshold, R14). There is no truncation: every hand ends (R12). Once every
agent has been stepped out, ``last()`` still answers: the final observation, reward 0,
terminated.

``reset(seed, options)`` takes no options: a key is refused with a ``ValueError`` naming the
allowed ones, as the Gymnasium env refuses keys it does not read (but for ``"options"``, the
key PettingZoo's conformance test sends, ignored). ``auto_forced`` must be a bool.

An action must be an integer (a Python ``int`` or a numpy integer, not ``bool``) in
``0 .. 3633`` (``0 .. 6701`` with the Goat), in every mode: anything else raises
``TypeError`` (not an integer) or ``ValueError`` (out of range) naming the action and the
range, and changes nothing
(:func:`odin_env.rules.check_action`, the rule ``Game.apply`` applies too). An agent that is
already terminated is stepped with ``None``, as PettingZoo's protocol has it.

An illegal action (in range, not legal in the position) raises ``ValueError`` naming the
action, the phase and the number of legal actions, and leaves the game unchanged;
``env(illegal="terminate")`` instead applies PettingZoo's ``TerminateIllegalWrapper`` (the
offender gets -1 and the episode ends).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from odin_env.observation import box, observe
from odin_env.render import NO_RENDER_MODE, describe
from odin_env.rules import Config, Game, check_action
from odin_env.spec import check_options, check_seed, game_config

ILLEGAL_MODES = ("raise", "terminate")
PETTINGZOO_PROBE = "options"
"""The one ``reset`` option key accepted (and ignored): PettingZoo's conformance test passes
``options={"options": 1}`` to check that ``reset`` takes options."""


class raw_env(AECEnv):  # noqa: N801 - PettingZoo's naming convention
    """The Odin AEC environment without wrappers; see the module docstring."""

    metadata = {
        "name": "odin_v0",
        "render_modes": ["ansi", "human"],
        "render_fps": 1,  # a text picture per decision; Gymnasium's checkers ask for a rate
        "is_parallelizable": False,
    }

    def __init__(
        self,
        config: Config | None = None,
        *,
        render_mode: str | None = None,
        auto_forced: bool = True,
        **settings: Any,
    ):
        super().__init__()
        self.config = game_config(config, settings)
        players = self.config.players
        if render_mode not in (None, *self.metadata["render_modes"]):
            raise ValueError(f"render_mode must be None, ansi or human; got {render_mode!r}")
        self.render_mode = render_mode
        if not isinstance(auto_forced, (bool, np.bool_)):
            raise ValueError(f"auto_forced must be True or False; got {auto_forced!r:.80}")
        self.auto_forced = bool(auto_forced)
        self.possible_agents = [f"player_{s}" for s in range(players)]
        self._seat = {agent: s for s, agent in enumerate(self.possible_agents)}
        obs_space = spaces.Dict(
            {
                "observation": box(self.config),
                "action_mask": spaces.Box(0, 1, (self.config.num_actions,), np.int8),
            }
        )
        self.observation_spaces = {a: obs_space for a in self.possible_agents}
        actions = spaces.Discrete(self.config.num_actions)
        self.action_spaces = {a: actions for a in self.possible_agents}
        self._rng = np.random.default_rng()
        self.game: Game | None = None

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        """A new game (a new generator first when ``seed`` is given). ``options`` are refused:
        this env takes none (``ValueError`` naming the allowed keys, as the Gymnasium env's),
        but for the key ``"options"``, which PettingZoo's ``api_test`` sends to check that
        ``reset`` has the parameter (ignored)."""
        options = check_options(options, (PETTINGZOO_PROBE,), "raw_env.reset")
        if check_seed(seed) is not None:
            self._rng = np.random.default_rng(seed)
        self.game = Game(self.config, seed=self._rng)
        self.agents = self.possible_agents[:]
        self._zero = dict.fromkeys(self.agents, 0.0)
        self.rewards = dict(self._zero)
        self._cumulative_rewards = dict(self._zero)
        self._paid_last = False  # whether self.rewards holds a payment to clear next step
        self.terminations = dict.fromkeys(self.agents, False)
        self.truncations = dict.fromkeys(self.agents, False)
        self.infos = {a: {} for a in self.agents}
        if self.auto_forced:
            self.game.play_forced()
        self.agent_selection = self.possible_agents[self.game.current]

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        game = self.game
        seat = self._seat[agent]
        if seat == game.current and not game.is_over:
            mask = game.legal_mask()
        else:
            mask = np.zeros(self.config.num_actions, dtype=np.int8)
        return {"observation": observe(game, seat), "action_mask": mask}

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        action = check_action(action, self.config.goat)
        game = self.game
        paid = game.apply(action)
        if self.auto_forced and not game.is_over:
            forced = game.play_forced()
            if forced is not None:
                paid = forced if paid is None else [a + b for a, b in zip(paid, forced)]
        self._cumulative_rewards[agent] = 0.0
        if paid is None:
            if self._paid_last:
                self.rewards = dict(self._zero)
                self._paid_last = False
        else:
            self.rewards = dict(zip(self.possible_agents, paid))
            self._paid_last = True
            self._accumulate_rewards()
        if game.is_over:
            self.terminations = dict.fromkeys(self.agents, True)
        self.agent_selection = self.possible_agents[game.current]
        if self.render_mode == "human":
            self.render()

    def render(self) -> str | None:
        """The acting seat's view as text (``"ansi"``) or printed (``"human"``). Without a render
        mode it warns in one line what to pass and returns ``None``."""
        if self.render_mode is None:
            warnings.warn(NO_RENDER_MODE, UserWarning, stacklevel=2)
            return None
        text = describe(self.game, self._seat[self.agent_selection])
        if self.render_mode == "human":
            print(text, end="\n\n")
            return None
        return text

    def last(self, observe: bool = True) -> tuple:
        """PettingZoo's ``last()``; once every agent has been stepped out of a finished episode
        (no agent left), the last selected agent's final observation, reward 0 (every reward was
        paid already), terminated, not truncated, empty info, instead of a ``KeyError``."""
        if self.game is not None and not self.agents:
            return _ended(self, observe)
        return super().last(observe)

    def close(self) -> None:
        pass


def _ended(environment: AECEnv, observe: bool) -> tuple:
    """What ``last()`` returns after the episode, when no agent is left."""
    seen = environment.observe(environment.agent_selection) if observe else None
    return seen, 0.0, True, False, {}


class _OrderEnforcing(wrappers.OrderEnforcingWrapper):
    """PettingZoo's ``OrderEnforcingWrapper`` whose ``last()`` works after the episode as
    :meth:`raw_env.last` does (the original reads dicts the last dead step has emptied)."""

    def last(self, observe: bool = True) -> tuple:
        if self._has_reset and not self.agents:
            return _ended(self, observe)
        return super().last(observe)


class _CheckedTerminateIllegal(wrappers.TerminateIllegalWrapper):
    """PettingZoo's ``TerminateIllegalWrapper`` that first applies :func:`check_action`: the
    original indexes the action mask with the action before the environment sees it, so a float
    or an out-of-range index would be read (or fail) there instead of being refused."""

    def step(self, action: int | None) -> None:
        agent = self.agent_selection
        if not (self.terminations[agent] or self.truncations[agent]):
            action = check_action(action, self.env.unwrapped.config.goat)
        super().step(action)


def env(illegal: str = "raise", **kwargs: Any) -> AECEnv:
    """The Odin AEC environment in PettingZoo's standard wrappers (see the module docstring)."""
    if illegal not in ILLEGAL_MODES:
        raise ValueError(f"illegal must be one of {', '.join(ILLEGAL_MODES)}; got {illegal!r}")
    environment: AECEnv = raw_env(**kwargs)
    if illegal == "terminate":
        environment = _CheckedTerminateIllegal(environment, illegal_reward=-1)
    return _OrderEnforcing(environment)
