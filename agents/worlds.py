"""The worlds a search plays in: the position an observer sees, read from its observation alone
(:func:`position`), and layouts of the cards it has not seen that agree with everything public
(:func:`sample_hands`), for :mod:`agents.search`, which samples and plays them."""

from __future__ import annotations

import numpy as np

from agents.hand import see
from odin_env.cards import GOAT, cards_of, deck_bits
from odin_env.observation import threshold_of, views
from odin_env.rules import NUM_ACTIONS, Config, Game
from odin_env.symmetry import colours_in_play

_NO_MASK = np.zeros(NUM_ACTIONS, dtype=np.int8)


def position(observation: np.ndarray, action_mask: np.ndarray | None) -> tuple:
    """The position the observer sees, as a ``rules.Game`` with itself in seat 0 (any layout of
    the unseen cards), its config, the unseen cards (ids) and how many of them each seat holds.
    The first-player rule is not observable; it matters only after the hand."""
    # The mask only says which actions are legal; the position is read from the observation.
    seen = see(observation, _NO_MASK if action_mask is None else action_mask)
    v = views(observation)
    n = seen.players
    threshold = threshold_of(observation)
    colours = int(colours_in_play(observation[None])[0])
    config = Config(players=n, threshold=threshold, colours=colours, goat=seen.goat)
    totals = [int(round(p * threshold)) for p in seen.penalties]
    table = seen.table
    placed = seen.hand | seen.discard | table | seen.take
    for known in seen.known:
        placed |= known
    # G1: a Goat the observer cannot place is in a hand (it is never set aside), listed first.
    unseen = cards_of(deck_bits(colours, seen.goat) & ~placed)
    if unseen and unseen[-1] == GOAT:  # the highest id: move it to the front
        unseen = [GOAT, *unseen[:-1]]
    needs = [0] + [seen.sizes[s] - seen.known[s].bit_count() for s in range(1, n)]
    hands = [cards_of(seen.hand)]
    rest = list(unseen)
    for s in range(1, n):
        hands.append(cards_of(seen.known[s]) + rest[: needs[s]])
        rest = rest[needs[s] :]
    passes = int(round(float(v["passes"][0]) * (n - 1)))
    following = bool(table) and not seen.take
    game = Game.from_position(
        config,
        hands,
        0,
        table=cards_of(table) if table else None,
        owner=seen.owner if following else None,
        take_from=cards_of(seen.take) if seen.take else None,
        passes=passes if following else 0,
        discard=cards_of(seen.discard),
        known=[cards_of(k) for k in seen.known],
        totals=totals,
    )
    return game, config, np.array(unseen, dtype=np.int64), needs


def sample_hands(
    game: Game, unseen: np.ndarray, needs: list[int], worlds: int, rng: np.random.Generator
) -> np.ndarray:
    """``(worlds, players)`` card-set ints: seat 0's hand as it is; every other seat its known
    cards plus ``needs[s]`` unseen cards, the unseen cards shuffled uniformly per world. An
    unseen Goat (listed first) is always dealt (G1): it takes a hidden place drawn uniformly,
    the other places uniformly drawn coloured cards."""
    n = len(needs)
    hands = np.zeros((worlds, n), dtype=np.int64)
    hands[:, 0] = game.hands[0]
    if unseen.size == 0 or sum(needs) == 0:
        hands[:, 1:] = np.array(game.known[1:], dtype=np.int64)
        return hands
    goat = game.config.goat and unseen[0] == GOAT
    cards = unseen[1:] if goat else unseen
    order = np.argsort(rng.random((worlds, cards.size)), axis=1)
    bits = np.left_shift(np.int64(1), cards[order])
    if goat:  # the Goat goes into a uniform hidden place, the coloured cards after it move on
        slot = rng.integers(sum(needs), size=(worlds, 1))
        place = np.arange(unseen.size)[None, :]
        shifted = np.concatenate([bits, np.zeros((worlds, 1), dtype=np.int64)], axis=1)
        before = np.take_along_axis(shifted, np.minimum(place, cards.size), axis=1)
        after = np.take_along_axis(shifted, np.maximum(place - 1, 0), axis=1)
        bits = np.where(place < slot, before, np.where(place == slot, np.int64(1) << GOAT, after))
    start = 0
    for s in range(1, n):
        stop = start + needs[s]
        hands[:, s] = game.known[s] | bits[:, start:stop].sum(axis=1)
        start = stop
    return hands


__all__ = ["position", "sample_hands"]
