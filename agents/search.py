"""``search``: determinized Monte Carlo search (PIMC) on the batched engine, from the observation.

At a decision with a real choice the player

1. shortlists the candidates: with more than :data:`TOP` legal actions, only the :data:`TOP` that
   a network (``prior``; by default the bundled one-pass ``dmc_one``, :data:`PRIOR`) values most
   are searched, so the playouts are shared among fewer, likelier candidates (a Goat game, which
   the networks never learned, is searched whole);
2. reads the position from the observation alone (:func:`agents.worlds.position`): its hand,
   the table, the discards, the cards publicly known to be in other hands, hand sizes, totals;
3. samples layouts of the cards it has not seen (:func:`agents.worlds.sample_hands`): each other
   seat gets its known cards plus as many unseen cards, drawn uniformly, as its hand size asks;
4. plays every candidate in every layout on :class:`odin_env.batched.BatchedGames` (each layout
   copied once per candidate, so the candidates are compared on the same layouts), then the rest
   of the hand with a fast heuristic in every seat (``policy``: ``planner`` in its numba form);
5. plays the candidate of best mean outcome (ties: the lower action): the observer's win chance
   once the hand is scored (:func:`odin_env.scoring.win_chance`).

The budget is ``rollouts`` playouts a decision, shared equally among the candidates (at least
``min_worlds`` layouts each), or ``ms`` milliseconds (layouts are added ``min_worlds`` at a time
until the time is spent; at least once). With ``race`` the budget is a cap: rounds of
:data:`RACE_ROUND` layouts, and a candidate leaves once it is clearly behind the leader on the
layouts they share (:meth:`SearchAgent._race`).

The same search scores every legal action for a person (:func:`score_candidates`,
:meth:`SearchAgent.evaluate`: no shortlist), and the player's choice is the best of those scores
over its shortlist: one search loop, not two. Everything random comes from the seed of
``reset``: with a rollout budget the same seed and observation give the same action on any
machine; a time budget depends on the machine's speed.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import is_goat_game, legal_actions
from agents.dmc import BUNDLED_DMC_ONE, DMCAgent
from agents.heuristics import HEURISTICS
from agents.worlds import position, sample_hands
from odin_env.batched import BatchedGames
from odin_env.rules import Config, Game
from odin_env.scoring import win_chance

ROLLOUTS = 512
"""Default playouts per decision."""
POLICY = "planner"
"""Default playout policy: a batched heuristic (``agents.heuristics.HEURISTICS``)."""
PRIOR = BUNDLED_DMC_ONE
"""The network that shortlists the candidates by default: the bundled one-pass ``dmc_one``."""
MIN_WORLDS = 8
"""Fewest worlds a decision samples, however many candidates share the budget."""
TOP = 4
"""The most candidates a decision searches: the ``prior``'s best."""
RACE_ROUND = 32
"""With ``race``, the worlds each round adds to every candidate still in the race."""
RACE_Z = 2.0
"""With ``race``, a candidate leaves the race once its paired deficit to the leader, over the
worlds both were played in, is at least this many standard errors."""
MAX_STEPS = 400
"""A playout ends with its hand; this only bounds the loop (a hand has far fewer decisions)."""
_MAX_ROUND = 64
"""Most worlds one round of a ``within`` time budget adds."""


@dataclass(frozen=True)
class Scores:
    """The search's evaluation of one decision: every legal action (``actions``, ascending)
    with the observer's mean win chance after it (``win``, 0-1, :func:`win_chance` of each
    playout's end of hand) and its mean penalty points for the hand (``penalty``: its cards
    left when the hand ends, 0 when it goes out), over the same ``worlds`` sampled layouts of
    the unseen cards."""

    actions: np.ndarray
    win: np.ndarray
    penalty: np.ndarray
    worlds: int

    @property
    def best(self) -> int:
        """The action the search plays: the highest mean win chance (ties: the lower action)."""
        return int(self.actions[int(np.argmax(self.win))])

    def of(self, action: int) -> int:
        """The index of ``action`` in ``actions`` (``ValueError`` if it is not legal)."""
        found = np.flatnonzero(self.actions == action)
        if found.size == 0:
            raise ValueError(f"action {action} is not among the {self.actions.size} legal ones")
        return int(found[0])


def score_candidates(
    observation: np.ndarray,
    action_mask: np.ndarray | None = None,
    *,
    rollouts: int | None = None,
    ms: float | None = None,
    seed: int = 0,
    within: bool = False,
    policy: Any = POLICY,
    min_worlds: int = MIN_WORLDS,
) -> Scores:
    """:meth:`SearchAgent.evaluate` of a search seeded ``seed``: every legal action of the
    observer's decision scored from the observation alone. Budget: ``ms`` milliseconds when
    given (``within``: end before they are spent), else ``rollouts`` playouts (default
    :data:`ROLLOUTS`). With a rollout budget the same observation and seed give the same scores
    on any machine."""
    agent = SearchAgent(
        seed,
        rollouts=ROLLOUTS if rollouts is None else rollouts,
        min_worlds=min_worlds,
        policy=policy,
        ms=ms,
    )
    # Engines are kept from call to call (building one costs up to ~0.1 s, a good part of a
    # short budget): a call borrows a whole set, so no two calls step one engine at once, and
    # a few small sets are kept (an engine of 2,048 rows holds ~18 MB).
    with _SPARE_LOCK:
        engines = _SPARE.pop() if _SPARE else {}
    agent._engines, agent._most_engines = engines, _SHARED_ENGINES
    try:
        return agent.evaluate(observation, action_mask, within=within)
    finally:
        with _SPARE_LOCK:
            if len(_SPARE) < _SPARE_SETS:
                _SPARE.append(engines)


def top_actions(values: np.ndarray, action_mask: np.ndarray, top: int) -> np.ndarray:
    """``action_mask`` cut to its ``top`` legal actions of highest ``values`` (one value per
    action; ties: the lower action): the candidates a search with a prior scores."""
    candidates = legal_actions(action_mask)
    kept = candidates[np.argsort(-values[candidates], kind="stable")[:top]]
    shortlist = np.zeros_like(action_mask)
    shortlist[kept] = 1
    return shortlist


@cache
def _network(path: Path) -> DMCAgent:
    """The DMC network of model file ``path``, read once a process (it keeps no state)."""
    return DMCAgent.load(path)


_SPARE: list[dict] = []
_SPARE_LOCK = threading.Lock()
_SPARE_SETS, _SHARED_ENGINES = 3, 12
"""Engine sets kept for :func:`score_candidates` calls, and engines in each."""


class SearchAgent:
    """Determinized search; see the module docstring. ``rollouts``: playouts per decision;
    ``ms``: a time budget per decision instead (``None``: use ``rollouts``); ``policy``: the
    playout policy, a key of ``HEURISTICS`` or a batched agent (``act_batch``). ``prior``: what
    shortlists the candidates of :meth:`act` to its ``top`` best: a DMC model file's path (read
    at the first shortlist; default :data:`PRIOR`), a player with ``values(observations,
    masks)``, or ``None`` (every legal action searched). ``race``: :meth:`act` races the
    candidates (:meth:`_race`) within the budget, which is then a cap. :meth:`evaluate` scores
    every legal action whatever these say."""

    name = "search"

    def __init__(
        self,
        seed: int | None = None,
        rollouts: int = ROLLOUTS,
        min_worlds: int = MIN_WORLDS,
        policy: Any = POLICY,
        ms: float | None = None,
        prior: Any = PRIOR,
        top: int = TOP,
        race: bool = False,
    ):
        for name, value in (("rollouts", rollouts), ("min_worlds", min_worlds), ("top", top)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
        if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms <= 0):
            raise ValueError(f"ms must be a number of milliseconds > 0 or None; got {ms!r}")
        if not (
            prior is None
            or (isinstance(prior, Path) and prior.is_file())
            or callable(getattr(prior, "values", None))
        ):
            raise ValueError(
                "prior must be None, a DMC model file's Path or have values(observations, "
                f"masks) (a DMC network); got {prior!r}"
            )
        self.rollouts, self.min_worlds, self.ms, self.top = rollouts, min_worlds, ms, top
        self.rng = np.random.default_rng(seed)
        self.policy = _playout_policy(policy)
        self.prior, self.race = prior, bool(race)
        self._engines: dict[tuple[Config, int], BatchedGames] = {}
        self._most_engines = 32  # batch sizes vary with the number of candidates

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Reseed (``None``: keep the generator)."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        candidates = legal_actions(action_mask)
        if candidates.size == 0:
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        if candidates.size == 1:
            return int(candidates[0])
        shortlist = self._shortlist(observation, action_mask, candidates)
        if self.race:
            return self._race(observation, shortlist)
        return self.evaluate(observation, shortlist).best

    def evaluate(
        self,
        observation: np.ndarray,
        action_mask: np.ndarray | None = None,
        *,
        within: bool = False,
    ) -> Scores:
        """Every legal action of the observer's decision scored over the same sampled worlds
        (the search :meth:`act` runs; its pick is the result's :attr:`Scores.best`). Reads the
        observation only. ``action_mask``: ``None`` for the legal actions of the position the
        observation shows (the same as the game's). ``within``: with a time budget, end before
        the budget is spent, not after (worlds are then added as many at a time as the time
        left allows; at least one world): for a person waiting on a hint."""
        start = time.perf_counter()
        game, config, unseen, needs = position(observation, action_mask)
        if action_mask is None:
            candidates = np.array(sorted(game.legal), dtype=np.int64)
        else:
            candidates = legal_actions(action_mask)
        if candidates.size == 0:
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        count = candidates.size
        if self.ms is None:
            worlds = max(self.min_worlds, self.rollouts // count)
            hands = self._sample(game, unseen, needs, worlds)
            win, penalty = self._playouts(game, config, hands, candidates)
            return Scores(candidates, win.mean(axis=0), penalty.mean(axis=0), worlds)
        win_sum, penalty_sum, total = np.zeros(count), np.zeros(count), 0
        size = 1 if within else self.min_worlds
        while True:
            began = time.perf_counter()
            hands = self._sample(game, unseen, needs, size)
            win, penalty = self._playouts(game, config, hands, candidates)
            win_sum += win.sum(axis=0)
            penalty_sum += penalty.sum(axis=0)
            total += size
            now = time.perf_counter()
            left = self.ms - (now - start) * 1000.0
            if left <= 0:
                break
            if within:
                # The next round's worlds: as many as the time left holds at this round's pace
                # (with room to spare), a power of two so that few engine sizes are built.
                per_world = (now - began) * 1000.0 / size
                fits = int(left / (2.0 * per_world)) if per_world > 0 else _MAX_ROUND
                if fits < 1:
                    break
                size = 1 << (min(fits, _MAX_ROUND).bit_length() - 1)
        return Scores(candidates, win_sum / total, penalty_sum / total, total)

    def _race(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        """The action of a race among the legal actions of ``action_mask``: rounds of
        :data:`RACE_ROUND` fresh worlds, each played with every candidate still in the race (so
        they stay compared on the same worlds); after each round a candidate whose mean deficit
        to the leader is at least :data:`RACE_Z` standard errors of the per-world differences
        leaves (identical outcomes in every world: the higher action leaves). It ends with one
        candidate left or the budget spent (``rollouts`` playouts, or ``ms``; at least one
        round); the best mean win chance of those left wins (ties: the lower action)."""
        start = time.perf_counter()
        game, config, unseen, needs = position(observation, action_mask)
        alive = legal_actions(action_mask)
        outcomes = np.zeros((0, alive.size))  # a row per world, a column per candidate left
        spent = 0
        while True:
            hands = self._sample(game, unseen, needs, RACE_ROUND)
            win, _ = self._playouts(game, config, hands, alive)
            outcomes = np.concatenate([outcomes, win])
            spent += win.size
            kept = _still_racing(outcomes)
            alive, outcomes = alive[kept], outcomes[:, kept]
            if alive.size == 1:
                break
            if self.ms is None:
                if spent + RACE_ROUND * alive.size > self.rollouts:
                    break
            elif (time.perf_counter() - start) * 1000.0 >= self.ms:
                break
        return int(alive[int(np.argmax(outcomes.mean(axis=0)))])

    def _shortlist(
        self, observation: np.ndarray, action_mask: np.ndarray, candidates: np.ndarray
    ) -> np.ndarray:
        """``action_mask`` (legal actions ``candidates``) cut to the ``top`` of highest ``prior``
        value (ties: the lower action), when there is a prior and more than ``top`` candidates;
        else as it is, a Goat game's too (the lab's networks were trained without the Goat)."""
        if self.prior is None or candidates.size <= self.top or is_goat_game(action_mask):
            return action_mask
        if isinstance(self.prior, Path):
            self.prior = _network(self.prior)
        values = self.prior.values(observation[None], action_mask[None])[0]
        return top_actions(values, action_mask, self.top)

    def _sample(self, game: Game, unseen: np.ndarray, needs: list[int], worlds: int) -> np.ndarray:
        """``worlds`` uniform layouts of the unseen cards (:func:`agents.worlds.sample_hands`):
        the one place a search draws its worlds."""
        return sample_hands(game, unseen, needs, worlds, self.rng)

    def _engine(self, config: Config, batch: int) -> BatchedGames:
        key = (config, batch)
        engine = self._engines.get(key)
        if engine is None:
            if len(self._engines) >= self._most_engines:
                self._engines.pop(next(iter(self._engines)))
            # A playout ends with its hand: held there, with no next deal drawn.
            engine = self._engines[key] = BatchedGames(config, batch, seed=0, next_hand=False)
        return engine

    def _playouts(
        self, game: Game, config: Config, hands: np.ndarray, candidates: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """The outcome for the observer (seat 0) of each candidate in each sampled world, and its
        penalty for the hand: two ``(worlds, candidates)`` arrays."""
        worlds, count = hands.shape[0], candidates.size
        batch = worlds * count
        engine = self._engine(config, batch)
        engine.load(np.arange(batch), game, hands=np.repeat(hands, count, axis=0))
        engine.step(np.tile(candidates, worlds).astype(np.int64))
        totals = np.array(game.totals, dtype=np.int64)
        final = np.zeros((batch, config.players), dtype=np.int64)
        actions = np.zeros(batch, dtype=np.int64)  # a held game's action is ignored
        for _ in range(MAX_STEPS):
            ended = engine.hand_end  # only at the step that ends the hand: then it is held
            final[ended] = engine.penalties[ended]
            rows = np.flatnonzero(~engine.held)
            if rows.size == 0:
                break
            actions[rows] = self.policy.act_batch(engine.obs[rows], engine.mask[rows])
            engine.step(actions)
        outcome = win_chance(totals + final, config.threshold)[:, 0]
        penalty = final[:, 0].astype(np.float64)
        return outcome.reshape(worlds, count), penalty.reshape(worlds, count)


def _still_racing(outcomes: np.ndarray) -> np.ndarray:
    """Which candidates (columns of ``outcomes``, one row per world) stay in a race: the leader
    (the best mean; ties: the first) and every other whose mean deficit to it is less than
    :data:`RACE_Z` standard errors of the per-world differences (see :meth:`SearchAgent._race`)."""
    worlds = outcomes.shape[0]
    means = outcomes.mean(axis=0)
    leader = int(np.argmax(means))
    deficit = outcomes[:, [leader]] - outcomes
    error = deficit.std(axis=0, ddof=1) / np.sqrt(worlds) if worlds > 1 else np.inf
    kept = deficit.mean(axis=0) < RACE_Z * error
    kept[leader] = True
    return kept


def _playout_policy(policy: Any) -> Any:
    """A playout policy: a batched player (``act_batch``; a network, say) as it is, or a key of
    ``HEURISTICS`` built; ``ValueError`` for anything else."""
    if callable(getattr(policy, "act_batch", None)):
        return policy
    if isinstance(policy, str) and policy in HEURISTICS:
        return HEURISTICS[policy]()
    raise ValueError(
        f"policy must be one of {', '.join(HEURISTICS)} or a batched agent; got {policy!r}"
    )


__all__ = ["PRIOR", "ROLLOUTS", "TOP", "Scores", "SearchAgent", "score_candidates", "top_actions"]
