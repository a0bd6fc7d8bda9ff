"""The whole-hand posterior of the hidden cards (``agents.posterior``, ``search:N:post``): the true
deal agrees with every observation of its hand when the table plays as the model, every layout
it keeps agrees with the whole hand on the rules engine too, its card exchanges keep every
hand's size and move two cards, it reads nothing but the observations, its readings of an
interval hold what the seats really did, a hint on another position samples that one, and its
spec is parsed strictly."""

from __future__ import annotations

import copy

import numpy as np
import pytest
from lockstep import play_in_lockstep

from agents.heuristics import HEURISTICS
from agents.posterior import HandPosterior, interval
from agents.registry import check_spec, make
from agents.search import SearchAgent, _position
from odin_env.combos import COMBO_BITS
from odin_env.observation import observe
from odin_env.rules import Config, Game


class _FirstLegal:
    """A wrong model of a table of ``planner``: the first legal action."""

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.argmax(mask, axis=1)


def _truth(game: Game, seat: int) -> np.ndarray:
    n = game.config.players
    return np.array([game.hands[(seat + k) % n] for k in range(n)], dtype=np.int64)


def _hands_of_planner(players: int, seeds: range, policy, check, plant: bool = False) -> None:
    """``planner`` in every seat of 2-hand games (forced decisions applied without asking, as a
    tournament does); an observer with a :class:`HandPosterior` under ``policy`` (with ``plant``:
    no exchanges, and the true deal put first among its particles at its first decision of each
    hand, where it stays while it agrees), and
    ``check(posterior, game, start_truth, j)`` at its ``j``-th decision of a hand (``j >= 1``)."""
    config = Config(players=players, threshold=12)
    for seed in seeds:
        game = Game(config, seed=seed)
        observer = seed % players
        players_ = [make("planner", seed=seed + s) for s in range(players)]
        posterior = HandPosterior(policy, particles=32, rounds=0 if plant else 2)
        rng = np.random.default_rng(seed)
        hand = start = None
        j = 0
        while not game.is_over and game.hand_number < 2:
            seat = game.current
            if len(game.legal) > 1 and seat == observer:
                obs = observe(game, seat)
                posterior.observe(obs, rng)
                if game.hand_number != hand:
                    hand, start, j = game.hand_number, _truth(game, seat), 0
                    if plant:
                        posterior._places[0] = posterior._places_of(start[None])[0]
                else:
                    j += 1
                    check(posterior, game, start, j)
                action = players_[seat].act(obs, game.legal_mask())
                posterior.decided(action)
            elif len(game.legal) > 1:
                action = players_[seat].act(observe(game, seat), game.legal_mask())
            else:
                action = game.legal[0]
            game.apply(action)


@pytest.mark.parametrize("players", [3, 4, 5])
def test_the_true_deal_agrees_with_every_observation_of_its_hand(players: int) -> None:
    """Replayed from the hand's start, the true deal reaches each observation the observer was
    shown, in order, and the true hands now; so a posterior that holds it never has to start the
    hand again. Under a wrong model (the first legal action) the truth fails."""
    right, wrong = [], []

    def check(posterior, game, start, j):
        assert len(posterior._shown) - 1 == j and posterior.survivors() >= 1
        assert np.array_equal(posterior._layouts(posterior._places[:1])[0], start)
        matched, reached, _ = posterior._replay(start[None])
        right.append(matched[0] == j and np.array_equal(reached[0], _truth(game, game.current)))
        model, posterior.policy = posterior.policy, _FirstLegal()
        wrong.append(posterior._replay(start[None])[0][0] == j)
        posterior.policy = model

    _hands_of_planner(players, range(4), HEURISTICS["planner"](), check, plant=True)
    assert all(right) and len(right) > 15, right
    assert not all(wrong)


@pytest.mark.parametrize("players", [3, 4])
def test_every_kept_layout_agrees_with_the_whole_hand_on_the_rules_engine(players: int) -> None:
    """Each layout of the hand's start the posterior keeps, played from the start on the rules
    engine (``rules.Game``, not the batched engine the posterior replays on) with the
    observer's actions and the Python ``planner`` in the other seats, shows the observer every
    observation it was shown; and the layouts the search gets are those replays' hands now."""
    checked = []
    planner = make("planner")

    def check(posterior, game, start, j):
        if len(posterior._shown) == 1:
            return  # started again here: nothing to agree with yet
        agree = posterior.ages > 0
        starts = posterior._layouts(posterior._places)
        for row in range(0, len(starts), 8):
            replay = copy.deepcopy(posterior._start)
            replay.hands = [int(h) for h in starts[row]]
            replay._decide()
            replay.apply(posterior._actions[0])
            for j, target in enumerate(posterior._shown[1:], start=1):
                for _ in range(200):
                    if replay.current == 0 and np.array_equal(observe(replay, 0), target):
                        break
                    seat = replay.current
                    if seat == 0:
                        assert len(replay.legal) == 1, "the observer's choice differs"
                        replay.apply(replay.legal[0])
                    else:
                        replay.apply(planner.act(observe(replay, seat), replay.legal_mask()))
                else:
                    raise AssertionError(f"observation {j} is not reached")
                if j < len(posterior._actions):
                    replay.apply(posterior._actions[j])
            assert any(np.array_equal(h, replay.hands) for h in posterior.hands[agree])
            checked.append(row)

    _hands_of_planner(players, range(5), HEURISTICS["planner"](), check)
    assert len(checked) > 20


def test_an_exchange_moves_two_cards_between_two_places_and_keeps_every_size() -> None:
    rng = np.random.default_rng(0)
    template = np.repeat(np.arange(4, dtype=np.int8), [18, 9, 9, 9])
    places = np.stack([rng.permutation(template) for _ in range(500)])
    moved = HandPosterior._exchange(places, rng)
    changed = moved != places
    assert (changed.sum(axis=1) == 2).all()
    for row in range(len(places)):
        a, b = np.flatnonzero(changed[row])
        assert moved[row, a] == places[row, b] and moved[row, b] == places[row, a]
        assert places[row, a] != places[row, b] and max(places[row, a], places[row, b]) > 0
        assert np.array_equal(np.bincount(moved[row]), np.bincount(places[row]))
    # every pair of places is proposed: the set-aside cards and each seat
    pairs = {tuple(sorted(places[r, np.flatnonzero(changed[r])])) for r in range(len(places))}
    assert pairs == {(a, b) for a in range(4) for b in range(1, 4) if a < b}


@pytest.mark.parametrize("seed", [1, 2])
def test_games_that_look_the_same_to_the_seat_get_the_same_actions_and_scores(seed: int) -> None:
    """One hand in lockstep in two games whose other seats' hidden cards differ: the observer's
    observations are the same, and so are ``search:N:post``'s actions and scores, which differ
    from the plain search's."""
    seen, twin, plain, _ = play_in_lockstep(seed, {"post": True}, lambda search: 0)
    assert seen == twin and len(seen) >= 3
    assert seen != plain[: len(seen)]


def test_the_spec_takes_post_and_refuses_it_twice_or_in_a_goat_game() -> None:
    agent = make("search:64:net:one:post", seed=0)
    assert isinstance(agent, SearchAgent) and isinstance(agent.posterior, HandPosterior)
    assert agent.posterior.policy is agent.policy  # the replays model the table as the playouts do
    assert make("search:64", seed=0).posterior is None
    for bad in ("search:64:post:post", "search:64:track", "search:64:posts"):
        with pytest.raises(ValueError, match="bad search spec"):
            check_spec(bad)
    game = Game(Config(players=3, goat=True), seed=1)
    game.play_forced()
    with pytest.raises(ValueError, match="Goat"):
        agent.act(observe(game, game.current), game.legal_mask())
    for bad, message in (({"particles": 0}, "particles"), ({"rounds": -1}, "rounds")):
        with pytest.raises(ValueError, match=f"{message} must be an integer"):
            HandPosterior(HEURISTICS["planner"](), **bad)


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
    """The posterior's layouts are of the position it was last shown: a person's hint on another
    one (``evaluate``) samples that one instead of playing out layouts that do not fit it."""
    agent = make("search:32:post", seed=0)
    agent.reset(0, seed=0)
    seen = []
    for seed in (3, 4):
        game = Game(Config(players=4), seed=seed)
        game.play_forced()
        seen.append((observe(game, game.current), game.legal_mask()))
    agent.act(*seen[0])
    parts = [_position(obs, mask) for obs, mask in seen]
    assert agent.posterior.shows(*_where(parts[0]))
    assert not agent.posterior.shows(*_where(parts[1]))
    scores = agent.evaluate(*seen[1])
    assert np.array_equal(scores.actions, np.flatnonzero(seen[1][1]))


def _where(part: tuple) -> tuple:
    game, _, unseen, needs = part
    return game, unseen, needs
