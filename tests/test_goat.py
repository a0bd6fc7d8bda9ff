"""The Grumpy Goat in the rules engine (RULES G1-G5, ``Config(goat=True)``): the combo table
against a brute-force generator, every legal set and transition of random Goat games against an
independent oracle (:mod:`oracle_goat`), the deal, the penalty, the action space, and the layers
that do not play it yet refusing it in one line."""

from __future__ import annotations

from collections import Counter

import numpy as np
import oracle
import oracle_goat
import pytest

from odin_env.cards import GOAT, GOAT_BIT, MAX_HAND, card_name, names, parse_card
from odin_env.combos import (
    COMBO_CARDS,
    GOAT_COMBO_CARDS,
    GOAT_COMBO_NUMBER,
    SINGLE,
    combo_number,
    is_combo,
)
from odin_env.observation import OBS_SIZE, box, observation_size, observe, views
from odin_env.rules import (
    GOAT_PLAY,
    GOAT_TAKE,
    NUM_ACTIONS,
    PASS,
    TAKE,
    Config,
    Game,
    check_action,
)
from odin_env.spec import NUM_GOAT_ACTIONS

GOAT_CONFIG = Config(players=4, goat=True)


def ids(text: str) -> list[int]:
    return [parse_card(name) for name in text.split()]


def singles(text: str) -> list[int]:
    """The plays of these cards alone, ascending."""
    return sorted(SINGLE[c] for c in ids(text))


def test_g2_the_goat_combos_are_the_brute_force_ones_in_canonical_order():
    assert len(COMBO_CARDS) + len(GOAT_COMBO_CARDS) == 6646
    assert list(GOAT_COMBO_CARDS) == oracle_goat.GOAT_COMBOS
    assert list(COMBO_CARDS) == oracle.ORACLE_COMBOS  # today's table is untouched
    assert GOAT_COMBO_NUMBER.tolist() == [oracle_goat.number(c) for c in GOAT_COMBO_CARDS]
    assert oracle_goat.INDEX[frozenset([GOAT])] == GOAT_PLAY
    assert GOAT_TAKE == oracle_goat.TAKE_GOAT and NUM_GOAT_ACTIONS == GOAT_TAKE + 1 == 6702


@pytest.mark.parametrize(
    ("cards", "combo", "number"),
    [
        ("Goat", True, 0),
        ("Goat B5", True, 50),
        ("Goat B1 B2 B3 B4 B5 B6 B7 B8 B9", True, 9876543210),
        ("Goat B5 R5", False, None),
        ("Goat B5 B7", True, 750),
        ("Goat R1 B2", False, None),
    ],
)
def test_g2_the_goat_joins_one_colour_as_a_zero_never_a_number(cards, combo, number):
    bits = sum(1 << c for c in ids(cards))
    assert is_combo(bits) is combo is oracle_goat.is_combo(ids(cards))
    if combo:
        assert combo_number(ids(cards)) == number


def test_g1_the_goats_name_and_id():
    assert GOAT == 54 and card_name(GOAT) == "Goat" and parse_card("goat") == GOAT
    assert names(GOAT_BIT | 1 << 2) == "R3 Goat"


def _position(players: int, hands: list[str], current: int, **rest) -> Game:
    return Game.from_position(
        Config(players=players, goat=True),
        [ids(h) for h in hands],
        current,
        **{k: ids(v) if isinstance(v, str) else v for k, v in rest.items()},
    )


def test_g3_a_goat_pair_beats_44_and_loses_to_55():
    goat_y5 = GOAT_PLAY + GOAT_COMBO_CARDS.index(tuple(sorted(ids("Y5 Goat"))))
    game = _position(3, ["Goat Y5 R1", "G2 P3", "P7"], 0, table="R4 B4", owner=1)
    assert game.legal == [PASS, goat_y5]  # 50 beats 44; no pair or triple of its own
    higher = _position(3, ["Goat Y5 R1", "G2 P3", "P7"], 0, table="R5 B5", owner=1)
    assert higher.legal == [PASS]  # 50 loses to 55
    lower = _position(3, ["Goat Y5 R1", "G2 P3", "P7"], 0, table="R3", owner=1)
    goat_r1 = GOAT_PLAY + GOAT_COMBO_CARDS.index(tuple(sorted(ids("R1 Goat"))))
    assert lower.legal == [*singles("Y5"), PASS, goat_r1, goat_y5]  # one card more beats a single


def test_g3_the_goat_alone_beats_nothing_and_any_single_beats_it():
    game = _position(3, ["Goat R1 B5", "B2 G3", "P7"], 0)
    assert game.legal == [*singles("R1 B5"), GOAT_PLAY]  # singles: the hand is no combo
    game.apply(GOAT_PLAY)  # the Goat alone, number 0
    assert game.table == GOAT_PLAY
    assert game.legal == [*singles("B2 G3"), PASS]  # every single beats it
    game.apply(singles("B2")[0])
    assert game.legal == [GOAT_TAKE]  # G3: the Goat comes back to a hand
    game.apply(GOAT_TAKE)
    assert game.hands[1] & GOAT_BIT and game.known[1] & GOAT_BIT
    follow = _position(3, ["Goat R1 B5", "B2 G3", "P8"], 0, table="P7", owner=2)
    goat_pairs = [
        GOAT_PLAY + GOAT_COMBO_CARDS.index(tuple(sorted(ids(f"{c} Goat")))) for c in ("R1", "B5")
    ]
    assert follow.legal == [PASS, *sorted(goat_pairs)]  # not the Goat alone: 0 beats no single


def test_g3_a_whole_hand_of_the_goat_and_one_colour_is_led_at_once():
    game = _position(2, ["Goat B2 B7", "R1"], 0)
    whole = GOAT_PLAY + GOAT_COMBO_CARDS.index(tuple(sorted(ids("B2 B7 Goat"))))
    assert game.legal == [*singles("B2 B7"), GOAT_PLAY, whole]
    assert game.legal == sorted(oracle_goat.legal_actions(oracle_goat.position_of(game)))


def test_g4_the_goat_left_in_a_hand_costs_five():
    game = _position(3, ["R9", "Goat B2 B3", "G4 G5"], 0, totals=[0, 0, 0])
    game.apply(game.legal[0])  # seat 0 goes out: seat 1 keeps the Goat and two cards
    assert game.history[0] == (0, 7, 2)


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_g1_every_hand_deals_the_goat_to_one_seat_nine_cards_each(players):
    config = Config(players=players, goat=True)
    holders, aside = Counter(), Counter()
    for seed in range(600):
        game = Game(config, seed=seed)
        assert [h.bit_count() for h in game.hands] == [MAX_HAND] * players
        assert sum(bool(h & GOAT_BIT) for h in game.hands) == 1
        assert not game.set_aside & GOAT_BIT
        dealt = 0
        for h in game.hands:
            dealt |= h
        assert dealt | game.set_aside == game.deck and not dealt & game.set_aside
        holders[next(s for s, h in enumerate(game.hands) if h & GOAT_BIT)] += 1
        aside[game.set_aside.bit_count()] += 1
    assert set(aside) == {config.colours * 9 + 1 - MAX_HAND * players}
    # Each seat holds it 1/n of the time: every count within 5 binomial sigmas of 600/n.
    mean, sd = 600 / players, (600 * (1 / players) * (1 - 1 / players)) ** 0.5
    assert all(abs(holders[s] - mean) < 5 * sd for s in range(players)), holders


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_g1_to_g5_random_games_agree_with_the_oracle_decision_by_decision(players):
    rng = np.random.default_rng(players)
    config = Config(players=players, threshold=10, goat=True)
    decisions = goat_plays = 0
    for seed in range(6 if players > 3 else 10):
        game = Game(config, seed=seed)
        while not game.is_over:
            pos = oracle_goat.position_of(game)
            assert game.legal == sorted(oracle_goat.legal_actions(pos)), pos
            mask = game.legal_mask()
            assert mask.shape == (NUM_GOAT_ACTIONS,) and mask.sum() == len(game.legal)
            action = int(rng.choice(game.legal))
            goat_plays += action >= GOAT_PLAY
            hands_before = len(game.history)
            held = [oracle_goat.set_of(h) for h in game.hands]
            game.apply(action)
            decisions += 1
            after = oracle_goat.step(pos, action)
            if after == "hand over":
                penalties = tuple(oracle_goat.penalty(h) for h in held)
                emptied = pos.current
                penalties = tuple(0 if s == emptied else p for s, p in enumerate(penalties))
                assert game.history[hands_before] == penalties
            else:
                assert oracle_goat.position_of(game) == after
    assert decisions > 300 and goat_plays > 5


def test_g5_the_goat_games_action_space_and_its_refusals():
    assert GOAT_CONFIG.num_actions == 6702 and Config().num_actions == NUM_ACTIONS == 3634
    assert check_action(6701, goat=True) == 6701
    with pytest.raises(ValueError, match=r"0-3633 \(0-3578 play, 3579 pass, 3580-3633 take\)"):
        check_action(GOAT_TAKE)
    game = Game(GOAT_CONFIG, seed=1)
    with pytest.raises(ValueError, match="6701 take the Goat"):
        game.apply(6702)
    before = game.snapshot()
    taken = next(a for a in range(TAKE, NUM_GOAT_ACTIONS) if a not in game.legal)
    with pytest.raises(ValueError, match="illegal action"):
        game.apply(taken)
    assert game.snapshot() == before
    with pytest.raises(ValueError, match="goat must be true or false; got 'yes'"):
        Config(goat="yes")


def test_g2_a_built_position_refuses_a_goat_in_a_same_number_combo_and_a_game_without_it():
    with pytest.raises(ValueError, match=r"^table: must be a combo.*G2\); got B5 R5 Goat|R5 B5"):
        _position(3, ["R1", "B2", "P7"], 0, table="Goat B5 R5", owner=1)
    with pytest.raises(ValueError, match=r"^hands: .*card ids must be integers 0-53"):
        Game.from_position(Config(players=3), [ids("Goat R1"), ids("B2"), ids("P7")], 0)


def test_the_single_agent_env_plays_goat_games_and_a_network_opponent_refuses_one():
    from gymnasium.utils.env_checker import check_env

    from agents import make
    from odin_env.single_agent import SingleAgentEnv

    env = SingleAgentEnv(GOAT_CONFIG, opponents=make("planner"))
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=3)
    assert env.action_space.n == 6702 and obs.shape == (observation_size(GOAT_CONFIG),)
    done, goat_moves = False, 0
    while not done:
        legal = np.flatnonzero(info["action_mask"])
        goat = legal[legal >= GOAT_PLAY]
        goat_moves += bool(goat.size)
        obs, _, done, _, info = env.step(int(goat[0] if goat.size else legal[0]))
    assert goat_moves and info["hands"] >= 1
    with pytest.raises(ValueError, match=r"^goat: a DMC model trained without the Goat"):
        SingleAgentEnv(GOAT_CONFIG, opponents=make("dmc")).reset(seed=1)


def _goat_truth(game: Game, seat: int) -> list[float]:
    """Where ``seat`` sees the Goat, worked out from the game's fields (the ``goat`` field)."""
    n = game.config.players
    places = game.where()
    order = [(seat + k) % n for k in range(n)]
    seen = [game.hands[seat], places["table"], places["take"], places["discard"]]
    seen += [game.known[s] for s in order] + [0] * (6 - n)
    field = [float(bool(bits & GOAT_BIT)) for bits in seen]
    return field + [0.0 if any(field) else 1.0]


@pytest.mark.parametrize("players", [2, 4, 6])
def test_the_observation_says_where_the_goat_is_seen_and_keeps_every_other_entry(players):
    config = Config(players=players, goat=True)
    rng = np.random.default_rng(players)
    seen = Counter()
    for seed in range(4):
        game = Game(config, seed=seed)
        while not game.is_over:
            for seat in range(players):
                obs = observe(game, seat)
                named = views(obs)
                assert obs.shape == (observation_size(config),) == (OBS_SIZE + 11,)
                assert named["goat"].tolist() == _goat_truth(game, seat)
                hand = named["hand"].reshape(-1)
                assert hand.tolist() == [float(game.hands[seat] >> c & 1) for c in range(54)]
                assert named["hand_size"][0] * 9 == game.hands[seat].bit_count()  # Goat counted
                assert box(config).contains(obs)
                seen[int(np.argmax(named["goat"]))] += 1
            game.apply(int(rng.choice(game.legal)))
    assert {0, 1, 3, 10} <= set(seen)  # in hand, on the table, discarded, unseen


def test_the_goat_in_another_hidden_hand_is_unseen_wherever_it_is():
    """Two positions that differ only in which other seat holds the Goat (unknown to the
    observer) give the observer the same observation."""
    one = _position(3, ["R1 R2", "Goat B5", "G7 P8"], 0)
    other = _position(3, ["R1 R2", "B5 G7", "Goat P8"], 0)
    assert np.array_equal(observe(one, 0), observe(other, 0))
    assert views(observe(one, 0))["goat"].tolist() == [0.0] * 10 + [1.0]
    assert views(observe(one, 1))["goat"].tolist() == [1.0] + [0.0] * 10


def test_the_aec_env_plays_goat_games_by_pettingzoos_api():
    from pettingzoo.test import api_test

    from odin_env import env as aec_env

    api_test(aec_env(players=3, goat=True), num_cycles=60)
    environment = aec_env(players=4, goat=True, threshold=5)
    environment.reset(seed=2)
    agent = environment.agent_selection
    assert environment.action_space(agent).n == 6702
    assert environment.observation_space(agent)["observation"].shape == (OBS_SIZE + 11,)
    rng = np.random.default_rng(0)
    goat_moves = 0
    for _agent in environment.agent_iter(5000):
        obs, _, done, _, _ = environment.last()
        if done:
            environment.step(None)
            continue
        assert obs["action_mask"].shape == (6702,)
        action = int(rng.choice(np.flatnonzero(obs["action_mask"])))
        goat_moves += action >= GOAT_PLAY
        environment.step(action)
    assert not environment.agents and goat_moves > 0
    with pytest.raises(ValueError, match="0-6701"):
        environment.reset(seed=3)
        environment.step(6702)


def test_a_game_without_the_goat_never_meets_it():
    game = Game(Config(players=6), seed=3)
    rng = np.random.default_rng(0)
    while not game.is_over:
        assert all(a < NUM_ACTIONS for a in game.legal)
        assert not any(h & GOAT_BIT for h in game.hands)
        game.apply(int(rng.choice(game.legal)))


@pytest.mark.parametrize(
    "spec",
    ["linear", "ppo", "ppo:agents/models/net_4p.safetensors", "dmc"],
)
def test_the_lab_agents_refuse_a_goat_game_in_one_line_and_random_plays_it(spec):
    from agents import make
    from agents.registry import has_batch_form, make_batch_agent

    game = Game(GOAT_CONFIG, seed=4)
    obs, mask = observe(game, game.current), game.legal_mask()
    with pytest.raises(ValueError, match=r"^goat: .* does not play the Goat yet"):
        make(spec).act(obs, mask)
    if has_batch_form(spec):
        with pytest.raises(ValueError, match=r"^goat: .* does not play the Goat yet"):
            make_batch_agent(spec).act_batch(obs[None], mask[None])
    assert make("random", seed=0).act(obs, mask) in game.legal
