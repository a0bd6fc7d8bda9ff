"""RULES.md R1-R16, one or more table-driven tests per rule, on positions built by hand.

Positions are built with ``Game.from_position`` and card names (``"R8 B3"``: colour letter of
red, yellow, green, blue, purple, orange, then the value), so no test depends on what a seed
happens to deal.
"""

from __future__ import annotations

import numpy as np
import oracle
import pytest

from odin_env import combos
from odin_env.cards import card_id, cards_of, deck_bits, mask_of
from odin_env.rules import FOLLOW, LEAD, NUM_ACTIONS, OVER, PASS, TAKE, TAKING, Config, Game

ids = oracle.ids


def at(
    hands: list[str],
    current: int,
    *,
    table: str | None = None,
    owner: int | None = None,
    take_from: str | None = None,
    passes: int = 0,
    totals: list[int] | None = None,
    hand_leader: int | None = None,
    seed: int = 0,
    **config: object,
) -> Game:
    """A game at a built position; ``config`` holds ``Config`` fields other than players."""
    return Game.from_position(
        Config(players=len(hands), **config),
        [ids(h) for h in hands],
        current,
        table=ids(table) if table else None,
        owner=owner,
        take_from=ids(take_from) if take_from else None,
        passes=passes,
        totals=totals,
        hand_leader=hand_leader,
        seed=seed,
    )


def play(game: Game, text: str) -> None:
    game.apply(combos.combo_index(ids(text)))


def take(game: Game, name: str) -> None:
    game.apply(TAKE + ids(name)[0])


def plays(*texts: str) -> set[int]:
    return {combos.combo_index(ids(t)) for t in texts}


def hand_cards(game: Game, seat: int) -> set[int]:
    return set(cards_of(game.hands[seat]))


def play_random(game: Game, rng: np.random.Generator, max_decisions: int = 100_000) -> None:
    for _ in range(max_decisions):
        if game.is_over:
            return
        game.apply(game.legal[rng.integers(len(game.legal))])
    raise AssertionError("the game did not end")


# -- R1, R2, R3: material and the deal --------------------------------------------------------


@pytest.mark.parametrize(
    ("colour", "value", "expected"), [(0, 1, 0), (0, 9, 8), (1, 1, 9), (3, 8, 34), (5, 9, 53)]
)
def test_r1_card_id_is_colour_times_nine_plus_value_minus_one(
    colour: int, value: int, expected: int
) -> None:
    assert card_id(colour, value) == expected
    mask = mask_of(1 << expected)
    assert mask.shape == (6, 9)
    assert mask[colour, value - 1] == 1 and mask.sum() == 1


def test_r1_deck_has_54_unique_cards_and_bad_cards_are_refused() -> None:
    assert cards_of(deck_bits(6)) == list(range(54))
    assert len({(c // 9, c % 9 + 1) for c in range(54)}) == 54
    for bad in ((6, 1), (0, 0), (0, 10), (-1, 5)):
        with pytest.raises(ValueError, match="colour must be 0-5 and value 1-9"):
            card_id(*bad)


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_r2_every_player_is_dealt_nine_cards_and_the_rest_is_set_aside(players: int) -> None:
    for seed in range(5):
        game = Game(Config(players=players), seed=seed)
        deck = deck_bits(game.config.colours)
        union = game.set_aside
        for hand in game.hands:
            assert hand.bit_count() == 9
            assert hand & union == 0
            union |= hand
        assert union == deck
        assert game.set_aside.bit_count() == game.config.colours * 9 - 9 * players


def test_r2_six_players_are_dealt_all_54_cards() -> None:
    game = Game(Config(players=6), seed=3)
    assert game.set_aside == 0
    assert sum(h.bit_count() for h in game.hands) == 54


def test_r2_each_hand_is_a_fresh_deal_of_nine_cards() -> None:
    game = Game(Config(players=3, threshold=1000), seed=1)
    rng = np.random.default_rng(1)
    deals = []
    while len(deals) < 3:
        hands_before = len(game.history)
        game.apply(game.legal[rng.integers(len(game.legal))])
        if len(game.history) > hands_before:
            assert [h.bit_count() for h in game.hands] == [9, 9, 9]
            assert game.discard == 0 and game.known == [0, 0, 0] and game.table == -1
            deals.append(tuple(game.hands))
    assert len(set(deals)) == 3


def test_r3_two_players_use_four_colours_under_the_preset() -> None:
    config = Config(players=2)
    assert config.colours == 4
    for seed in range(10):
        game = Game(config, seed=seed)
        dealt = game.hands[0] | game.hands[1]
        assert dealt & ~deck_bits(4) == 0  # no purple or orange card
        assert game.set_aside.bit_count() == 36 - 18
    assert Config(players=2, colours=6).colours == 6
    assert Config(players=3).colours == 6
    with pytest.raises(ValueError, match="not in the deck"):
        at(["P1", "R2"], 0)  # purple is out of play with 2 players


# -- R4-R7: combos and what beats what, as legal follows -------------------------------------


@pytest.mark.parametrize(
    ("hand", "table", "expected"),
    [
        # same colour and same value combos are both playable, mixed sets never
        ("Y3 Y7 B7 G2", "R5", ("Y7", "B7", "Y7 Y3", "Y7 B7")),
        ("R1 B2", "G1", ("B2",)),
        ("R4 Y4 G4", "O1 O2", ("R4 Y4", "R4 G4", "Y4 G4", "R4 Y4 G4")),
    ],
)
def test_r4_combos_share_one_colour_or_one_value(hand: str, table: str, expected: tuple) -> None:
    game = at(["O9", hand, "P9"], 1, table=table, owner=0)
    assert set(game.legal) == plays(*expected) | {PASS}


@pytest.mark.parametrize(
    ("hand", "table", "legal_plays"),
    [
        ("B8 B4 Y1", "R8 R3", ("B8 B4",)),  # 84 > 83
        ("B8 B2 Y1", "R8 R3", ()),  # 82 < 83
        ("G5 G2 G8 O9", "R8 R5 R1", ("G5 G2 G8",)),  # 852 > 851
        ("R4 Y4 O4 O1", "G8 G3 G2", ()),  # 444 < 832: three 4s read as 444
        ("P9 P1 P2 Y5", "G8 G3 G2", ("P9 P1 P2",)),  # 921 > 832
    ],
)
def test_r5_number_reads_values_high_to_low(hand: str, table: str, legal_plays: tuple) -> None:
    game = at(["O3", hand, "Y6"], 1, table=table, owner=0)
    assert set(game.legal) == plays(*legal_plays) | {PASS}


def test_r6_action_space_is_3579_plays_a_pass_and_54_takes() -> None:
    assert combos.NUM_COMBOS == len(oracle.all_combos()) == 6 * 511 + 9 * 57
    assert (PASS, TAKE, NUM_ACTIONS) == (3579, 3580, 3634)


@pytest.mark.parametrize(
    ("hand", "table", "legal_plays"),
    [
        ("B8 B3 O1", "R8 R3", ()),  # red 8+3 is not beaten by blue 8+3
        ("B8 B4 O1", "R8 R3", ("B8 B4",)),
        ("R1 R2 R3", "O9 P9", ("R1 R2 R3",)),  # one card more beats whatever its number
        ("R1 R2 R3", "O9", ("R1 R2", "R1 R3", "R2 R3")),  # +2 cards is never legal
        ("Y9 G9", "R9", ("Y9 G9",)),  # a single 9 is beaten only by two cards
        ("B5 B6 B7 B8", "Y8 Y9", ("B5 B6 B7", "B5 B6 B8", "B5 B7 B8", "B6 B7 B8")),
    ],
)
def test_r7_beats_only_same_size_higher_or_one_card_more(
    hand: str, table: str, legal_plays: tuple
) -> None:
    game = at(["G6", hand, "G7"], 1, table=table, owner=0)
    same_size = [a for a in game.legal if a < PASS and combos.COMBO_SIZE[a] == len(ids(table))]
    assert set(game.legal) == plays(*legal_plays) | {PASS}
    for a in same_size:
        assert combos.COMBO_NUMBER[a] > oracle.number(ids(table))


def test_r7_equal_number_same_size_does_not_beat_and_cannot_be_played() -> None:
    game = at(["P9", "B8 B3 O1", "P8"], 1, table="R8 R3", owner=0)
    with pytest.raises(ValueError, match="illegal action"):
        play(game, "B8 B3")


# -- R8-R11: a trick ---------------------------------------------------------------------------


def test_r8_leader_cannot_pass() -> None:
    game = at(["R1 Y5 G9", "B2", "B3"], 0)
    assert game.phase == LEAD
    assert PASS not in game.legal
    before = game.snapshot()
    with pytest.raises(ValueError, match="phase lead"):
        game.apply(PASS)
    assert game.snapshot() == before


@pytest.mark.parametrize(
    ("hand", "whole_hand_legal"),
    [
        ("R1 R5 R9", True),
        ("R3 Y3", True),
        ("G2 B2 O2 P2", True),
        ("R1 Y5", False),
        ("R1 R2 Y2", False),  # R1 R2 and R2 Y2 are combos, but not the whole hand
        ("B7", False),  # one card: the single is the whole hand anyway
    ],
)
def test_r8_leader_plays_one_card_or_the_whole_hand_only_when_one_combo(
    hand: str, whole_hand_legal: bool
) -> None:
    game = at([hand, "O9 O8", "O7 O6"], 0)
    singles = plays(*hand.split())
    expected = singles | (plays(hand) if whole_hand_legal else set())
    assert set(game.legal) == expected


def test_r8_leader_playing_the_whole_hand_ends_the_hand() -> None:
    game = at(["R1 R5 R9", "O9 O8", "O7 O6 O5"], 0, episode="hand")
    play(game, "R1 R5 R9")
    assert game.phase == OVER
    assert game.history == [(0, 2, 3)]


def test_r9_follower_beats_or_passes() -> None:
    game = at(["O5", "Y3 Y7 B7 G2", "O1"], 1, table="R5", owner=0)
    assert game.phase == FOLLOW
    assert set(game.legal) == plays("Y7", "B7", "Y3 Y7", "Y7 B7") | {PASS}
    assert set(game.legal) == oracle.legal_actions(oracle.position_of(game))


def test_r9_a_pass_does_not_exclude_from_the_trick() -> None:
    # 3 players: 0 leads R5, 1 passes, 2 plays R6, 0 passes, 1 (who passed) may now play R7.
    game = at(["R5 Y1", "R7 Y2", "R6 Y3"], 0)
    play(game, "R5")
    game.apply(PASS)
    play(game, "R6")
    take(game, "R5")
    game.apply(PASS)
    assert game.current == 1 and game.phase == FOLLOW
    assert combos.combo_index(ids("R7")) in game.legal
    play(game, "R7")
    assert game.phase == TAKING and game.current == 1


def test_r10_take_is_compulsory_and_the_rest_is_discarded() -> None:
    game = at(["O5", "B9 B4 Y1", "O6 O7"], 1, table="R8 R3", owner=0)
    play(game, "B9 B4")
    assert game.phase == TAKING and game.current == 1
    assert game.legal == sorted([TAKE + c for c in ids("R8 R3")])
    before = game.snapshot()
    for refused in (PASS, combos.combo_index(ids("Y1")), TAKE + ids("O5")[0]):
        with pytest.raises(ValueError, match="phase take"):
            game.apply(refused)
        assert game.snapshot() == before
    take(game, "R3")
    assert hand_cards(game, 1) == set(ids("Y1 R3"))
    assert cards_of(game.known[1]) == ids("R3")
    assert cards_of(game.discard) == ids("R8")
    assert game.phase == FOLLOW and game.current == 2
    assert game.table == combos.combo_index(ids("B9 B4"))


def test_r10_one_card_beaten_makes_the_take_forced() -> None:
    game = at(["O5", "Y7 Y1", "O6 O7"], 1, table="R5", owner=0)
    play(game, "Y7")
    assert game.legal == [TAKE + ids("R5")[0]]
    game.play_forced()
    assert hand_cards(game, 1) == set(ids("Y1 R5"))
    assert game.current == 2 and game.phase == FOLLOW


def test_r10_no_take_when_the_play_empties_the_hand() -> None:
    game = at(["O5", "B9 B4", "O6 O7 O8"], 1, table="R8 R3", owner=0, episode="hand")
    play(game, "B9 B4")
    assert game.phase == OVER
    assert game.hands[1] == 0
    assert game.history == [(1, 0, 3)]
    assert set(cards_of(game.discard)) == set(ids("R8 R3"))


@pytest.mark.parametrize("players", [2, 3, 4, 5, 6])
def test_r11_trick_ends_only_after_every_other_player_passed_in_a_row(players: int) -> None:
    """Lead, pass, play, pass ...: the trick ends only at the (n-1)-th pass after the play."""
    hands = ["R1 R2"] + [f"Y{s + 1} G{s + 1}" for s in range(1, players)]
    game = at(hands, 0)
    play(game, "R1")
    if players > 2:
        game.apply(PASS)  # seat 1 passes
    beater = 2 if players > 2 else 1
    play(game, f"Y{beater + 1}")  # R16: the next seat plays over R1 and takes it
    take(game, "R1")
    for k in range(players - 1):
        assert game.phase == FOLLOW, f"trick ended after {k} passes"
        assert game.passes == k
        game.apply(PASS)
    assert game.phase == LEAD
    assert game.current == beater
    assert game.table == -1
    assert game.passes == 0, "a new trick starts with no passes since the last play"
    assert ids(f"Y{beater + 1}")[0] in cards_of(game.discard)


def test_r11_owner_is_not_asked_to_beat_its_own_combo() -> None:
    game = at(["R5 Y1", "R1 Y2", "R2 Y3"], 0)
    play(game, "R5")
    game.apply(PASS)
    game.apply(PASS)
    assert game.phase == LEAD and game.current == 0
    assert cards_of(game.discard) == ids("R5")


@pytest.mark.parametrize(
    ("table", "play_text", "size_after"),
    [("R5", "Y7", 9), ("R5 R6", "Y7 Y8", 8), ("R5 R6", "Y7 Y8 Y9", 7), ("R5", "B4 Y4", 8)],
)
def test_r12_a_play_of_k_cards_and_a_take_leave_n_minus_k_plus_one(
    table: str, play_text: str, size_after: int
) -> None:
    full = "Y1 Y2 Y3 Y4 Y5 Y6 Y7 Y8 Y9"
    hand = full if "B4" not in play_text else "Y1 Y2 Y3 Y4 Y5 Y6 Y7 Y8 B4"
    game = at(["O1", hand, "O2"], 1, table=table, owner=0)
    play(game, play_text)
    take(game, table.split()[0])
    assert game.hands[1].bit_count() == size_after <= 9


# -- R13-R15: end of a hand, scoring, end of the game -----------------------------------------


@pytest.mark.parametrize("episode", ["hand", "game"])
def test_r13_hand_ends_the_moment_a_player_has_no_cards(episode: str) -> None:
    game = at(
        ["R1 R2 R3", "Y5", "G1 G2", "B1 B2 B3 B4"],
        1,
        table="R4",
        owner=0,
        hand_leader=0,
        episode=episode,
    )
    rewards = game.apply(combos.combo_index(ids("Y5")))
    assert game.history == [(3, 0, 2, 4)]
    assert rewards == [-3.0, 0.0, -2.0, -4.0]
    if episode == "hand":
        assert game.phase == OVER and game.legal == []
    else:  # nobody else acted: the next hand is dealt at once (rotate: seat 1 leads)
        assert game.phase == LEAD and game.hand_number == 2 and game.current == 1
        assert [h.bit_count() for h in game.hands] == [9, 9, 9, 9]


@pytest.mark.parametrize(
    ("totals", "left", "threshold", "over"),
    [
        ([3, 5, 0, 7], (2, 0, 4, 1), 15, False),
        ([12, 0, 0, 0], (3, 0, 1, 1), 15, True),  # reaches the threshold exactly
        ([12, 0, 0, 0], (5, 0, 1, 1), 15, True),  # passes it
        ([12, 0, 0, 0], (2, 0, 1, 1), 15, False),  # 14 < 15
        ([9, 9, 9, 0], (1, 0, 1, 2), 10, True),
        ([0, 0, 0, 0], (1, 0, 1, 1), 1, True),
    ],
)
def test_r14_penalties_add_up_and_the_game_ends_when_a_total_reaches_or_passes(
    totals: list[int], left: tuple, threshold: int, over: bool
) -> None:
    hands = [" ".join(f"{'RYGBPO'[s]}{v + 2}" for v in range(k)) for s, k in enumerate(left)]
    hands[1] = "O1"  # seat 1 goes out by leading its last card
    game = at(hands, 1, totals=totals, threshold=threshold)
    game.apply(combos.combo_index(ids("O1")))
    assert game.history == [left]
    assert game.totals == [t + k for t, k in zip(totals, left)]
    assert game.is_over is over
    if over:
        low = min(game.totals)
        assert game.winners == tuple(s for s, t in enumerate(game.totals) if t == low)
    else:
        assert game.winners == () and game.phase == LEAD


@pytest.mark.parametrize("reward", ["penalty", "win"])
def test_r14_a_tie_on_the_lowest_total_is_a_shared_win(reward: str) -> None:
    # Before: 10, 4, 6, 6; seat 3 goes out; after: 15, 6, 9, 6: seats 1 and 3 tie on 6.
    game = at(["R1 R2 R3 R4 R5", "Y1 Y2", "G1 G2 G3", "B1"], 3, totals=[10, 4, 6, 6], reward=reward)
    rewards = game.apply(combos.combo_index(ids("B1")))
    assert game.totals == [15, 6, 9, 6]
    assert game.is_over
    assert game.winners == (1, 3)
    if reward == "penalty":
        assert rewards == [-5.0, -2.0, -3.0, 0.0]
    else:
        assert rewards == [0.0, 0.5, 0.0, 0.5]


def test_r14_win_reward_pays_nothing_before_the_game_ends() -> None:
    game = at(["R1 R2", "Y1", "G1 G2 G3", "B1 B2"], 1, reward="win")
    assert game.apply(combos.combo_index(ids("Y1"))) == [0.0, 0.0, 0.0, 0.0]
    assert not game.is_over and game.totals == [2, 0, 3, 2]


def _end_hand_and_next_leader(rule: str, seed: int = 0) -> int:
    """Seat 2 goes out in a hand led by seat 0; who leads the next hand?"""
    game = at(["R1 R2", "Y1 Y2", "G1", "B1 B2"], 2, hand_leader=0, first_player=rule, seed=seed)
    game.apply(combos.combo_index(ids("G1")))
    assert game.phase == LEAD and game.hand_number == 2
    assert game.hand_leader == game.current
    return game.current


@pytest.mark.parametrize(("rule", "leader"), [("rotate", 1), ("winner", 2), ("fixed", 0)])
def test_r15_first_player_rule_picks_the_next_hand_leader(rule: str, leader: int) -> None:
    assert _end_hand_and_next_leader(rule) == leader


def test_r15_rotate_is_the_left_neighbour_of_the_previous_leader() -> None:
    game = at(["R1 R2", "Y1 Y2", "G1", "B1 B2"], 2, hand_leader=1, first_player="rotate")
    game.apply(combos.combo_index(ids("G1")))
    assert game.current == 2
    # Over a whole random game every hand's leader is the previous one's left neighbour.
    game = Game(Config(players=5, threshold=40), seed=7)
    rng = np.random.default_rng(7)
    leaders = [game.hand_leader]
    while not game.is_over:
        played = len(game.history)
        game.apply(game.legal[rng.integers(len(game.legal))])
        if len(game.history) > played and not game.is_over:
            leaders.append(game.hand_leader)
    assert len(leaders) >= 3
    assert all(b == (a + 1) % 5 for a, b in zip(leaders, leaders[1:]))


def test_r15_random_rule_draws_each_hand_reproducibly() -> None:
    leaders = [_end_hand_and_next_leader("random", seed) for seed in range(40)]
    assert set(leaders) == {0, 1, 2, 3}
    assert leaders == [_end_hand_and_next_leader("random", seed) for seed in range(40)]


@pytest.mark.parametrize(
    ("rule", "first_leaders"),
    [("rotate", {0, 1, 2, 3}), ("winner", {0, 1, 2, 3}), ("random", {0, 1, 2, 3}), ("fixed", {0})],
)
def test_r15_first_hand_leader(rule: str, first_leaders: set[int]) -> None:
    seen = {Game(Config(first_player=rule), seed=s).current for s in range(40)}
    assert seen == first_leaders


@pytest.mark.parametrize("players", [2, 3, 6])
def test_r16_clockwise_is_increasing_seat_index_wrapping_around(players: int) -> None:
    hands = [f"{'RYGBPO'[s]}{s + 1} {'RYGBPO'[s]}9" for s in range(players)]
    last = players - 1
    game = at(hands, last)
    play(game, hands[last].split()[0])
    assert game.current == 0
    game.apply(PASS)
    if players == 2:  # the only other player passed: the trick ends and its owner leads
        assert game.phase == LEAD and game.current == last
    else:
        assert game.phase == FOLLOW and game.current == 1


def test_r11_a_followed_position_needs_the_seat_that_played_the_table() -> None:
    config = Config(players=3)
    with pytest.raises(ValueError, match="owner"):
        Game.from_position(config, [ids("R1"), ids("Y2"), ids("G3")], 1, table=ids("B4"))
