"""``BatchedGames.load``: a position put into a slot plays on exactly as ``rules.Game`` does.

The reference is the pure engine: a game is played at random to some decision, loaded into one
slot of a running batch (as it is, or with its unseen cards laid out differently), and then both
engines play the same random actions to the game's end, compared at every decision.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest

from odin_env.batched import BatchedGames
from odin_env.cards import cards_of
from odin_env.combos import COMBO_BITS
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.spec import PLAY_BITS


def _position(config: Config, seed: int, steps: int) -> Game:
    """A game after about ``steps`` random decisions, at a decision with a real choice."""
    game = Game(config, seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        game.apply(game.legal[rng.integers(len(game.legal))])
        game.play_forced()
        if game.is_over:
            game = Game(config, seed=seed + 1000)
    game.play_forced()
    return game


def _play_on(
    engine: BatchedGames, slot: int, game: Game, seed: int, hand_only: bool = False
) -> int:
    """Play random actions in both engines until ``game`` ends (its hand ends, with
    ``hand_only``); returns the decisions checked."""
    rng = np.random.default_rng(seed)
    checked = 0
    while True:
        assert engine.seat[slot] == game.current
        assert np.array_equal(engine.mask[slot], game.legal_mask())
        assert np.array_equal(engine.obs[slot], observe(game, game.current))
        assert engine.hands()[slot].tolist() == list(game.hands)
        actions = engine.first_legal
        actions[slot] = game.legal[rng.integers(len(game.legal))]
        engine.step(actions)
        paid = game.apply(int(actions[slot]))
        if not game.is_over:
            forced = game.play_forced()
            if forced is not None:
                paid = forced if paid is None else [a + b for a, b in zip(paid, forced)]
        assert engine.rewards[slot].tolist() == (paid or [0.0] * game.config.players)
        assert engine.done[slot] == game.is_over
        checked += 1
        if hand_only and engine.hand_end[slot]:
            assert engine.penalties[slot].tolist() == list(game.history[-1])
            return checked
        if game.is_over:
            assert engine.final_totals[slot].tolist() == game.totals
            assert tuple(np.flatnonzero(engine.winners[slot]).tolist()) == game.winners
            return checked


@pytest.mark.parametrize("players", [2, 3, 4, 6])
def test_a_loaded_position_plays_on_as_rules_game(players: int) -> None:
    config = Config(players=players, threshold=12)
    engine = BatchedGames(config, batch=5, seed=7)
    for seed in range(6):
        game = _position(config, seed, steps=seed * 9)
        engine.load([seed % 5], game)
        assert _play_on(engine, seed % 5, copy.deepcopy(game), seed) > 0


def _relaid(game: Game, rng: np.random.Generator) -> list[int]:
    """The game's hands with the cards nobody has seen (not known, not public) dealt anew."""
    known = game.known
    unseen = [c for s, h in enumerate(game.hands) for c in cards_of(h & ~known[s])]
    unseen += cards_of(game.set_aside)
    rng.shuffle(unseen)
    hands = []
    for s, h in enumerate(game.hands):
        count = h.bit_count() - known[s].bit_count()
        hands.append(known[s] | sum(1 << c for c in unseen[:count]))
        unseen = unseen[count:]
    return hands


@pytest.mark.parametrize("players", [3, 4, 5])
def test_other_hidden_hands_play_as_that_position(players: int) -> None:
    config = Config(players=players, threshold=12)
    engine = BatchedGames(config, batch=4, seed=3)
    rng = np.random.default_rng(players)
    for seed in range(5):
        game = _position(config, 100 + seed, steps=4 + seed * 7)
        layouts = [_relaid(game, rng) for _ in range(3)]
        engine.load([3, 0, 1], game, hands=np.array(layouts, dtype=np.int64))
        for row, slot in enumerate([3, 0, 1]):
            table = cards_of(COMBO_BITS[game.table]) if game.table >= 0 else None
            same = Game.from_position(
                config,
                [cards_of(h) for h in layouts[row]],
                game.current,
                table=table,
                owner=game.owner if table is not None else None,
                take_from=cards_of(game.take_from) if game.take_from else None,
                passes=game.passes,
                discard=cards_of(game.discard),
                known=[cards_of(k) for k in game.known],
                totals=game.totals,
                hand_leader=game.hand_leader,
            )
            assert np.array_equal(engine.obs[slot], observe(same, same.current))
            assert np.array_equal(engine.mask[slot], same.legal_mask())
        # the last loaded row plays its hand on exactly as the game built from its hands (the
        # next deals differ: they come from the generators, not from the hands)
        assert _play_on(engine, 1, same, seed, hand_only=True) > 0


def test_bad_hands_are_refused_and_change_nothing() -> None:
    config = Config(players=4, threshold=12)
    engine = BatchedGames(config, batch=2, seed=1)
    game = _position(config, 5, steps=10)
    before = (engine.obs.copy(), engine.mask.copy(), engine.seat.copy())
    good = np.array([game.hands], dtype=np.int64)
    swapped = good.copy()
    swapped[0, [0, 1]] = swapped[0, [1, 0]]  # sizes or known cards no longer match
    doubled = good.copy()
    doubled[0, 1] |= good[0, 0] & -good[0, 0]  # a card in two hands
    bad_cases = [good[:, :3], good.astype(np.float64), doubled]
    if game.hands[0].bit_count() != game.hands[1].bit_count() or any(game.known[:2]):
        bad_cases.append(swapped)
    for bad in bad_cases:
        with pytest.raises(ValueError, match="hands must"):
            engine.load([0], game, hands=bad)
    with pytest.raises(ValueError, match="slots must"):
        engine.load([0, 0], game)
    over = Game(Config(players=4, threshold=12, episode="hand"), seed=1)
    with pytest.raises(ValueError, match="game must be"):
        engine.load([0], over)
    assert np.array_equal(engine.obs, before[0]) and np.array_equal(engine.mask, before[1])
    assert np.array_equal(engine.seat, before[2])


@pytest.mark.parametrize("goat", [False, True])
def test_a_held_game_ends_with_its_hand_and_waits_until_loaded(goat: bool) -> None:
    """``next_hand=False``: each slot plays its loaded hand exactly as ``rules.Game`` does, then
    waits: no legal action, any action ignored, outputs zero, its view unchanged, while the
    other slots play on; ``load`` starts it again. With a low threshold a hand also ends the
    game (``done`` at that step, then held the same way)."""
    for threshold, seed in ((12, 3), (1, 4)):
        config = Config(players=4, threshold=threshold, goat=goat)
        engine = BatchedGames(config, batch=3, seed=seed, next_hand=False)
        assert not engine.held.any()
        game = _position(config, seed, steps=6)
        rng = np.random.default_rng(seed)
        layout = _relaid(game, rng)
        engine.load([0, 1, 2], game, hands=np.array([layout] * 3, dtype=np.int64))
        games = [
            Game.from_position(
                config,
                [cards_of(h) for h in layout],
                game.current,
                table=cards_of(PLAY_BITS[game.table]) if game.table >= 0 else None,
                owner=game.owner if game.table >= 0 else None,
                take_from=cards_of(game.take_from) if game.take_from else None,
                passes=game.passes,
                discard=cards_of(game.discard),
                known=[cards_of(k) for k in game.known],
                totals=game.totals,
                hand_leader=game.hand_leader,
            )
            for _ in range(3)
        ]
        ended = 0
        for _ in range(500):
            live = ~engine.held
            if not live.any():
                break
            before = engine.obs.copy()
            actions = np.full(3, 10**6, dtype=np.int64)  # not an action: a held slot ignores it
            for slot in np.flatnonzero(live):
                assert np.array_equal(engine.mask[slot], games[slot].legal_mask())
                assert np.array_equal(engine.obs[slot], observe(games[slot], games[slot].current))
                actions[slot] = games[slot].legal[rng.integers(len(games[slot].legal))]
            engine.step(actions)
            for slot in range(3):
                if not live[slot]:  # held: nothing moved, nothing paid
                    assert np.array_equal(engine.obs[slot], before[slot])
                    assert not engine.mask[slot].any() and not engine.rewards[slot].any()
                    assert not engine.done[slot] and not engine.hand_end[slot]
                    continue
                games[slot].apply(int(actions[slot]))
                if not games[slot].is_over:
                    games[slot].play_forced()
                hand_over = games[slot].is_over or len(games[slot].history) > len(game.history)
                assert engine.held[slot] == hand_over == engine.hand_end[slot]
                if hand_over:
                    ended += 1
                    assert engine.penalties[slot].tolist() == list(games[slot].history[-1])
                    assert engine.done[slot] == games[slot].is_over
                    assert not engine.mask[slot].any()
        assert ended == 3 and engine.held.all()
        assert [g.is_over for g in games] == [threshold == 1] * 3  # the game ended too, or not
        engine.load([1], game)  # back in play, exactly as the position shows
        assert engine.held.tolist() == [True, False, True]
        assert np.array_equal(engine.mask[1], game.legal_mask())
    with pytest.raises(ValueError, match="next_hand must be True or False"):
        BatchedGames(Config(players=4), batch=1, next_hand="no")


def test_hold_stops_a_game_where_it_is_until_loaded() -> None:
    """``hold``: the held slot neither moves nor pays while the others play on, its mask empty
    and its view as it was; ``load`` puts it back in play. An engine that deals the next hand
    refuses it, as it refuses bad slots."""
    config = Config(players=4)
    engine = BatchedGames(config, batch=3, seed=2, next_hand=False)
    game = _position(config, 5, steps=4)
    engine.load([0, 1, 2], game)
    engine.hold([1])
    assert engine.held.tolist() == [False, True, False] and not engine.mask[1].any()
    view, seat = engine.obs[1].copy(), int(engine.seat[1])
    for _ in range(3):
        engine.step(engine.first_legal)  # slot 1's entry is not legal: ignored
        assert np.array_equal(engine.obs[1], view) and engine.seat[1] == seat
        assert not engine.rewards[1].any() and not engine.hand_end[1]
    assert not np.array_equal(engine.obs[0], view)  # the others went on
    engine.load([1], game)
    assert not engine.held[1] and np.array_equal(engine.mask[1], game.legal_mask())
    with pytest.raises(ValueError, match="slots must be game indices 0-2"):
        engine.hold([3])
    with pytest.raises(ValueError, match="hold needs an engine built with next_hand=False"):
        BatchedGames(config, batch=1, seed=0).hold([0])
