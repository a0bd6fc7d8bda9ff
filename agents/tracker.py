"""Layouts of the hidden cards that agree with what the other seats did (``search:N:track``).

The search samples layouts of the cards it has not seen; uniform sampling ignores what the
other seats have shown by their plays and passes. A :class:`LayoutTracker` keeps a set of
layouts (*particles*) and, at each of the observer's decisions, replays the other seats'
turns since its last one in every particle under a model of the table (the search's playout
policy, ``planner`` by default; a deterministic batched player): a particle survives when the
replay reaches exactly the observation the observer now sees (the same table, discards,
known cards, hand sizes, passes and totals). Survivors are carried on, moved to their new
hands, with their *age* (how many replays in a row they survived).

A uniform layout rarely survives: the seats must hold the very cards they went on to play. So
new layouts are made where the play is known: what each seat played and took in the interval
is read from the two observations (:func:`interval`, or from a survivor's replay), the new
position's unseen cards are laid out uniformly, the interval is undone in each (the cards
played given back, the cards taken taken away) and those whose replay reaches the observation
join the survivors. Fresh uniform layouts fill the set up to its size, so a table the model
does not describe costs nothing but the replays. :meth:`LayoutTracker.worlds` hands the search
the oldest layouts first.

Against a table that plays exactly as the model, every survivor is a layout the intervals it
was replayed through could have come from, and the true layout, once among the particles,
stays there for the rest of its hand. Everything comes from the observer's observations and
its own actions, in order, within a game begun by :meth:`LayoutTracker.reset`: nothing hidden
is read. ``benchmarks/layout_inference.py`` measures how much the kept layouts know.
"""

from __future__ import annotations

import copy
from itertools import combinations
from typing import Any

import numpy as np

from agents.worlds import position, sample_hands
from odin_env.batched import BatchedGames
from odin_env.combos import COMBO_BITS, is_combo
from odin_env.observation import card_sets, hand_sizes, players_of, views
from odin_env.rules import Config, Game

PARTICLES = 512
"""Layouts kept and replayed at each of the observer's decisions."""
READINGS = 3
"""Most readings of an interval (:func:`interval`) a tracker tries."""
MAX_STEPS = 64
"""Bounds a replay's loop per interval: the other seats act a few times between two of the
observer's turns."""


def interval(
    before: np.ndarray, after: np.ndarray, faced: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """What each other seat (slot order) may have played and taken between two of the
    observer's observations of one hand, read from the observations alone: ``(played, taken)``
    card-set ints per slot, one pair per reading that fits (none when they cannot be read, or
    are not of one hand). ``faced``: the card-set int of the cards on the table (or to be taken
    from) before or after the observer acted: none of them was played in the interval.

    A seat whose hand changed played once and took the cards that it now has known and had
    not. The cards newly seen (discarded, on the table, taken) but for ``faced`` are the ones
    played; the last seat to play has the combo on the table, the others the rest, split
    into combos of the sizes their hands lost (every split that fits, when two seats share
    it)."""
    n = players_of(views(after))
    if players_of(views(before)) != n:
        return []
    sizes = [hand_sizes(views(o))[:n] for o in (before, after)]
    (_, _, _, discard0, *known0), (_, table, _, discard1, *known1) = (
        card_sets(before), card_sets(after),
    )  # fmt: skip
    if discard0 & ~discard1:
        return []  # the discards were cleared: a new hand
    changed = [k for k in range(1, n) if sizes[0][k] != sizes[1][k] or known0[k] != known1[k]]
    played, taken = np.zeros(n, dtype=np.int64), np.zeros(n, dtype=np.int64)
    if not changed:
        return [(played, taken)]
    if not table:
        return []
    seen = discard1 & ~discard0 | table
    for k in changed:
        taken[k] = known1[k] & ~known0[k]
        seen |= int(taken[k])
    rest = seen & ~faced & ~table
    lost = {k: int(sizes[0][k] - sizes[1][k]) + int(taken[k]).bit_count() for k in changed}
    last, early = changed[-1], changed[:-1]
    if lost[last] != table.bit_count() or sum(lost[k] for k in early) != rest.bit_count():
        return []
    played[last] = table
    if len(early) == 0:
        return [(played, taken)]
    if len(early) == 1:
        played[early[0]] = rest
        return [(played, taken)] if is_combo(rest) else []
    if len(early) > 2:
        return []
    readings = []
    cards = [1 << c for c in range(rest.bit_length()) if rest >> c & 1]
    for chosen in combinations(cards, lost[early[0]]):
        first = sum(chosen)
        if is_combo(first) and is_combo(rest & ~first):
            split = played.copy()
            split[early[0]], split[early[1]] = first, rest & ~first
            readings.append((split, taken))
    return readings


def replay_engine(
    engines: dict[tuple[Config, int], BatchedGames], config: Config, batch: int
) -> BatchedGames:
    """A batched engine of ``batch`` slots that replays turns one at a time (no forced decision
    applied unasked, no next hand drawn), kept in ``engines`` (the four last used)."""
    key = (config, batch)
    if key not in engines:
        if len(engines) >= 4:
            engines.pop(next(iter(engines)))
        engines[key] = BatchedGames(config, batch, seed=0, auto_forced=False, next_hand=False)
    return engines[key]


def replay(
    engines: dict[tuple[Config, int], BatchedGames],
    policy: Any,
    start: Game,
    hands: np.ndarray,
    actions: list[int],
    targets: list[np.ndarray],
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Replay from the position ``start`` in each layout ``hands`` (a :func:`replay_engine` of
    ``engines``): the observer (seat 0) takes ``actions[j]`` after reaching ``targets[j - 1]``
    (``actions[0]`` at once), ``policy`` acts in the other seats. Returns how many of
    ``targets`` each replay reaches in order, its hands at the last one reached and at the one
    before (meaningful where all are). A forced decision of the observer's is applied (a table
    may not show it) unless the next target is reached; a choice that does not reach it ends
    the replay."""
    count, k = len(hands), len(targets)
    wanted = np.stack(targets)
    engine = replay_engine(engines, start.config, count)
    engine.load(np.arange(count), start, hands=hands)
    engine.step(np.full(count, actions[0], dtype=np.int64))
    matched = np.zeros(count, dtype=np.int64)
    chosen = np.zeros(count, dtype=np.int64)
    before = hands.copy()
    mine_actions = np.array(actions, dtype=np.int64)
    for _ in range(MAX_STEPS * k):
        rows = np.flatnonzero(~engine.held)
        if rows.size == 0:
            break
        mine = rows[engine.seat[rows] == 0]
        if mine.size:
            same = (engine.obs[mine] == wanted[matched[mine]]).all(axis=1)
            forced = engine.legal_count[mine] == 1
            matched[mine[same]] += 1
            done = same & (matched[mine] == k)
            engine.hold(mine[done | ~(same | forced)])
            go = mine[same & ~done]
            chosen[go] = mine_actions[matched[go]]
            last = go[matched[go] == k - 1]
            if last.size:
                before[last] = engine.hands()[last]
            blind = mine[forced & ~same]
            chosen[blind] = engine.first_legal[blind]
        others = rows[engine.seat[rows] != 0]
        if others.size:
            chosen[others] = policy.act_batch(engine.obs[others], engine.mask[others])
        if not (~engine.held).any():
            break
        engine.step(chosen)
    return matched, engine.hands(), before


def faced(seen: np.ndarray, game: Game, action: int) -> int:
    """The card-set int of the cards on the table, or to be taken from, before or after the
    observer took ``action`` at the observation ``seen`` (of the position ``game``): none of them
    was played in the interval that followed."""
    _, table, take, *_ = card_sets(seen)
    game = copy.deepcopy(game)
    game.apply(action)
    return table | take | (COMBO_BITS[game.table] if game.table >= 0 else 0)


class LayoutSet:
    """What a search draws its worlds from when it remembers the game (:class:`LayoutTracker`,
    :class:`agents.posterior.HandPosterior`): the layouts ``hands`` (slot order) kept of the
    position last observed, in the order the search takes them, and their ``ages`` (how many
    intervals each agrees with; 0: fresh). Subclasses set ``_game``, ``_unseen`` and ``_needs``
    (:func:`agents.worlds.position` of that observation) and reset ``_next`` to 0 there."""

    hands: np.ndarray
    ages: np.ndarray
    _game: Game | None
    _unseen: np.ndarray
    _needs: list[int]
    _next: int

    def worlds(self, count: int, rng: np.random.Generator) -> np.ndarray:
        """The next ``count`` layouts of the set (each call of one decision goes on where the
        last stopped), then fresh uniform ones once the set is spent."""
        take = self.hands[self._next : self._next + count]
        self._next += len(take)
        if len(take) == count:
            return take
        extra = sample_hands(self._game, self._unseen, self._needs, count - len(take), rng)
        return np.concatenate([take, extra])

    def shows(self, game: Game, unseen: np.ndarray, needs: list[int]) -> bool:
        """Whether the layouts are of this position (:func:`agents.worlds.position` of an
        observation): the one last observed."""
        last = self._game
        return (
            last is not None
            and needs == self._needs
            and np.array_equal(unseen, self._unseen)
            and last.hands[0] == game.hands[0]
            and last.known == game.known
        )

    def survivors(self) -> int:
        """How many layouts of the set agree with at least one interval."""
        return int((self.ages > 0).sum())


class LayoutTracker(LayoutSet):
    """Particles of the hidden layout, filtered by replaying the other seats with ``policy`` (a
    batched player, ``act_batch``); see the module docstring. Call :meth:`observe` with every
    observation the observer is shown (in order), :meth:`decided` with the action it took, and
    :meth:`reset` at a new game. Its layouts come oldest first."""

    def __init__(self, policy: Any, particles: int = PARTICLES):
        if isinstance(particles, bool) or not isinstance(particles, int) or particles < 1:
            raise ValueError(f"particles must be an integer >= 1; got {particles!r}")
        if not callable(getattr(policy, "act_batch", None)):
            raise ValueError(f"policy must be a batched player (act_batch); got {policy!r}")
        self.policy, self.size = policy, particles
        self._engines: dict[tuple[Config, int], BatchedGames] = {}
        self.reset()

    def reset(self) -> None:
        """Forget the game: the next observation starts from uniform layouts."""
        self.hands = np.zeros((0, 0), dtype=np.int64)
        self.ages = np.zeros(0, dtype=np.int64)
        self._game = self._action = self._seen = None
        self._next = 0

    def observe(self, observation: np.ndarray, rng: np.random.Generator) -> None:
        """Replay the particles to ``observation`` (keeping those that reach it), add layouts of
        it that a survivor shows to agree with the interval too, and fill the set with fresh
        uniform layouts of the position it shows."""
        game, _, unseen, needs = position(observation, None)
        n = len(needs)
        survivors, ages = np.zeros((0, n), dtype=np.int64), np.zeros(0, dtype=np.int64)
        if self._game is not None and self._action is not None and len(self.hands):
            kept, survivors = self._replay(self.hands, observation)
            ages, before = self.ages[kept], self.hands[kept]
            if len(survivors):
                # What each seat played and took in the interval is the same in every layout
                # that reaches the observation.
                readings = [(before[0] & ~survivors[0], survivors[0] & ~before[0])]
            else:
                readings = interval(
                    self._seen, observation, faced(self._seen, self._game, self._action)
                )[:READINGS]
            more = np.zeros((0, n), dtype=np.int64)
            for played, taken in readings:
                # Lay the new position's unseen cards out afresh, undo the interval in each
                # layout (the observer's hand as it was), and keep those whose replay reaches
                # the observation as well.
                undone = (sample_hands(game, unseen, needs, self.size, rng) | played) & ~taken
                undone[:, 0] = self._game.hands[0]
                try:
                    found = self._replay(undone, observation)[1]
                except ValueError:  # a reading that does not fit the last position
                    continue
                more = np.concatenate([more, found])
            if len(more):
                survivors = np.concatenate([survivors, more])
                ages = np.concatenate([ages, np.zeros(len(more), dtype=np.int64)])
                # duplicates (the same layout found both ways) are kept once, the oldest
                _, first = np.unique(survivors, axis=0, return_index=True)
                first = np.sort(first)
                survivors, ages = survivors[first], ages[first]
        fresh = sample_hands(game, unseen, needs, max(self.size - len(survivors), 0), rng)
        self.hands = np.concatenate([survivors, fresh])
        self.ages = np.concatenate([ages + 1, np.zeros(len(fresh), dtype=np.int64)])
        # the search takes the oldest first; among equals, those carried on before those found
        # by undoing the interval, before fresh ones (each group in random order already)
        order = np.argsort(-self.ages, kind="stable")[: self.size]
        self.hands, self.ages = self.hands[order], self.ages[order]
        self._game, self._action, self._needs, self._unseen = game, None, needs, unseen
        self._seen, self._next = observation.copy(), 0  # a table may reuse its array

    def decided(self, action: int) -> None:
        """The observer took ``action`` at the observation last given to :meth:`observe`."""
        self._action = int(action)

    def _replay(self, hands: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Of the layouts ``hands`` of the last observed position, those whose replay (the
        observer's action, then ``policy`` in the other seats) reaches the observation
        ``target``: their indices in ``hands`` and their hands there (:func:`replay`)."""
        matched, reached, _ = replay(
            self._engines, self.policy, self._game, hands, [self._action], [target]
        )
        keep = np.flatnonzero(matched == 1)
        return keep, reached[keep]


__all__ = ["PARTICLES", "LayoutSet", "LayoutTracker", "replay"]
