"""Layouts of the hidden cards that agree with the whole hand so far (``search:N:post``).

The search samples layouts of the cards it has not seen; uniform sampling ignores what the
other seats have shown by their plays and passes. A :class:`HandPosterior` keeps layouts of the
hand's start (the observer's first decision of the hand) and checks each against every interval
since: it replays the hand from that start under a deterministic model of the table (a batched
player, ``planner`` by default; :func:`replay`), applying the observer's own actions, and a
layout agrees when the replay reaches each observation the observer was shown, in order (the
same table, discards, known cards, hand sizes, passes and totals). Where the model is exact,
the layouts that agree are exactly those the deal could have been, given everything seen.

It samples them as a particle filter with Markov chain Monte Carlo moves. At each decision the
particles are replayed through the hand so far; those that no longer agree are replaced by
copies of those that do, and then each round proposes, in every particle, to exchange two unseen
cards between two places (two seats, or a seat and the cards set aside), accepted when the new
layout agrees too. The proposal is symmetric, so the chain's stationary law is uniform over the
layouts that agree: the posterior of a uniform deal under the model. When fewer than a quarter
agree, layouts are also made where the play is known: what each seat played and took in each
interval is read from the observations (:func:`interval`) or from an agreeing layout's replay,
and every interval of the hand is undone in uniform layouts of the position
(:meth:`HandPosterior._undone`); when none
agrees at all, the model does not explain the hand (or nothing was found), and the posterior
starts again from uniform layouts of the position it is shown.

Everything comes from the observer's observations and its own actions, in order, within a game
begun by :meth:`HandPosterior.reset`: nothing hidden is read.
"""

from __future__ import annotations

import copy
from itertools import combinations, islice, product
from typing import Any

import numpy as np

from agents.worlds import position, sample_hands
from odin_env.batched import BatchedGames
from odin_env.combos import COMBO_BITS, is_combo
from odin_env.observation import card_sets, hand_sizes, players_of, views
from odin_env.rules import Config, Game

PARTICLES = 256
"""Layouts of the hand's start kept and replayed."""
ROUNDS = 4
"""Exchange proposals per particle at each of the observer's decisions."""
READINGS = 3
"""Most readings of the intervals of a hand (:func:`interval`) the posterior tries."""
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


class HandPosterior:
    """Layouts of the hidden cards that agree with the whole hand so far under ``policy``; see
    the module docstring. Call :meth:`observe` with every observation the observer is shown (in
    order), :meth:`decided` with the action it took, and :meth:`reset` at a new game.
    ``hands``: the layouts (slot order) of the position last observed, which the search takes
    in order (:meth:`worlds`); ``ages``: how many intervals of the hand each agrees with. Its
    layouts all agree with the hand so far; at the hand's first decision, or where it started
    again, they are uniform (:meth:`survivors` is 0)."""

    def __init__(self, policy: Any, particles: int = PARTICLES, rounds: int = ROUNDS):
        for name, value, least in (("particles", particles, 1), ("rounds", rounds, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"{name} must be an integer >= {least}; got {value!r}")
        if not callable(getattr(policy, "act_batch", None)):
            raise ValueError(f"policy must be a batched player (act_batch); got {policy!r}")
        self.policy, self.size, self.rounds = policy, particles, rounds
        self._engines: dict[tuple[Config, int], BatchedGames] = {}
        self.reset()

    def reset(self) -> None:
        """Forget the game: the next observation starts a hand."""
        self._start: Game | None = None
        self._game: Game | None = None
        self._actions: list[int] = []
        self._shown: list[np.ndarray] = []
        self.hands = np.zeros((0, 0), dtype=np.int64)
        self.ages = np.zeros(0, dtype=np.int64)
        self._next = 0

    def observe(self, observation: np.ndarray, rng: np.random.Generator) -> None:
        """Check the particles against ``observation`` too, move them by :attr:`rounds` rounds of
        exchanges, and keep the layouts of this position that agree with the whole hand."""
        game, _, unseen, needs = position(observation, None)
        self._game, self._unseen, self._needs, self._next = game, unseen, needs, 0
        if (
            self._start is None
            or len(self._actions) != len(self._shown)
            or self._new_hand(observation, game)
        ):
            self._begin(game, unseen, needs, observation, rng)
            return
        self._shown.append(observation.copy())
        self._games.append(game)
        k = len(self._shown) - 1
        seen = self._shown[-2]
        self._flows.append(
            interval(seen, observation, faced(seen, self._games[-2], self._actions[-1]))
        )
        matched, reached, before = self._replay(self._layouts(self._places))
        if (matched == k).sum() < self.size // 4:
            found = self._undone(rng)
            if len(found):
                more, there, then = self._replay(found)
                keep = np.flatnonzero(more == k)
                lost = np.flatnonzero(matched < k)[: keep.size]
                keep = keep[: lost.size]
                self._places[lost] = self._places_of(found[keep])
                matched[lost], reached[lost], before[lost] = k, there[keep], then[keep]
        agree = np.flatnonzero(matched == k)
        if agree.size:  # the ones that no longer agree restart from those that do
            lost = np.flatnonzero(matched < k)
            copies = rng.choice(agree, size=lost.size)
            self._places[lost], matched[lost] = self._places[copies], k
            reached[lost], before[lost] = reached[copies], before[copies]
            # what each seat played and took in the interval, as one agreeing layout shows it
            # (the undoing of a later interval starts from it; the replays judge what it makes)
            played, taken = (
                before[agree[0]] & ~reached[agree[0]],
                reached[agree[0]] & ~before[agree[0]],
            )
            played[0] = taken[0] = 0
            self._flows[-1] = [(played, taken)]
        else:  # the model does not explain the hand (or no layout was found): start again here
            self._begin(game, unseen, needs, observation, rng)
            return
        for _ in range(self.rounds):
            proposed = self._exchange(self._places, rng)
            more, there, _ = self._replay(self._layouts(proposed))
            accept = more == k
            self._places[accept], matched[accept], reached[accept] = (
                proposed[accept], more[accept], there[accept],
            )  # fmt: skip
        self.hands, self.ages = reached, np.full(self.size, k, dtype=np.int64)  # all agree

    def _undone(self, rng: np.random.Generator) -> np.ndarray:
        """Layouts of the hand's start made from uniform layouts of the last position by undoing
        every interval since (what each seat played given back, what it took taken away), as
        agreeing layouts showed it or, where none did, as its observations read it
        (:func:`interval`; at most :data:`READINGS` ways in all). None when an
        interval cannot be read."""
        found = [np.zeros((0, len(self._needs)), dtype=np.int64)]
        for flows in islice(product(*reversed(self._flows)), READINGS):
            hands = sample_hands(self._game, self._unseen, self._needs, self.size, rng)
            for played, taken in flows:
                hands = (hands | played) & ~taken
            hands[:, 0] = self._start.hands[0]
            sizes = np.bitwise_count(hands) == np.bitwise_count(self._layouts(self._places[:1]))
            fits = (self._layouts(self._places_of(hands)) == hands).all(axis=1) & sizes.all(axis=1)
            found.append(hands[fits])
        return np.concatenate(found)

    def decided(self, action: int) -> None:
        """The observer took ``action`` at the observation last given to :meth:`observe`."""
        self._actions.append(int(action))

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

    def _begin(self, game, unseen, needs, observation, rng) -> None:
        """A new hand: uniform layouts of its first position, which agree with nothing yet."""
        self._start, self._unseen0, self._known0 = game, unseen, list(game.known)
        self._actions, self._shown, self._games, self._flows = [], [observation.copy()], [game], []
        template = np.zeros(unseen.size, dtype=np.int8)
        template[: sum(needs)] = np.repeat(np.arange(len(needs), dtype=np.int8), needs)
        order = np.argsort(rng.random((self.size, unseen.size)), axis=1)
        self._places = template[order]
        self.hands = self._layouts(self._places)
        self.ages = np.zeros(self.size, dtype=np.int64)

    def _new_hand(self, observation: np.ndarray, game: Game) -> bool:
        """Whether ``observation`` is of a later hand than the last one (the totals moved, or
        the discards were cleared)."""
        last, before = self._shown[-1], self._games[-1]
        discard0, discard1 = card_sets(last)[3], card_sets(observation)[3]
        return before.totals != game.totals or bool(discard0 & ~discard1)

    def _layouts(self, places: np.ndarray) -> np.ndarray:
        """``(particles, players)`` card-set ints of the hand's start from each particle's places
        of the start's unseen cards (0: set aside, else the seat)."""
        bits = np.left_shift(np.int64(1), self._unseen0)
        hands = np.zeros((len(places), len(self._known0)), dtype=np.int64)
        hands[:, 0] = self._start.hands[0]
        for s in range(1, hands.shape[1]):
            hands[:, s] = self._known0[s] | np.where(places == s, bits, 0).sum(axis=1)
        return hands

    def _places_of(self, hands: np.ndarray) -> np.ndarray:
        """Each layout's places of the start's unseen cards (the inverse of :meth:`_layouts`
        where the layout is one of the start)."""
        held = (hands[:, :, None] >> self._unseen0[None, None, :]) & 1
        return (held * np.arange(hands.shape[1])[None, :, None]).sum(axis=1).astype(np.int8)

    @staticmethod
    def _exchange(places: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Each particle with two cards in two places exchanges them: a card held by a seat,
        uniformly, and a card in another place, uniformly (a symmetric proposal: seat sizes do
        not change)."""
        rows = np.arange(len(places))
        held = places > 0
        first = np.argmax(np.where(held, rng.random(places.shape), -1.0), axis=1)
        where = places[rows, first]
        other = (places != where[:, None]) & held.any(axis=1, keepdims=True)
        second = np.argmax(np.where(other, rng.random(places.shape), -1.0), axis=1)
        moved = places.copy()
        able = other.any(axis=1)
        moved[rows[able], first[able]] = places[rows[able], second[able]]
        moved[rows[able], second[able]] = where[able]
        return moved

    def _replay(self, hands: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Replay the hand from its start in each layout ``hands`` through every observation since
        (:func:`replay`)."""
        return replay(
            self._engines, self.policy, self._start, hands, self._actions, self._shown[1:]
        )


__all__ = ["PARTICLES", "ROUNDS", "HandPosterior"]
