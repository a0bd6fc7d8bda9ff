"""RULES.md's worked example (seed document 002): five hands, totals 12, 9, 15, 11, Lucas wins.

Each hand is built with ``Game.from_position``: the player who goes out leads holding exactly one
combo and plays it whole (R8), the others hold the cards the example leaves them, and the totals
carry over from the hand before (R14).
"""

from __future__ import annotations

import oracle
import pytest

from odin_env import combos
from odin_env.rules import LEAD, OVER, Config, Game

EMMA, LUCAS, CHLOE, NATHAN = range(4)
NAMES = ("Emma", "Lucas", "Chloé", "Nathan")

# (who goes out, the one combo they lead with, cards left to Emma, Lucas, Chloé, Nathan)
HANDS = [
    (EMMA, "G4 G5 G6", (0, 3, 5, 2)),
    (LUCAS, "R7 B7", (4, 0, 2, 6)),
    (CHLOE, "O9", (2, 1, 0, 3)),
    (NATHAN, "P1 P2 P3 P4", (5, 2, 4, 0)),
    (NATHAN, "R3 Y3", (1, 3, 4, 0)),  # hand 5: Nathan holds only two 3s and plays both
]
TOTALS = [12, 9, 15, 11]


def _position(goer: int, combo: str, left: tuple[int, ...]) -> list[list[int]]:
    """The goer holds ``combo``; the others get ``left[s]`` cards nobody else holds."""
    goer_cards = oracle.ids(combo)
    pool = iter(c for c in range(54) if c not in goer_cards)
    return [goer_cards if s == goer else [next(pool) for _ in range(k)] for s, k in enumerate(left)]


@pytest.mark.parametrize("reward", ["penalty", "win"])
def test_r13_r14_worked_example_five_hands_totals_and_lucas_wins(reward: str) -> None:
    config = Config(players=4, threshold=15, first_player="winner", reward=reward)
    totals = [0, 0, 0, 0]
    for number, (goer, combo, left) in enumerate(HANDS, start=1):
        game = Game.from_position(
            config, _position(goer, combo, left), goer, totals=totals, hand_leader=goer, seed=number
        )
        assert game.phase == LEAD and game.current == goer
        whole = combos.combo_index(oracle.ids(combo))
        assert whole in game.legal  # R8: the whole hand is one combo
        rewards = game.apply(whole)
        assert game.history == [left]
        totals = [t + k for t, k in zip(totals, left)]
        assert game.totals == totals
        if number < len(HANDS):
            assert not game.is_over, f"the game ended after hand {number}"
            assert game.phase == LEAD and game.current == goer  # winner leads the next hand
            assert rewards == ([-float(k) for k in left] if reward == "penalty" else [0.0] * 4)
    assert game.totals == TOTALS
    assert game.is_over and game.phase == OVER
    assert game.winners == (LUCAS,)
    ranking = [NAMES[s] for s in sorted(range(4), key=lambda s: game.totals[s])]
    assert ranking == ["Lucas", "Nathan", "Emma", "Chloé"]
    if reward == "win":
        assert rewards == [0.0, 1.0, 0.0, 0.0]
    else:
        assert rewards == [-1.0, -3.0, -4.0, -0.0]


def test_r8_leader_holding_only_two_threes_plays_both_and_ends_the_hand() -> None:
    config = Config(players=4, threshold=15)
    hands = _position(NATHAN, "R3 Y3", (1, 3, 4, 0))
    game = Game.from_position(config, hands, NATHAN, totals=[11, 6, 11, 11])
    pair = combos.combo_index(oracle.ids("R3 Y3"))
    singles = {combos.combo_index([c]) for c in oracle.ids("R3 Y3")}
    assert set(game.legal) == singles | {pair}
    game.apply(pair)
    assert game.history == [(1, 3, 4, 0)]
    assert game.totals == TOTALS
    assert game.is_over and game.winners == (LUCAS,)
