"""The observation's card planes decode back to exactly the card sets that were encoded."""

from __future__ import annotations

import numpy as np
import pytest

from odin_env.combos import COMBO_BITS
from odin_env.observation import card_sets, observe, players_of, views
from odin_env.rules import Config, Game


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_card_sets_inverts_the_planes_for_every_seat(players: int) -> None:
    rng = np.random.default_rng(players)
    game = Game(Config(players=players), seed=players)
    checked = 0
    while not game.is_over and checked < 300:
        for seat in range(players):
            obs = observe(game, seat)
            order = [(seat + k) % players for k in range(players)]
            table = COMBO_BITS[game.table] if game.table >= 0 else 0
            expected = [game.hands[seat], table, game.take_from, game.discard]
            expected += [game.known[s] for s in order] + [0] * (6 - players)
            assert card_sets(obs) == expected
            assert card_sets(obs)[0].bit_count() == int(views(obs)["hand"].sum())
        game.apply(game.legal[rng.integers(len(game.legal))])
        checked += 1
    assert checked == 300 or game.is_over


def test_players_of_reads_one_observation_and_a_batch_of_mixed_tables() -> None:
    counts = [5, 2, 6, 3, 4]
    batch = np.stack([observe(Game(Config(players=n), seed=n), 0) for n in counts])
    assert players_of(views(batch)).tolist() == counts
    assert [players_of(views(row)) for row in batch] == counts
    assert all(type(players_of(views(row))) is int for row in batch)
