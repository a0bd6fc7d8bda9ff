"""``search`` in games with the Goat (RULES G1-G5): the layouts it samples always deal an unseen
Goat (it is never set aside) to a hidden place drawn uniformly, the position it rebuilds from
the observation is the game's, and it plays and hints Goat games."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from agents.hand import see
from agents.search import SearchAgent
from agents.worlds import position as _position
from agents.worlds import sample_hands as _sample_hands
from odin_env.cards import GOAT_BIT, parse_card
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.spec import GOAT_PLAY
from odin_lab.evaluation.tournament import play_tournament


def _midgame(config: Config, seed: int, steps: int) -> Game:
    game, rng = Game(config, seed=seed), np.random.default_rng(seed)
    for _ in range(steps):
        game.play_forced()
        game.apply(int(rng.choice(game.legal)))
    game.play_forced()
    return game


@pytest.mark.parametrize("players", [3, 6])
def test_g1_an_unseen_goat_is_dealt_to_a_uniform_hidden_place_in_every_world(players):
    config = Config(players=players, goat=True)
    seed = next(s for s in range(200) if not _goat_seen(_midgame(config, s, 9), config))
    game = _midgame(config, seed, 9)
    seat = game.current
    obs, mask = observe(game, seat), game.legal_mask()
    position, _, unseen, needs = _position(obs, mask)
    assert position.config.goat and unseen[0] == GOAT_BIT.bit_length() - 1
    worlds = _sample_hands(position, unseen, needs, 6000, np.random.default_rng(1))
    held = [(worlds[:, k] & GOAT_BIT) != 0 for k in range(players)]
    assert not held[0].any() and (np.sum(held, axis=0) == 1).all()  # one hidden hand, always
    for k in range(players):  # sizes and known cards kept, as without the Goat
        size = game.hands[(seat + k) % players].bit_count()
        assert all(int(h).bit_count() == size for h in worlds[:, k])
    counts = np.array([held[k].sum() for k in range(1, players)])
    expected = np.array(needs[1:]) / sum(needs) * len(worlds)
    assert stats.chisquare(counts, expected).pvalue > 1e-3, (counts, expected)


def _goat_seen(game: Game, config: Config) -> bool:
    seat = game.current
    seen = see(observe(game, seat), game.legal_mask())
    return bool((seen.hand | seen.table | seen.take | seen.discard | sum(seen.known)) & GOAT_BIT)


def test_g3_search_goes_out_with_the_goat_and_a_colour_and_plays_goat_games_to_the_end():
    ids = [[parse_card(c) for c in h.split()] for h in ("Goat R5 R7", "B1 B2 B3", "P1 P2 P3")]
    game = Game.from_position(Config(players=3, goat=True), ids, 0)
    search = SearchAgent(rollouts=64, seed=3)
    action = search.act(observe(game, 0), game.legal_mask())
    assert action >= GOAT_PLAY and action in game.legal  # R7 R5 Goat (750): the whole hand
    config = Config(players=3, threshold=6, goat=True)
    specs = ["search:32", "planner", "greedy"]
    records = play_tournament(specs, config, 2, seed=5, progress=False)
    assert records == play_tournament(specs, config, 2, seed=5, progress=False, workers=2)
    assert all(r.winners for r in records)
