"""The hand-written agents in games with the Grumpy Goat (RULES G1-G5).

Their one implementation, the numba kernels of :mod:`agents.heuristics`, measures hands with
the Goat: the fewest combos a hand splits into and how many combos a card joins are checked
against brute force over the Goat's combo table (G2). Positions show what each agent does with
the Goat (docstring of :mod:`agents.heuristics`), and seeded Goat games show that they play
only legal actions, keep their strength order, and that the Goat-aware ``planner`` beats the
heuristics keep their order.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from agents import make
from agents.batched_shaper import _cover, _joins
from agents.registry import make_batch_agent
from odin_env.cards import GOAT, parse_card
from odin_env.combos import COMBO_BITS, GOAT_COMBO_BITS, GOAT_COMBO_CARDS, combo_index, is_combo
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.spec import GOAT_PLAY, GOAT_TAKE, TAKE
from odin_lab.evaluation.stats import seat_shares
from odin_lab.evaluation.tournament import play_tournament

GOAT_CONFIG = Config(players=4, goat=True)
ALL_COMBOS = (*COMBO_BITS, *GOAT_COMBO_BITS)


def ids(text: str) -> list[int]:
    return [parse_card(name) for name in text.split()]


def bits_of(text: str) -> int:
    return sum(1 << c for c in ids(text))


def brute_cover(hand: int) -> int:
    """The fewest combos (G2) that partition ``hand``: a DP over the subsets of its cards."""
    cards = [c for c in range(GOAT + 1) if hand >> c & 1]
    n = len(cards)
    best = [0] + [n + 1] * ((1 << n) - 1)
    for subset in range(1, 1 << n):
        low = subset & -subset  # the group that holds the subset's lowest card
        rest = subset ^ low
        part = rest
        while True:
            group = part | low
            if is_combo(sum(1 << cards[i] for i in range(n) if group >> i & 1)):
                best[subset] = min(best[subset], best[subset ^ group] + 1)
            if part == 0:
                break
            part = (part - 1) & rest
    return best[-1]


def _hands(rng: np.random.Generator, count: int) -> list[int]:
    """Hands of 0-8 coloured cards, with the Goat in half of them; drawn from a few colours
    and values half of the time, so that groups of one number are common."""
    hands = []
    for k in range(count):
        pool = rng.choice(54, 12, replace=False) if k % 2 else np.arange(54)
        if k % 4 < 2:
            colours, values = rng.choice(6, 3, replace=False), rng.choice(9, 3, replace=False)
            pool = np.array([9 * c + v for c in colours for v in values])
        cards = rng.choice(pool, int(rng.integers(0, min(8, len(pool)) + 1)), replace=False)
        hands.append(sum(1 << int(c) for c in cards) | (k % 3 != 0) << GOAT)
    return hands


def test_g2_the_kernels_cover_is_the_fewest_combos_a_hand_with_the_goat_splits_into():
    hands = _hands(np.random.default_rng(26), 400)
    for hand in hands:
        assert _cover(hand) == brute_cover(hand), [c for c in range(55) if hand >> c & 1]
    # The cases that differ: the Goat free in a colour, in a single, or a combo of its own.
    assert _cover(bits_of("Goat")) == 1
    assert _cover(bits_of("Goat R5 B5")) == 2  # R5 + Goat (50) and B5: no combo of three
    assert _cover(bits_of("Goat R5 B5 R6 B6")) == 2  # red 6 5 0, blue 6 5
    assert _cover(bits_of("Goat R5 B5 Y5")) == 2  # the three 5s, and the Goat alone
    assert _cover(bits_of("R5 B5 Y5")) == 1


def test_g2_the_kernels_joins_counts_the_combos_a_card_makes_with_a_hand():
    rng = np.random.default_rng(27)
    for hand in _hands(rng, 150):
        for card in [GOAT, *rng.choice(54, 3, replace=False).tolist()]:
            if hand >> card & 1:
                continue
            full = hand | 1 << card
            want = sum(1 for b in ALL_COMBOS if b >> card & 1 and b & ~full == 0)
            assert _joins(hand, card) == want, (hand, card)


def _decide(name: str, game: Game) -> int:
    """The agent's action at the game's decision, the same by ``act`` and ``act_batch``."""
    obs, mask = observe(game, game.current), game.legal_mask()
    action = make(name).act(obs, mask)
    assert make_batch_agent(name).act_batch(obs[None], mask[None]).tolist() == [action]
    assert action in game.legal
    return action


def _position(hands: list[str], **rest) -> Game:
    return Game.from_position(
        GOAT_CONFIG,
        [ids(h) for h in hands],
        0,
        **{k: ids(v) if isinstance(v, str) else v for k, v in rest.items()},
    )


def _goat_play(text: str) -> int:
    return GOAT_PLAY + GOAT_COMBO_CARDS.index(tuple(sorted(ids(text))))


def test_g3_leading_each_heuristic_keeps_or_sheds_the_goat_by_its_own_rule():
    others = ["G1 G2 G3", "P1 P2 P3", "O1 O2 O3"]
    goat = _goat_play("Goat")
    # Red 5 2 and blue 8 7 are two combos with or without the Goat: greedy (its lowest single)
    # and shaper (the same combos, 5 points less) lead it alone.
    for name in ("greedy", "shaper"):
        assert _decide(name, _position(["Goat R2 R5 B7 B8", *others])) == goat, name
    # Three colours: leading a coloured card leaves two combos (the Goat joins another), the
    # Goat three. Shaper and planner (no opponent near out: the Goat counts one card) keep the
    # Goat: shaper leads its highest single, planner the next (Y9 is its finishing combo).
    spread = _position(["Goat R2 B7 Y9", *others])
    assert _decide("shaper", spread) == combo_index(ids("Y9"))
    assert _decide("planner", spread) == combo_index(ids("B7"))
    assert _decide("greedy", spread) == goat
    # An opponent down to two cards may go out next: planner counts the Goat's 5 and sheds it.
    threatened = _position(["Goat R2 B7 Y9", "G1 G2", "P1 P2 P3", "O1 O2 O3"])
    assert _decide("planner", threatened) == goat


def test_g3_following_the_goat_joins_a_play_as_a_zero_digit():
    # Y5 + Goat (50) beats 44: the only play, and greedy, shaper and planner all make it.
    hands = ["Goat Y5 R1", "G2 P3 O4", "P7 B8 B9", "O1 O2 O3"]
    game = _position(hands, table="R4 B4", owner=1)
    for name in ("greedy", "shaper", "planner"):
        assert _decide(name, game) == _goat_play("Goat Y5"), name


def test_g4_taking_each_heuristic_takes_or_leaves_the_goat_by_its_own_rule():
    others = ["G1 G2 G3", "P1 P2 P3", "O1 O2 O3"]
    y7, goat = TAKE + parse_card("Y7"), GOAT_TAKE
    # Seat 0 has beaten Goat + Y7 (70) with R8 R9 (98) and keeps one card of it.
    split = _position(["R1 B2", *others], table="R8 R9", take_from="Goat Y7")
    assert goat in split.legal and y7 in split.legal
    assert _decide("greedy", split) == y7
    assert _decide("shaper", split) == goat  # red 1 0 and blue 2: a combo fewer than with Y7
    assert _decide("planner", split) == goat
    # The Goat cannot join 11: no combo less. Shaper counts its 5 points and takes Y7; planner
    # counts it one card while no opponent is near out, and takes it for its joins.
    pair = _position(["R1 B1", *others], table="R8 R9", take_from="Goat Y7")
    assert _decide("greedy", pair) == y7
    assert _decide("shaper", pair) == y7
    assert _decide("planner", pair) == goat
    near_out = ["R1 B1", "G1 G2", "P1 P2 P3", "O1 O2 O3"]
    assert _decide("planner", _position(near_out, table="R8 R9", take_from="Goat Y7")) == y7


@pytest.mark.parametrize("players", [2, 3, 5, 6])
def test_seeded_goat_games_are_played_to_the_end_at_every_table_size(players):
    config = Config(players=players, threshold=10, goat=True)
    specs = [("greedy", "shaper", "planner")[s % 3] for s in range(players)]
    records = play_tournament(specs, config, 3, seed=players, progress=False)
    assert len(records) == 3 * players and all(r.winners for r in records)
    again = play_tournament(specs, config, 3, seed=players, progress=False, workers=2)
    assert again == records


def _strong_share(strong: str, weak: str, config: Config, deals: int, seed: int) -> np.ndarray:
    specs = [strong, weak, strong, weak]
    records = play_tournament(specs, config, deals, seed, progress=False)
    return np.array(
        [
            sum(s for seat, s in enumerate(seat_shares(r)) if r.agents[seat] % 2 == 0)
            for r in records
        ]
    )


@pytest.mark.parametrize(("strong", "weak"), [("shaper", "greedy"), ("planner", "shaper")])
def test_the_strength_order_holds_in_goat_games_with_p_below_001(strong, weak):
    share = _strong_share(strong, weak, Config(players=4, goat=True), 150, seed=2026)
    more, less = int((share > 0.5).sum()), int((share < 0.5).sum())
    assert stats.binomtest(more, more + less, 0.5, alternative="greater").pvalue < 0.01
