"""Property tests: random legal play over random seeds and settings, checked decision by decision.

At every decision: every card is in exactly one place (R1-R2); no hand holds more than 9 cards
(R12); the legal set and mask equal the brute-force legal set of :mod:`oracle` (R7-R10); the
position after the action equals the oracle's reading of R8-R11. At every hand's end: the
penalties are the cards left (R13), totals add up, and the game ends exactly when a total reaches
the threshold (R14). The observation of every seat matches the game for that seat and is blind
to everything hidden: re-dealing the hidden cards leaves it unchanged.
"""

from __future__ import annotations

import numpy as np
import oracle
from hypothesis import given, settings
from hypothesis import strategies as st

from odin_env.cards import deck_bits, mask_of
from odin_env.observation import observe, players_of, threshold_of, views
from odin_env.rules import FIRST_PLAYER_RULES, LEAD, OVER, TAKING, Config, Game

MAX_DECISIONS_PER_HAND = 5_000
"""Every trick sends at least one card from the hands to the discard, so a hand is finite."""


@st.composite
def configs(draw: st.DrawFn) -> Config:
    players = draw(st.integers(2, 6))
    # Both colour settings: the default (4 colours for 2 players, else 6) or the fewest colours
    # that deal every player 9 cards, and everything in between.
    colours = draw(st.one_of(st.none(), st.integers(max(2, players), 6)))
    return Config(
        players=players,
        threshold=draw(st.integers(1, 20)),
        colours=colours,
        first_player=draw(st.sampled_from(FIRST_PLAYER_RULES)),
        episode=draw(st.sampled_from(["game", "hand"])),
        reward=draw(st.sampled_from(["penalty", "win"])),
    )


def check_cards(game: Game) -> None:
    """Every card of the deck in play is in exactly one place; no hand exceeds 9 (R12)."""
    places = game.where()
    assert sum(bits.bit_count() for bits in places.values()) == game.deck.bit_count()
    union = 0
    for bits in places.values():
        union |= bits
    assert union == game.deck == deck_bits(game.config.colours)
    assert all(h.bit_count() <= 9 for h in game.hands)
    for seat, known in enumerate(game.known):
        assert known & ~game.hands[seat] == 0


def same_position(got: oracle.Position, expected: oracle.Position) -> None:
    assert got.hands == expected.hands
    assert (got.current, got.phase, got.table, got.take_from) == (
        expected.current,
        expected.phase,
        expected.table,
        expected.take_from,
    )
    assert got.discard == expected.discard
    if got.phase != "lead":
        assert (got.owner, got.passes) == (expected.owner, expected.passes)


def check_observation(game: Game, seat: int) -> None:
    """The views of ``seat``'s observation equal the game's sets, seen from ``seat``."""
    n = game.config.players
    obs = observe(game, seat)
    v = views(obs)
    places = game.where()
    assert np.array_equal(v["hand"], mask_of(game.hands[seat]))
    assert np.array_equal(v["table"], mask_of(places["table"]))
    assert np.array_equal(v["take"], mask_of(places["take"]))
    assert np.array_equal(v["discard"], mask_of(game.discard))
    for k in range(6):
        expected = game.known[(seat + k) % n] if k < n else 0
        assert np.array_equal(v["known"][k], mask_of(expected))
    sizes = [game.hands[(seat + k) % n].bit_count() / 9 for k in range(n)] + [0] * (6 - n)
    assert np.allclose(v["hand_size"], sizes)
    penalty = [game.totals[(seat + k) % n] / game.config.threshold for k in range(n)]
    assert np.allclose(v["penalty"], penalty + [0] * (6 - n))
    assert v["phase"].sum() == (0 if game.phase == OVER else 1)
    if game.phase != OVER:
        assert v["phase"][game.phase] == 1
    owner = game.owner if game.phase != LEAD else -1
    assert v["table_owner"].tolist() == [float((seat + k) % n == owner and k < n) for k in range(6)]
    assert v["passes"][0] == np.float32(game.passes / (n - 1))
    assert v["players"].tolist() == [float(p == n) for p in range(2, 7)]
    assert players_of(v) == n  # the one reader of the field
    assert v["threshold"][0] == np.float32(game.config.threshold / 100)
    assert threshold_of(obs) == game.config.threshold  # the one reader of the field
    assert v["colours"].tolist() == [float(c < game.config.colours) for c in range(6)]
    # Nothing hidden appears in any card plane: set-aside cards and opponents' unknown cards.
    hidden = game.set_aside
    for s in range(n):
        if s != seat:
            hidden |= game.hands[s] & ~game.known[s]
    seen = sum(v[name].reshape(-1, 6, 9).sum(axis=0) for name in ("hand", "table", "take"))
    seen = seen + v["discard"] + v["known"].sum(axis=0)
    assert not (seen.astype(bool) & mask_of(hidden).astype(bool)).any()


def redeal_hidden(game: Game, seat: int, rng: np.random.Generator) -> Game:
    """The same public position for ``seat`` with the cards it cannot see dealt differently."""
    n = game.config.players
    unknown = [game.hands[s] & ~game.known[s] if s != seat else 0 for s in range(n)]
    pool = oracle.set_of(game.set_aside)
    for bits in unknown:
        pool |= oracle.set_of(bits)
    shuffled = rng.permutation(sorted(pool)).tolist()
    hands = []
    for s in range(n):
        if s == seat:
            hands.append(oracle.set_of(game.hands[s]))
        else:
            count = unknown[s].bit_count()
            hands.append(oracle.set_of(game.known[s]) | set(shuffled[:count]))
            shuffled = shuffled[count:]
    places = game.where()
    return Game.from_position(
        game.config,
        [sorted(h) for h in hands],
        game.current,
        table=sorted(oracle.set_of(places["table"])) or None,
        owner=game.owner if game.phase != LEAD else None,
        take_from=sorted(oracle.set_of(game.take_from)) if game.phase == TAKING else None,
        passes=game.passes,
        discard=sorted(oracle.set_of(game.discard)),
        known=[sorted(oracle.set_of(k)) for k in game.known],
        totals=game.totals,
        hand_leader=game.hand_leader,
    )


@settings(max_examples=45, deadline=None, derandomize=True)
@given(config=configs(), seed=st.integers(0, 2**32 - 1))
def test_r1_to_r14_random_play_matches_the_oracle(config: Config, seed: int) -> None:
    game = Game(config, seed=seed)
    rng = np.random.default_rng(seed)
    hands_played = 0
    decisions_in_hand = 0
    while not game.is_over:
        check_cards(game)
        before = oracle.position_of(game)
        legal = oracle.legal_actions(before)
        assert set(game.legal) == legal
        assert game.legal == sorted(legal)
        assert set(np.flatnonzero(game.legal_mask()).tolist()) == legal
        action = game.legal[rng.integers(len(game.legal))]
        totals_before = list(game.totals)
        rewards = game.apply(action)
        decisions_in_hand += 1
        assert decisions_in_hand <= MAX_DECISIONS_PER_HAND
        expected = oracle.step(before, action)
        if expected == "hand over":
            hands_played += 1
            decisions_in_hand = 0
            penalties = tuple(len(h) for h in before.hands)
            penalties = tuple(0 if s == before.current else k for s, k in enumerate(penalties))
            # The play that empties the hand removes its cards: only the player who went out
            # scores 0, everyone else 1 per card still held (R13).
            assert game.history[-1] == penalties
            assert game.totals == [t + p for t, p in zip(totals_before, penalties)]
            reached = max(game.totals) >= config.threshold
            assert game.is_over == (config.episode == "hand" or reached)
            if config.reward == "penalty":
                assert rewards == [-float(p) for p in penalties]
            elif not game.is_over:
                assert rewards == [0.0] * config.players
            if game.is_over:
                low = min(game.totals)
                assert game.winners == tuple(s for s, t in enumerate(game.totals) if t == low)
                if config.reward == "win":
                    w = len(game.winners)
                    share = [1.0 / w if s in game.winners else 0.0 for s in range(config.players)]
                    assert rewards == share
            else:
                assert [h.bit_count() for h in game.hands] == [9] * config.players
        else:
            assert rewards is None
            assert len(game.history) == hands_played
            same_position(oracle.position_of(game), expected)
    check_cards(game)
    assert game.legal == [] and not game.legal_mask().any()
    assert [sum(col) for col in zip(*game.history)] == game.totals
    if config.episode == "game":
        assert max(game.totals) >= config.threshold
        # ... and not one hand earlier: the game ends exactly when a total reaches the threshold.
        assert all(max(t) < config.threshold for t in _running_totals(game.history)[:-1])
    else:
        assert len(game.history) == 1


def _running_totals(history: list[tuple[int, ...]]) -> list[list[int]]:
    totals, out = [0] * len(history[0]), []
    for row in history:
        totals = [t + p for t, p in zip(totals, row)]
        out.append(totals)
    return out


@settings(max_examples=20, deadline=None, derandomize=True)
@given(config=configs(), seed=st.integers(0, 2**32 - 1))
def test_observation_matches_the_game_and_hides_what_is_hidden(config: Config, seed: int) -> None:
    game = Game(config, seed=seed)
    rng = np.random.default_rng(seed)
    decision = 0
    while True:
        for seat in range(config.players):
            check_observation(game, seat)
        if not game.is_over and decision % 7 == 0:
            seat = int(rng.integers(config.players))
            twin = redeal_hidden(game, seat, rng)
            assert np.array_equal(observe(twin, seat), observe(game, seat))
        if game.is_over:
            break
        game.apply(game.legal[rng.integers(len(game.legal))])
        decision += 1
