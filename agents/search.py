"""``search``: determinized Monte Carlo search (PIMC) on the batched engine, from the observation.

At a decision with a real choice the player

1. reads the position from the observation alone (:func:`agents.hand.see`): its hand, the
   table, the discards, the cards publicly known to be in other hands, hand sizes and totals;
2. samples ``worlds`` layouts of the cards it has not seen: each other seat gets its known
   cards plus as many unseen cards, drawn uniformly, as its hand size asks; the rest are the
   cards set aside (R2);
3. plays every candidate action in every world on :class:`odin_env.batched.BatchedGames`
   (each world copied once per candidate, so the candidates are compared on the same layouts),
   then the rest of the hand with a fast heuristic in every seat (``planner`` in its numba form,
   :mod:`agents.batched_planner`, about 100,000 decisions a second on one core);
4. picks the candidate with the best mean outcome (ties: the lower action index).

With a ``prior`` (a network that values each legal action: ``search:N:net`` plays the bundled
``dmc``), a decision with more than :data:`TOP` legal actions searches only the :data:`TOP` the
prior values most, so the same playouts are shared among fewer, likelier candidates.

The playout policy may be any batched player (``policy``; ``search:N:netplay``: the bundled
``dmc`` in every seat, the table modelled as that network), and the searcher's own seat may be
played by another (``own``; ``search:N:netself``: the network plays the searcher's future turns,
``policy`` the other seats').

With a ``leaf`` network (``search:N:netleaf``: the bundled ``dmc``) a playout is cut short: the
other seats answer the candidate (``policy``) until the searcher's next decision, and there the
network's value of its best action (its expected penalty for the hand, from the observation the
searcher would then have) stands for the rest of the hand. The sampled layouts say how the table
answers; the network, trained on whole hands, says what the position is worth. The candidates
are then ranked by expected penalty, not win chance.

With ``penalty`` (``search:N:penalty``) the candidates are ranked by their mean penalty for the
hand (the fewest cards left), not by their mean win chance.

With ``post`` (``search:N:post``) the layouts come from an
:class:`agents.posterior.HandPosterior`: layouts that agree with the other seats' plays and
passes over the whole hand as the playout ``policy`` would have made them (then uniform ones).

With ``race`` (``search:N:race``) the budget is a cap: the playouts come in rounds of
:data:`RACE_ROUND` worlds, every candidate still in the race played in each, and a candidate
leaves once it is clearly behind the leader on the worlds they share (:meth:`SearchAgent._race`),
so a decision with an evident best ends after one round and a close one gets the playouts.

The outcome of one playout is the observer's win chance once the hand is scored: exact when the
hand ends the game (its share of the win, R14), else a smooth estimate from the new totals
(:func:`win_chance`).

The same search scores every candidate for a person (:func:`score_candidates`,
:meth:`SearchAgent.evaluate`: each legal action's mean win chance and mean penalty for the hand
over the same worlds); the player's choice is the best of those scores, so there is one search
loop, not two.

The budget is ``rollouts`` playouts per decision, shared equally among the candidates (at least
``min_worlds`` worlds each), or ``ms`` milliseconds per decision (worlds are added
``min_worlds`` at a time until the time is spent; at least once). Everything random comes from
the seed of ``reset``: with a rollout budget, the same seed and observation give the same action
on any machine; a time budget depends on the machine's speed, so it does not.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np

from agents.base import is_goat_game, legal_actions, refuse_goat
from agents.dmc import value_horizon
from agents.heuristics import HEURISTICS
from agents.posterior import HandPosterior
from agents.table_model import TableModel
from agents.worlds import position as _position
from agents.worlds import sample_hands as _sample_hands
from odin_env.batched import BatchedGames
from odin_env.rules import Config, Game
from odin_env.spec import NUM_CARDS, TAKE

ROLLOUTS = 512
"""Default playouts per decision."""
POLICY = "planner"
"""Default playout policy: a batched heuristic (``agents.heuristics.HEURISTICS``)."""
MIN_WORLDS = 8
"""Fewest worlds a decision samples, however many candidates share the budget."""
TOP = 4
"""With a ``prior``, the most candidates a decision searches (the prior's best)."""
RACE_ROUND = 32
"""With ``race``, the worlds each round adds to every candidate still in the race."""
RACE_Z = 2.0
"""With ``race``, a candidate leaves the race once its paired deficit to the leader, over the
worlds both were played in, is at least this many standard errors."""
MAX_STEPS = 400
"""A playout ends with its hand; this only bounds the loop (a hand has far fewer decisions)."""


def win_chance(totals: np.ndarray, threshold: int) -> np.ndarray:
    """Each seat's estimated chance to win from penalty ``totals`` ``(..., players)`` after a
    hand: exact shares when a total has reached ``threshold`` (the game is over: the lowest
    totals share the win), else a softmax of ``-total / spread``, where the spread grows with
    the hands left to play (the more hands, the more a lead can still change)."""
    totals = np.asarray(totals, dtype=np.float64)
    over = totals.max(axis=-1, keepdims=True) >= threshold
    lowest = totals == totals.min(axis=-1, keepdims=True)
    exact = lowest / lowest.sum(axis=-1, keepdims=True)
    room = np.maximum(threshold - totals.max(axis=-1, keepdims=True), 1.0)
    spread = 2.0 * np.sqrt(1.0 + room / 4.0)
    logits = -(totals - totals.min(axis=-1, keepdims=True)) / spread
    soft = np.exp(logits)
    soft /= soft.sum(axis=-1, keepdims=True)
    return np.where(over, exact, soft)


_MAX_ROUND = 64
"""Most worlds one round of a ``within`` time budget adds."""


@dataclass(frozen=True)
class Scores:
    """The search's evaluation of one decision: every legal action (``actions``, ascending)
    with the observer's mean win chance after it (``win``, 0-1, :func:`win_chance` of each
    playout's end of hand) and its mean penalty points for the hand (``penalty``: its cards
    left when the hand ends, 0 when it goes out), over the same ``worlds`` sampled layouts of
    the unseen cards. A search with a ``leaf`` network estimates the penalty only (its
    expectation where the playouts stop): its ``win`` is NaN."""

    actions: np.ndarray
    win: np.ndarray
    penalty: np.ndarray
    worlds: int

    @property
    def best(self) -> int:
        """The action the search plays: the highest mean win chance, or without one (NaN: a
        ``leaf`` search) :attr:`fewest` (ties: the lower action)."""
        if np.isnan(self.win).any():
            return self.fewest
        return int(self.actions[int(np.argmax(self.win))])

    @property
    def fewest(self) -> int:
        """The action of lowest mean penalty for the hand (ties: the lower action)."""
        return int(self.actions[int(np.argmin(self.penalty))])

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
        seed, rollouts=ROLLOUTS if rollouts is None else rollouts, min_worlds=min_worlds,
        policy=policy, ms=ms,
    )  # fmt: skip
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


_SPARE: list[dict] = []
_SPARE_LOCK = threading.Lock()
_SPARE_SETS, _SHARED_ENGINES = 3, 12
"""Engine sets kept for :func:`score_candidates` calls, and engines in each."""


class SearchAgent:
    """Determinized search; see the module docstring. ``rollouts``: playouts per decision;
    ``ms``: a time budget per decision instead (``None``: use ``rollouts``); ``policy``: the
    playout policy, a key of ``HEURISTICS`` or a batched agent (``act_batch``; a network,
    say); ``own``: the same kinds, for the searcher's own seat of the playouts only (``None``:
    ``policy`` there too). ``model``: weight the sampled layouts by how
    likely they make the other seats' observed passes (:mod:`agents.table_model`; the memory
    comes from the observations :meth:`act` is shown, in order, within a game begun by
    :meth:`reset`); ``False`` (the default) samples uniformly, exactly as without the option.
    ``post``: draw the layouts from an :class:`agents.posterior.HandPosterior` replaying the
    other seats under ``policy`` (memory as for ``model``, which it overrides).
    ``prior``: ``None``, or a player with ``values(observations, masks)`` (a
    :class:`agents.dmc.DMCAgent`): :meth:`act` then searches only the ``top`` legal actions it
    values most (:meth:`evaluate`, the person's hints, still scores every one). ``leaf``:
    ``None``, or such a network: the playouts then stop at the observer's next decision (its
    take after a beat excepted) and take the network's value there (:meth:`_leaf_playouts`);
    the candidates are ranked by expected penalty (a Goat game is played out whole).
    ``race``: :meth:`act` races the candidates (:meth:`_race`) within the budget, which is then
    a cap; :meth:`evaluate` still scores every candidate on the same worlds. ``penalty``:
    :meth:`act` plays the candidate of lowest mean penalty for the hand (ties: the lower
    action), not of highest mean win chance."""

    name = "search"

    def __init__(
        self,
        seed: int | None = None,
        rollouts: int = ROLLOUTS,
        min_worlds: int = MIN_WORLDS,
        policy: Any = POLICY,
        ms: float | None = None,
        model: bool = False,
        prior: Any = None,
        top: int = TOP,
        own: Any = None,
        leaf: Any = None,
        race: bool = False,
        penalty: bool = False,
        post: bool = False,
    ):
        for name, value in (("rollouts", rollouts), ("min_worlds", min_worlds), ("top", top)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be an integer >= 1; got {value!r}")
        if ms is not None and (isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms <= 0):
            raise ValueError(f"ms must be a number of milliseconds > 0 or None; got {ms!r}")
        self.rollouts, self.min_worlds, self.ms, self.top = rollouts, min_worlds, ms, top
        self.rng = np.random.default_rng(seed)
        self.policy = _playout_policy("policy", policy)
        self.own = None if own is None else _playout_policy("own", own)
        self._engines: dict[tuple[Config, int], BatchedGames] = {}
        self._most_engines = 32  # batch sizes vary with the number of candidates
        self.table = TableModel() if model else None
        self.posterior = HandPosterior(self.policy) if post else None
        for name, network in (("prior", prior), ("leaf", leaf)):
            if network is not None and not callable(getattr(network, "values", None)):
                raise ValueError(
                    f"{name} must be None or have values(observations, masks) (a DMC network); "
                    f"got {network!r}"
                )
        self.prior = prior
        if leaf is not None and value_horizon(getattr(leaf, "info", {})) != "hand":
            raise ValueError(
                "leaf must value a position in penalty for the hand (a DMC network trained with "
                f"horizon hand); this one was trained with horizon {value_horizon(leaf.info)!r}"
            )
        self.leaf, self.race, self.penalty = leaf, bool(race), bool(penalty)

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Reseed (``None``: keep the generator); with ``model``, forget the last game."""
        if seed is not None:
            self.rng = np.random.default_rng(seed)
        if self.table is not None:
            self.table.reset()
        if self.posterior is not None:
            self.posterior.reset()

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        candidates = legal_actions(action_mask)
        if candidates.size == 0:
            raise ValueError("no legal action in the mask: this agent is not the one to act")
        if self.table is not None:
            refuse_goat(action_mask, "search with the table model (search:N:model)")
            self.table.observe(observation)  # forced decisions too: they reveal passes
        if self.posterior is not None:
            refuse_goat(action_mask, "search with the posterior (search:N:post)")
            self.posterior.observe(observation, self.rng)
        if candidates.size == 1:
            action = int(candidates[0])
        else:
            shortlist = self._shortlist(observation, action_mask, candidates)
            if self.race:
                action = self._race(observation, shortlist)
            else:
                scores = self.evaluate(observation, shortlist)
                action = scores.fewest if self.penalty else scores.best
        if self.table is not None:
            self.table.decided(action)
        if self.posterior is not None:
            self.posterior.decided(action)
        return action

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
        game, config, unseen, needs = _position(observation, action_mask)
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
        round); the best mean of those left wins (ties: the lower action). The outcome is the
        win chance, or minus the penalty where there is none (a ``leaf`` search)."""
        start = time.perf_counter()
        game, config, unseen, needs = _position(observation, action_mask)
        alive = legal_actions(action_mask)
        outcomes = np.zeros((0, alive.size))  # a row per world, a column per candidate left
        spent = 0
        while True:
            hands = self._sample(game, unseen, needs, RACE_ROUND)
            win, penalty = self._playouts(game, config, hands, alive)
            outcome = -penalty if self.penalty else np.where(np.isnan(win), -penalty, win)
            outcomes = np.concatenate([outcomes, outcome])
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
        values = self.prior.values(observation[None], action_mask[None])[0]
        return top_actions(values, action_mask, self.top)

    def _sample(self, game: Game, unseen: np.ndarray, needs: list[int], worlds: int) -> np.ndarray:
        """``worlds`` layouts: uniform (:func:`_sample_hands`), or with ``model`` drawn from
        ``pool`` times as many uniform ones by their likelihood (:meth:`TableModel.choose`), or
        with ``post`` the posterior's (:meth:`HandPosterior.worlds`) when it was last shown this
        position (a person's hint on another position samples uniformly)."""
        if self.posterior is not None and self.posterior.shows(game, unseen, needs):
            return self.posterior.worlds(worlds, self.rng)
        if self.table is None or not self.table.applicable():
            return _sample_hands(game, unseen, needs, worlds, self.rng)
        pool = _sample_hands(game, unseen, needs, worlds * self.table.pool, self.rng)
        return self.table.choose(pool, worlds, self.rng)

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
        if self.leaf is not None and not config.goat:  # the networks know no Goat
            return self._leaf_playouts(engine, worlds, count, actions)
        for _ in range(MAX_STEPS):
            ended = engine.hand_end  # only at the step that ends the hand: then it is held
            final[ended] = engine.penalties[ended]
            rows = np.flatnonzero(~engine.held)
            if rows.size == 0:
                break
            if self.own is None:
                actions[rows] = self.policy.act_batch(engine.obs[rows], engine.mask[rows])
            else:
                mine = engine.seat[rows] == 0
                for player, part in ((self.own, rows[mine]), (self.policy, rows[~mine])):
                    if part.size:
                        actions[part] = player.act_batch(engine.obs[part], engine.mask[part])
            engine.step(actions)
        outcome = win_chance(totals + final, config.threshold)[:, 0]
        penalty = final[:, 0].astype(np.float64)
        return outcome.reshape(worlds, count), penalty.reshape(worlds, count)

    def _leaf_playouts(
        self, engine: BatchedGames, worlds: int, count: int, actions: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """No win chance (NaN: see :class:`Scores`) and each candidate's expected penalty for
        the observer (seat 0) in each world (``(worlds, candidates)`` arrays), the playouts
        cut at the observer's next decision that is not the take of its own beat (or at the
        hand's end: then its penalty). There the ``leaf`` network's best value, ``max_a Q(o,
        a)`` (minus the hand's expected penalty), from the observation the observer would then
        have; its take before that is the network's."""
        batch = worlds * count
        penalty = np.zeros(batch)
        for _ in range(MAX_STEPS):
            ended = engine.hand_end  # only at the step that ends the hand: then it is held
            penalty[ended] = engine.penalties[ended, 0]
            rows = np.flatnonzero(~engine.held)
            if rows.size == 0:
                break
            mine = engine.seat[rows] == 0
            taking = engine.mask[rows, TAKE : TAKE + NUM_CARDS].any(axis=1)
            stop = rows[mine & ~taking]
            if stop.size:
                values = self.leaf.values(engine.obs[stop], engine.mask[stop])
                penalty[stop] = -values.max(axis=1)
                engine.hold(stop)
            for player, part in ((self.leaf, rows[mine & taking]), (self.policy, rows[~mine])):
                if part.size:
                    actions[part] = player.act_batch(engine.obs[part], engine.mask[part])
            engine.step(actions)
        return np.full((worlds, count), np.nan), penalty.reshape(worlds, count)


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


def _playout_policy(name: str, policy: Any) -> Any:
    """A playout policy: a batched player (``act_batch``; a network, say) as it is, or a key of
    ``HEURISTICS`` built; ``ValueError`` naming ``name`` for anything else."""
    if callable(getattr(policy, "act_batch", None)):
        return policy
    if isinstance(policy, str) and policy in HEURISTICS:
        return HEURISTICS[policy]()
    raise ValueError(
        f"{name} must be one of {', '.join(HEURISTICS)} or a batched agent; got {policy!r}"
    )


__all__ = [
    "ROLLOUTS", "TOP", "Scores", "SearchAgent", "score_candidates", "top_actions", "win_chance",
]  # fmt: skip
