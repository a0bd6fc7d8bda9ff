"""The search's layout tracker (``agents.tracker``, ``search:N:track``): a layout that is the
truth survives every replay of its hand when the table plays as the model, layouts that could
not have produced the seats' actions are dropped, what it hands the search agrees with
everything public, it reads nothing but the observations, and its spec is parsed strictly."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from lockstep import play_in_lockstep

from agents.heuristics import HEURISTICS
from agents.registry import check_spec, make
from agents.search import SearchAgent, _position
from agents.tracker import LayoutTracker, interval
from odin_env.combos import COMBO_BITS
from odin_env.observation import observe
from odin_env.rules import Config, Game


def _truth(game: Game, seat: int) -> np.ndarray:
    n = game.config.players
    return np.array([game.hands[(seat + k) % n] for k in range(n)], dtype=np.int64)


@pytest.mark.parametrize("players", [3, 4, 5])
def test_the_true_layout_survives_every_replay_of_its_hand_and_others_are_dropped(
    players: int,
) -> None:
    """``planner`` in every seat (forced decisions applied without asking, as a tournament
    does); at the observer's first decision of each hand the true layout is put among the
    particles. At every later decision of that hand it is still there, aged, and every particle
    keeps each seat's hand size and known cards; the replays drop layouts (not all survive)."""
    config = Config(players=players, threshold=12)
    kept = dropped = 0
    for seed in range(3):
        game = Game(config, seed=seed)
        observer = seed % players
        players_ = [make("planner", seed=seed + s) for s in range(players)]
        tracker = LayoutTracker(HEURISTICS["planner"](), particles=64)
        rng = np.random.default_rng(seed)
        hand = planted = None
        while not game.is_over:
            seat = game.current
            if len(game.legal) > 1 and seat == observer:
                tracker.observe(observe(game, seat), rng)
                truth = _truth(game, seat)
                if game.hand_number == planted:
                    found = np.flatnonzero((tracker.hands == truth).all(axis=1))
                    assert found.size and tracker.ages[found[0]] > 0, (seed, hand)
                    kept += 1
                    dropped += tracker.survivors() < 64
                known = np.array([game.known[(seat + k) % players] for k in range(players)])
                sizes = [game.hands[(seat + k) % players].bit_count() for k in range(players)]
                assert ((tracker.hands & known) == known).all()
                assert (np.bitwise_count(tracker.hands) == sizes).all()
                if game.hand_number != planted:
                    tracker.hands[-1], tracker.ages[-1] = truth, 0
                    planted = game.hand_number
                action = players_[seat].act(observe(game, seat), game.legal_mask())
                tracker.decided(action)
            elif len(game.legal) > 1:
                action = players_[seat].act(observe(game, seat), game.legal_mask())
            else:
                action = game.legal[0]
            hand = game.hand_number
            game.apply(action)
    assert kept > 20 and dropped > 5, (kept, dropped)


def test_worlds_come_oldest_first_then_fresh_ones() -> None:
    game = Game(Config(players=4), seed=7)
    game.play_forced()
    tracker = LayoutTracker(HEURISTICS["planner"](), particles=16)
    rng = np.random.default_rng(0)
    tracker.observe(observe(game, game.current), rng)
    tracker.ages[:] = np.arange(16)[::-1]  # as if the first had survived the most replays
    first = tracker.worlds(10, rng)
    assert np.array_equal(first, tracker.hands[:10])
    more = tracker.worlds(10, rng)
    assert np.array_equal(more[:6], tracker.hands[10:]) and more.shape == (10, 4)
    assert (np.bitwise_count(more[6:]) == np.bitwise_count(tracker.hands[:4])).all()


@pytest.mark.parametrize("seed", [1, 2])
def test_games_that_look_the_same_to_the_seat_get_the_same_actions_and_scores(seed: int) -> None:
    """One hand in lockstep in two games whose other seats' hidden cards differ: the observer's
    observations are the same, and so are ``search:N:track``'s actions and scores; its replays
    kept layouts, and its scores differ from the plain search's."""
    seen, twin, plain, survived = play_in_lockstep(
        seed, {"track": True}, lambda search: search.tracker.survivors()
    )
    assert seen == twin and len(seen) >= 3
    assert survived >= 1
    assert seen != plain[: len(seen)]


def test_the_spec_takes_track_and_refuses_it_twice_or_in_a_goat_game() -> None:
    agent = make("search:64:net:one:track", seed=0)
    assert isinstance(agent, SearchAgent) and agent.tracker is not None
    assert agent.tracker.policy is agent.policy  # the replays model the table as the playouts do
    assert make("search:64", seed=0).tracker is None
    for bad in ("search:64:track:track", "search:track:64", "search:64:tracks"):
        with pytest.raises(ValueError, match="bad search spec"):
            check_spec(bad)
    game = Game(Config(players=3, goat=True), seed=1)
    game.play_forced()
    with pytest.raises(ValueError, match="Goat"):
        agent.act(observe(game, game.current), game.legal_mask())
    with pytest.raises(ValueError, match="particles must be an integer >= 1"):
        LayoutTracker(HEURISTICS["planner"](), particles=0)


@pytest.mark.parametrize("players", [3, 4, 5])
def test_the_readings_of_an_interval_hold_what_the_seats_really_played_and_took(
    players: int,
) -> None:
    """Between two of the observer's decisions of one hand (every decision shown, forced ones
    too), :func:`interval` reads from the observations alone what each other seat played and
    took: when it gives readings, the truth (from the hidden hands) is one of them, and it
    gives them for most intervals."""
    config = Config(players=players, threshold=12)
    read = unread = 0
    for seed in range(4):
        game = Game(config, seed=seed)
        observer = seed % players
        players_ = [make("planner", seed=seed + s) for s in range(players)]
        last = None  # (observation, hands, faced, hand number) at the observer's last decision
        while not game.is_over:
            seat = game.current
            if seat == observer:
                obs = observe(game, seat)
                hands = _truth(game, seat)
                if last is not None and game.hand_number == last[3]:
                    readings = interval(last[0], obs, last[2])
                    truth = (last[1] & ~hands, hands & ~last[1])
                    truth[0][0] = truth[1][0] = 0
                    if readings:
                        assert any(
                            np.array_equal(p, truth[0]) and np.array_equal(t, truth[1])
                            for p, t in readings
                        ), (seed, readings, truth)
                        read += 1
                    else:
                        unread += 1
                action = players_[seat].act(obs, game.legal_mask())
                after = copy.deepcopy(game)
                after.apply(action)
                faced = (game.take_from or 0) | (COMBO_BITS[game.table] if game.table >= 0 else 0)
                faced |= COMBO_BITS[after.table] if after.table >= 0 else 0
                last = (obs, hands, faced, game.hand_number)
            else:
                action = players_[seat].act(observe(game, seat), game.legal_mask())
            game.apply(action)
    assert read > 40 and read > 2 * unread, (read, unread)


def test_a_hint_on_another_position_samples_that_position() -> None:
    """The tracker's layouts are of the position it was last shown: a person's hint on another
    one (``evaluate``) samples that one instead of playing out layouts that do not fit it."""
    agent = make("search:32:track", seed=0)
    agent.reset(0, seed=0)
    seen = []
    for seed in (3, 4):
        game = Game(Config(players=4), seed=seed)
        game.play_forced()
        seen.append((observe(game, game.current), game.legal_mask()))
    agent.act(*seen[0])
    parts = [_position(obs, mask) for obs, mask in seen]
    assert agent.tracker.shows(*_where(parts[0]))
    assert not agent.tracker.shows(*_where(parts[1]))
    scores = agent.evaluate(*seen[1])
    assert np.array_equal(scores.actions, np.flatnonzero(seen[1][1]))


def _where(part: tuple) -> tuple:
    game, _, unseen, needs = part
    return game, unseen, needs
