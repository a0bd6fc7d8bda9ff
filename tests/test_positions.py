"""Built positions (``Game.from_position``) and the observation's per-config cache.

Valid positions are read out of real games (a seeded game after random legal moves): they are
accepted, rebuild exactly the same state, follow the same course while the hand lasts and play
to the end with random legal moves. Invalid positions are a valid one with one field corrupted:
each is refused with a ``ValueError`` whose message starts with that field's name, before any
game is built. The rules named are those of RULES.md (R7 beat order, R9/R11 passes and the
trick's owner, R12 hand size, R13 an empty hand ends the hand, R14 totals).
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import oracle
import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from odin_env import combos, observation
from odin_env.cards import MAX_HAND, NUM_CARDS, cards_of, deck_bits
from odin_env.combos import COMBO_BITS, NUM_COMBOS
from odin_env.observation import observe, views
from odin_env.rules import FIRST_PLAYER_RULES, FOLLOW, LEAD, PHASE_NAMES, TAKING, Config, Game

MAX_DECISIONS = 200_000
"""A bound on the decisions of a whole game: a built position must not loop (e.g. on passes)."""

FIELDS = (
    "config", "hands", "current", "table", "owner", "take_from", "passes", "discard", "known",
    "totals", "hand_leader",
)  # fmt: skip


@st.composite
def configs(draw: st.DrawFn) -> Config:
    players = draw(st.integers(2, 6))
    return Config(
        players=players,
        threshold=draw(st.integers(1, 20)),
        colours=draw(st.one_of(st.none(), st.integers(max(2, players), 6))),
        first_player=draw(st.sampled_from(FIRST_PLAYER_RULES)),
        episode=draw(st.sampled_from(["game", "hand"])),
        reward=draw(st.sampled_from(["penalty", "win"])),
    )


def read_position(game: Game) -> dict:
    """``from_position``'s keyword arguments (config and seed aside) for a game in play."""
    table = cards_of(COMBO_BITS[game.table]) if game.table >= 0 else None
    return {
        "hands": [cards_of(h) for h in game.hands],
        "current": game.current,
        "table": table,
        "owner": game.owner if game.phase == FOLLOW else None,
        "take_from": cards_of(game.take_from) if game.phase == TAKING else None,
        "passes": game.passes,
        "discard": cards_of(game.discard),
        "known": [cards_of(k) for k in game.known],
        "totals": list(game.totals),
        "hand_leader": game.hand_leader,
    }


def played_game(config: Config, seed: int, moves: int, phase: int | None = None) -> Game:
    """A seeded game after ``moves`` random legal moves, then more until it is in ``phase`` if
    that comes in the same hand; if the episode ends, the position one move before its end."""
    game = Game(config, seed=seed)
    rng = np.random.default_rng(seed)
    played = 0

    def move() -> bool:
        nonlocal played
        game.apply(game.legal[rng.integers(len(game.legal))])
        played += 1
        return not game.is_over

    while played < moves:
        if not move():
            return played_game(config, seed, played - 1)
    hand = game.hand_number
    while phase is not None and game.phase != phase and game.hand_number == hand:
        if not move():
            return played_game(config, seed, played - 1)
    return game


def state(game: Game) -> tuple:
    """The state a built position must reproduce (the generator and past hands aside)."""
    owner = game.owner if game.phase in (FOLLOW, TAKING) else None
    return (
        game.hands,
        game.table,
        owner,
        game.take_from,
        game.discard,
        game.known,
        game.set_aside,
        game.phase,
        game.current,
        game.passes,
        game.legal,
        game.totals,
        game.hand_leader,
    )


def check_cards(game: Game) -> None:
    """Every card of the deck in play in one place; hands of at most 9 cards (R12)."""
    places = list(game.where().values())
    assert sum(bits.bit_count() for bits in places) == game.deck.bit_count()
    union = 0
    for bits in places:
        union |= bits
    assert union == deck_bits(game.config.colours)
    assert all(h.bit_count() <= MAX_HAND for h in game.hands)
    assert all(k & ~h == 0 for k, h in zip(game.known, game.hands))


positions = st.tuples(  # config, seed, moves, phase wanted
    configs(),
    st.integers(0, 2**32 - 1),
    st.integers(0, 120),
    st.sampled_from([TAKING, FOLLOW, LEAD]),
)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(position=positions)
def test_valid_positions_are_accepted_rebuilt_exactly_and_play_to_the_end(position) -> None:
    config, seed, moves, phase = position
    game = played_game(config, seed, moves, phase)
    assert not game.is_over
    event(f"phase {PHASE_NAMES[game.phase]}")
    built = Game.from_position(config, seed=seed + 1, **read_position(game))
    assert state(built) == state(game)
    assert np.array_equal(observe(built, built.current), observe(game, game.current))
    # The same actions take both games the same way until the hand ends...
    rng = np.random.default_rng(seed)
    hands_before = len(game.history)
    decisions = 0
    while not built.history:
        action = built.legal[rng.integers(len(built.legal))]
        assert built.apply(action) == game.apply(action)
        decisions += 1
        assert decisions <= MAX_DECISIONS
        if built.history:
            assert built.history == game.history[hands_before:]
            assert built.totals == game.totals and built.is_over == game.is_over
        else:
            assert state(built) == state(game)
    # ... and the built game plays on to the end of its episode.
    while not built.is_over:
        check_cards(built)
        built.apply(built.legal[rng.integers(len(built.legal))])
        decisions += 1
        assert decisions <= MAX_DECISIONS
    assert built.legal == [] and built.winners


# -- invalid positions: one field corrupted ------------------------------------------------------

Corruption = Callable[[dict, Config, Game, np.random.Generator], "tuple[str, dict] | None"]
CORRUPTIONS: dict[str, Corruption] = {}


def corruption(function: Corruption) -> Corruption:
    CORRUPTIONS[function.__name__] = function
    return function


def _with(kwargs: dict, **changes: object) -> dict:
    return {**kwargs, **changes}


def _pick(rng: np.random.Generator, options: list) -> object:
    return options[int(rng.integers(len(options)))]


def _hands_with(kwargs: dict, seat: int, cards: list) -> list:
    hands = [list(h) for h in kwargs["hands"]]
    hands[seat] = cards
    return hands


@corruption
def passes_out_of_range(kwargs, config, game, rng):
    n = config.players
    if game.phase == FOLLOW:
        return "passes", _with(kwargs, passes=_pick(rng, [n - 1, n, n + 3, 5 + n, -1]))
    return "passes", _with(kwargs, passes=_pick(rng, [1, n - 1, 5, -1]))


@corruption
def passes_not_an_int(kwargs, config, game, rng):
    return "passes", _with(kwargs, passes=_pick(rng, [0.0, "0", None, True]))


@corruption
def owner_missing_or_out_of_range(kwargs, config, game, rng):
    if game.phase != FOLLOW:
        return None
    n = config.players
    return "owner", _with(kwargs, owner=_pick(rng, [None, n, 9, -1, 1.0, "1"]))


@corruption
def owner_is_current_while_following(kwargs, config, game, rng):
    if game.phase != FOLLOW:
        return None
    return "owner", _with(kwargs, owner=game.current)


@corruption
def owner_while_leading_or_another_seat_while_taking(kwargs, config, game, rng):
    if game.phase == FOLLOW:
        return None
    seat = (game.current + int(rng.integers(1, config.players))) % config.players
    return "owner", _with(kwargs, owner=seat if game.phase == TAKING else game.current)


@corruption
def totals_wrong_length(kwargs, config, game, rng):
    totals = kwargs["totals"]
    return "totals", _with(kwargs, totals=_pick(rng, [totals + [0], totals[:-1], []]))


@corruption
def totals_bad_entry(kwargs, config, game, rng):
    totals = list(kwargs["totals"])
    bad = [-1, 1.5, None]
    if config.episode == "game":
        bad.append(config.threshold)  # the game would be over already (R14)
    totals[int(rng.integers(len(totals)))] = _pick(rng, bad)
    return "totals", _with(kwargs, totals=totals)


@corruption
def hands_wrong_count(kwargs, config, game, rng):
    hands = kwargs["hands"]
    return "hands", _with(kwargs, hands=_pick(rng, [hands + [[]], hands[:-1]]))


@corruption
def hand_over_nine_cards(kwargs, config, game, rng):
    seat = int(rng.integers(config.players))
    hand = kwargs["hands"][seat]
    spare = cards_of(game.set_aside)
    if len(hand) + len(spare) <= MAX_HAND:
        return None
    return "hands", _with(kwargs, hands=_hands_with(kwargs, seat, hand + spare))


@corruption
def hand_empty(kwargs, config, game, rng):
    seat = _pick(rng, [game.current, int(rng.integers(config.players))])
    return "hands", _with(kwargs, hands=_hands_with(kwargs, seat, []))


@corruption
def current_out_of_range(kwargs, config, game, rng):
    return "current", _with(kwargs, current=_pick(rng, [-1, config.players, 7, 0.0, "0", True]))


@corruption
def table_no_combo(kwargs, config, game, rng):
    table = kwargs["table"] or []
    spoilers = [
        c for c in cards_of(game.set_aside) if not combos.is_combo(oracle_bits(table + [c]))
    ]
    return "table", _with(kwargs, table=table + [_pick(rng, spoilers)] if spoilers else [])


@corruption
def take_from_no_combo(kwargs, config, game, rng):
    if game.phase != TAKING:
        return None
    take = kwargs["take_from"]
    spoilers = [c for c in cards_of(game.set_aside) if not combos.is_combo(oracle_bits(take + [c]))]
    return "take_from", _with(kwargs, take_from=take + [_pick(rng, spoilers)] if spoilers else [])


@corruption
def take_from_without_table(kwargs, config, game, rng):
    if game.phase != TAKING:
        return None
    return "take_from", _with(kwargs, table=None)


@corruption
def take_from_not_beaten_by_the_table(kwargs, config, game, rng):
    if game.phase != TAKING:
        return None
    free = game.set_aside | game.take_from
    unbeaten = [
        i
        for i in range(NUM_COMBOS)
        if COMBO_BITS[i] & ~free == 0 and not combos.beats(game.table, i)
    ]
    if unbeaten and rng.integers(2):
        return "take_from", _with(kwargs, take_from=cards_of(COMBO_BITS[_pick(rng, unbeaten)]))
    # The two combos swapped: the one taken from never beats the one that beat it (R7).
    return "take_from", _with(kwargs, table=kwargs["take_from"], take_from=kwargs["table"])


@corruption
def card_not_a_card(kwargs, config, game, rng):
    bad = _pick(rng, [NUM_CARDS, 100, -1, 1.5, "R1", None])
    return _put_card(kwargs, config, rng, bad)


@corruption
def card_colour_not_in_play(kwargs, config, game, rng):
    if config.colours == 6:
        return None
    out = int(rng.integers(config.colours * 9, NUM_CARDS))
    return _put_card(kwargs, config, rng, out)


def _put_card(kwargs, config, rng, card):
    if rng.integers(2):
        return "discard", _with(kwargs, discard=kwargs["discard"] + [card])
    seat = int(rng.integers(config.players))
    hand = kwargs["hands"][seat][: MAX_HAND - 1]
    return "hands", _with(kwargs, hands=_hands_with(kwargs, seat, hand + [card]))


@corruption
def card_listed_twice(kwargs, config, game, rng):
    seat = int(rng.integers(config.players))
    hand = kwargs["hands"][seat]
    return "hands", _with(kwargs, hands=_hands_with(kwargs, seat, hand[:-1] + [hand[0]] * 2))


@corruption
def card_in_two_places(kwargs, config, game, rng):
    """One card added to a second place: the message names both places."""
    seat = int(rng.integers(config.players))
    hand = kwargs["hands"][seat]
    others = [c for s, h in enumerate(kwargs["hands"]) if s != seat for c in h]
    placed = kwargs["discard"] + (kwargs["table"] or []) + (kwargs["take_from"] or [])
    choice = int(rng.integers(3))
    if choice == 0:  # a hand's card also in the discard
        return "discard", _with(kwargs, discard=kwargs["discard"] + [_pick(rng, hand)])
    if choice == 1 and others:  # another seat's card in this hand
        return "hands", _with(kwargs, hands=_hands_with(kwargs, seat, hand + [_pick(rng, others)]))
    if placed:  # a card on the table, under it or discarded, also in a hand
        return "hands", _with(kwargs, hands=_hands_with(kwargs, seat, hand + [_pick(rng, placed)]))
    return None


@corruption
def known_not_in_hand(kwargs, config, game, rng):
    seat = int(rng.integers(config.players))
    outside = cards_of(game.deck & ~game.hands[seat])
    known = [list(k) for k in kwargs["known"]]
    known[seat] = known[seat] + [_pick(rng, outside)]
    return "known", _with(kwargs, known=known)


@corruption
def known_wrong_length(kwargs, config, game, rng):
    known = kwargs["known"]
    return "known", _with(kwargs, known=_pick(rng, [known + [[]], known[:-1]]))


@corruption
def hand_leader_not_a_seat(kwargs, config, game, rng):
    return "hand_leader", _with(kwargs, hand_leader=_pick(rng, [-1, config.players, 9, "0"]))


def oracle_bits(cards: list) -> int:
    return sum(1 << c for c in set(cards))


FIELD_AT_START = re.compile(rf"^({'|'.join(FIELDS)}): ")


@settings(max_examples=400, deadline=None, derandomize=True)
@given(position=positions, kind=st.sampled_from(sorted(CORRUPTIONS)), pick=st.integers(0, 2**32))
def test_a_position_with_one_corrupted_field_is_refused_naming_it(position, kind, pick) -> None:
    config, seed, moves, phase = position
    game = played_game(config, seed, moves, phase)
    kwargs = read_position(game)
    Game.from_position(config, **kwargs)  # the uncorrupted position is valid
    corrupted = CORRUPTIONS[kind](kwargs, config, game, np.random.default_rng(pick))
    event(f"{kind}: {'applies' if corrupted else 'does not apply'}")
    if corrupted is None:  # this corruption does not apply to this position
        return
    field, bad = corrupted
    with pytest.raises(ValueError) as error:
        Game.from_position(config, **bad)
    message = str(error.value)
    start = FIELD_AT_START.match(message)
    assert start, f"{kind}: the message does not start with a field name: {message}"
    if kind == "card_in_two_places":  # blame may fall on either place; both are named
        assert field in message, message
    else:
        assert start.group(1) == field, f"{kind}: {message}"
    assert " must " in message, message  # ... and it states what is allowed


# -- the cases that went wrong before, one by one -------------------------------------------------

HANDS4 = [oracle.ids(h) for h in ("R1 R5 Y2", "B9 B4 Y1", "O6 O7", "G2 G3")]
CONFIG4 = Config(players=4)


def follow4(**changes: object) -> dict:
    """Seat 1 follows R8 R3, played by seat 0 (a valid position once ``changes`` are undone)."""
    return {"hands": HANDS4, "current": 1, "table": oracle.ids("R8 R3"), "owner": 0, **changes}


@pytest.mark.parametrize(
    ("kwargs", "field", "allowed"),
    [
        # R9, R11: 5 passes at 4 players used to make play_forced() pass forever.
        pytest.param(follow4(passes=5), "passes", "0-2", id="follow passes=5"),
        pytest.param(follow4(passes=3), "passes", "0-2", id="follow passes=3"),
        pytest.param(follow4(passes=-1), "passes", "0-2", id="follow passes=-1"),
        pytest.param(follow4(passes=1.0), "passes", "0-2", id="follow passes=1.0"),
        pytest.param(
            {"hands": HANDS4, "current": 1, "passes": 1},
            "passes",
            "must be 0 when leading",
            id="lead passes=1",
        ),
        # owner=9 used to let apply(PASS) change the state, then fail with IndexError.
        pytest.param(follow4(owner=9), "owner", "0-3", id="follow owner=9"),
        pytest.param(follow4(owner=-1), "owner", "0-3", id="follow owner=-1"),
        pytest.param(follow4(owner=1), "owner", "other than current (1)", id="follow owner=1"),
        pytest.param(follow4(owner=None), "owner", "0-3", id="follow owner=None"),
        pytest.param(
            {"hands": HANDS4, "current": 1, "owner": 2},
            "owner",
            "None when leading",
            id="lead owner=2",
        ),
        # totals of the wrong length used to be cut silently.
        pytest.param(
            follow4(totals=[1, 2, 3]), "totals", "4 penalty totals", id="follow totals=[1, 2, 3]"
        ),
        pytest.param(
            follow4(totals=[1, 2, 3, 4, 5]),
            "totals",
            "4 penalty totals",
            id="follow totals=[1, 2, 3, 4, 5]",
        ),
        pytest.param(
            follow4(totals=[1, -2, 3, 4]), "totals", "0-14", id="follow totals=[1, -2, 3, 4]"
        ),
        pytest.param(
            follow4(totals=[1, 15, 3, 4]), "totals", "0-14", id="follow totals=[1, 15, 3, 4]"
        ),
        # R12, R13: a hand of 10 cards; an empty hand to lead; any empty hand in play.
        pytest.param(
            follow4(hands=[oracle.ids("R1 R2 R3 R4 R5 R6 R7 R9 Y9 B2")] + HANDS4[1:]),
            "hands",
            "1-9",
            id="follow, 10 cards in hand",
        ),
        pytest.param(
            {"hands": [[]] + HANDS4[1:], "current": 0},
            "hands",
            "1-9",
            id="lead from an empty hand",
        ),
        pytest.param(follow4(hands=HANDS4[:3] + [[]]), "hands", "1-9", id="follow, seat 3 empty"),
        pytest.param(follow4(hands=HANDS4[:3]), "hands", "4 hands", id="follow, 3 hands"),
        pytest.param(follow4(current=-1), "current", "0-3", id="follow current=-1"),
        pytest.param(follow4(current=7), "current", "0-3", id="follow current=7"),
        pytest.param(follow4(current=True), "current", "0-3", id="follow current=True"),
        pytest.param(
            follow4(table=oracle.ids("R8 B3")),
            "table",
            "one colour or one value",
            id="follow table=R8 B3",
        ),
        pytest.param(follow4(table=[]), "table", "one colour or one value", id="follow table=[]"),
        # R7: the table combo must beat the combo taken from; a take needs a table.
        pytest.param(
            follow4(take_from=oracle.ids("Y8 Y9"), owner=None),
            "take_from",
            "R7",
            id="follow take_from=Y8 Y9, owner=None",
        ),
        pytest.param(
            follow4(take_from=oracle.ids("Y2 Y3 Y4"), owner=None),
            "take_from",
            "R7",
            id="follow take_from=Y2 Y3 Y4, owner=None",
        ),
        pytest.param(
            follow4(take_from=oracle.ids("Y8 B9"), owner=None),
            "take_from",
            "one colour or one",
            id="follow take_from=Y8 B9, owner=None",
        ),
        pytest.param(
            {"hands": HANDS4, "current": 1, "take_from": oracle.ids("Y8")},
            "take_from",
            "table",
            id="take_from without table",
        ),
        pytest.param(follow4(discard=[54]), "discard", "0-53", id="follow discard=[54]"),
        pytest.param(follow4(discard=[-3]), "discard", "0-53", id="follow discard=[-3]"),
        pytest.param(follow4(discard=["R1"]), "discard", "0-53", id="follow discard=[R1]"),
        pytest.param(
            follow4(discard=oracle.ids("R8")), "discard", "one place", id="follow discard=R8"
        ),
        pytest.param(
            follow4(hands=[HANDS4[0] + oracle.ids("B9")] + HANDS4[1:]),
            "hands",
            "one place",
            id="follow, B9 in two hands",
        ),
        pytest.param(
            follow4(known=[oracle.ids("R1"), oracle.ids("R1"), [], []]),
            "known",
            "subset",
            id="follow known=[R1, R1, [], []]",
        ),
        pytest.param(follow4(known=[[], []]), "known", "4 sets", id="follow known=[[], []]"),
        pytest.param(follow4(hand_leader=4), "hand_leader", "0-3", id="follow hand_leader=4"),
    ],
)
def test_inconsistent_positions_are_refused_naming_the_field_and_what_is_allowed(
    kwargs: dict, field: str, allowed: str
) -> None:
    with pytest.raises(ValueError) as error:
        Game.from_position(CONFIG4, **kwargs)
    message = str(error.value)
    assert message.startswith(f"{field}: "), message
    assert " must " in message and allowed in message, message


def test_the_base_positions_of_the_cases_above_are_valid() -> None:
    game = Game.from_position(CONFIG4, **follow4(passes=2, totals=[1, 14, 3, 4], hand_leader=3))
    assert game.phase == FOLLOW and game.owner == 0
    game.play_forced()
    game = Game.from_position(CONFIG4, **follow4(take_from=oracle.ids("Y6 Y7"), owner=1))
    assert game.phase == TAKING
    game = Game.from_position(CONFIG4, hands=HANDS4, current=2)
    assert game.phase == LEAD


def test_colour_out_of_play_is_refused_with_the_deck_in_play() -> None:
    config = Config(players=2)  # 4 colours: ids 0-35
    with pytest.raises(ValueError, match=r"^hands: .*0-35.*not in the deck in play"):
        Game.from_position(config, [oracle.ids("P1"), oracle.ids("R2")], 0)
    with pytest.raises(ValueError, match=r"^config: "):
        Game.from_position(None, HANDS4, 0)  # type: ignore[arg-type]


# -- the observation's static part is cached for a bounded number of configs ----------------------


def test_observation_config_cache_stays_bounded_over_many_configs() -> None:
    """50,000 games each with their own Config used to leave 50,000 cache entries; 1,000 configs
    (every threshold) are many times the cache's bound."""
    hands = [oracle.ids(h) for h in ("R1 R5", "B9 B4", "O6 O7")]
    configs = [Config(players=3, threshold=t) for t in range(1, 1001)]  # every threshold allowed
    for config in configs:
        threshold = config.threshold
        game = Game.from_position(config, hands, 0)
        obs = observe(game, 1)
        # The cached tail is this config's, never a stale one of an evicted or reused entry.
        assert views(obs)["threshold"][0] == np.float32(threshold / 100)
        assert len(observation._static_tails) <= observation.STATIC_TAILS_MAX
    assert len(configs) > observation.STATIC_TAILS_MAX
    # Interleaved configs still encode their own values.
    a, b = Config(players=2, threshold=5), Config(players=6, threshold=7, colours=6)
    ga = Game.from_position(a, [oracle.ids("R1"), oracle.ids("R2")], 0)
    gb = Game(b, seed=0)
    for _ in range(3):
        assert views(observe(ga, 0))["players"].tolist() == [1, 0, 0, 0, 0]
        assert views(observe(gb, 0))["players"].tolist() == [0, 0, 0, 0, 1]
        assert views(observe(ga, 0))["colours"].tolist() == [1, 1, 1, 1, 0, 0]
