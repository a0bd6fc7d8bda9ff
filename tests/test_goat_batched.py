"""The batched engine plays the Goat (RULES G1-G5), held to the rules engine, its oracle,
decision by decision: acting seat, legal mask, observation bit for bit (the ``goat`` field
too), rewards, hand ends, penalties (the Goat's 5) and outcomes, at every table size, in both
episode modes, with forced decisions applied or shown. Tournaments then play the same Goat games
on both engines, and the largest decision a Goat game can offer fits the engine's room."""

from __future__ import annotations

import numpy as np
import pytest

from agents.batch import BatchRandomAgent
from odin_env.batched import MAX_LEGAL, BatchedGames
from odin_env.batched_check import compare_with_rules
from odin_env.cards import GOAT_BIT, parse_card
from odin_env.observation import GOAT_FIELD, observe
from odin_env.rules import Config, Game
from odin_env.spec import GOAT_PLAY, GOAT_TAKE
from odin_lab.evaluation.tournament import play_tournament


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_g1_g5_the_batched_engine_plays_goat_games_as_the_rules_engine(players):
    for episode in ("game", "hand"):
        for auto_forced in (True, False):
            config = Config(players=players, threshold=10, episode=episode, goat=True)
            games, decisions = compare_with_rules(
                config, 8, seed=100 * players + auto_forced, games=10, auto_forced=auto_forced,
                action_seed=players,
            )  # fmt: skip
            assert games >= 10 and decisions > 100


def test_random_batched_goat_games_meet_every_goat_move():
    engine = BatchedGames(Config(players=4, goat=True), batch=64, seed=9)
    agent = BatchRandomAgent(seed=10)
    met = {"goat play": 0, "goat take": 0, "goat seen": 0}
    for _ in range(400):
        met["goat play"] += int(engine.mask[:, GOAT_PLAY:GOAT_TAKE].any(axis=1).sum())
        met["goat take"] += int(engine.mask[:, GOAT_TAKE].sum())
        met["goat seen"] += int(engine.obs[:, GOAT_FIELD][:, :4].any(axis=1).sum())
        engine.step(agent.act_batch(engine.obs, engine.mask))
    assert all(count > 50 for count in met.values()), met


@pytest.mark.parametrize("players", [3, 5])
def test_goat_tournaments_are_the_same_games_on_both_engines(players):
    config = Config(players=players, threshold=10, goat=True)
    specs = [("planner", "shaper", "greedy")[s % 3] for s in range(players)]
    single = play_tournament(specs, config, 6, seed=12, engine="single", progress=False)
    assert play_tournament(specs, config, 6, seed=12, engine="batched", progress=False) == single


def test_the_largest_goat_decision_fits_the_engines_room():
    # The Goat and 8 red cards follow the lowest 4-card combo: 70 + 56 combos without the Goat
    # (4 or 5 reds), 56 + 70 with it (3 or 4 reds), and pass.
    config = Config(players=3, goat=True)
    hand = [GOAT_BIT.bit_length() - 1, *(parse_card(f"R{v}") for v in range(1, 9))]
    table = [parse_card(c) for c in ("Y1", "G1", "B1", "P1")]
    others = [[parse_card("O9")], [parse_card("O8")]]
    game = Game.from_position(config, [hand, *others], 0, table=table, owner=1)
    assert len(game.legal) == 253 <= MAX_LEGAL
    engine = BatchedGames(config, batch=1, seed=0)
    engine.load([0], game)
    assert engine.legal_actions(0) == sorted(game.legal)
    assert np.array_equal(engine.obs[0], observe(game, 0))
