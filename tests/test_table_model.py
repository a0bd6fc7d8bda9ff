"""The search's table model (``agents.table_model``, ``search:N:model``): every pass it records
was really made by that seat with the cards it holds now, it reads nothing but the observations
(games that look the same to the seat get the same actions and scores), it draws worlds that
agree with the passes more often than uniform sampling does, and its spec is parsed strictly."""

from __future__ import annotations

import numpy as np
import pytest
from lockstep import play_in_lockstep

from agents.registry import check_spec, make
from agents.search import SearchAgent, _position, _sample_hands
from agents.table_model import SAME, UP, TableModel, beat_kinds
from odin_env.cards import bits_of as combo_bits
from odin_env.cards import cards_of
from odin_env.combos import COMBO_BITS, COMBO_NUMBER, COMBO_SIZE
from odin_env.observation import observe
from odin_env.rules import FOLLOW, PASS, Config, Game, follow_plays


def _truth_walk(config: Config, seed: int, observer: int):
    """Play one game (``planner`` everywhere; forced decisions applied without asking, as a
    tournament does) and yield, at each real decision of ``observer``, the model after
    :meth:`TableModel.observe` and the passes made so far this hand as
    ``{(seat, combo, hand)}``."""
    game = Game(config, seed=seed)
    players = [make("planner", seed=seed + s) for s in range(config.players)]
    model = TableModel()
    passes: set[tuple[int, int, int]] = set()
    hand = game.hand_number
    while not game.is_over:
        if game.hand_number != hand:
            passes, hand = set(), game.hand_number
        seat = game.current
        if len(game.legal) > 1 and seat == observer:
            model.observe(observe(game, seat))
            yield game, model, passes
            action = players[seat].act(observe(game, seat), game.legal_mask())
            model.decided(action)
        elif len(game.legal) > 1:
            action = players[seat].act(observe(game, seat), game.legal_mask())
        else:
            action = game.legal[0]
        if action == PASS:
            passes.add((seat, game.table, game.hands[seat]))
        game.apply(action)


@pytest.mark.parametrize("players", [3, 4, 5])
def test_every_pass_the_model_applies_was_made_with_the_cards_held_now(players: int) -> None:
    """Soundness against the hidden truth: each applicable event ``(slot, combo)`` is a pass
    that seat made on that combo this hand holding exactly its present hand; the memory adds
    passes the current observation alone does not show."""
    config = Config(players=players, threshold=12)
    applied = remembered = 0
    for seed in range(6):
        observer = seed % players
        for game, model, passes in _truth_walk(config, seed, observer):
            shown = set()
            if game.phase == FOLLOW:
                shown = {(k, game.table) for k in range(players - game.passes, players)}
            for slot, combo in model.applicable():
                seat = (observer + slot) % players
                assert (seat, combo, game.hands[seat]) in passes, (seed, slot, combo)
                applied += 1
                remembered += (slot, combo) not in shown
    assert applied > 50 and remembered > 10, (applied, remembered)


def test_beat_kinds_agree_with_the_rules() -> None:
    rng = np.random.default_rng(0)
    config = Config(players=4)
    for seed in range(40):
        game = Game(config, seed=seed)
        hand = game.hands[int(rng.integers(4))]
        for combo in rng.integers(0, len(COMBO_SIZE), size=25).tolist():
            plays = follow_plays(hand, combo)
            same, up = beat_kinds(np.array([hand]), combo)
            assert bool(same[0]) == any(COMBO_SIZE[p] == COMBO_SIZE[combo] for p in plays)
            assert bool(up[0]) == any(COMBO_SIZE[p] > COMBO_SIZE[combo] for p in plays)


def test_worlds_drawn_agree_with_an_observed_pass_more_often() -> None:
    """Slot 3 has just passed on seat 2's best pair: worlds where it holds a higher pair get
    the likelihood ``SAME``, those with a triple but no such pair ``UP``, others 1; the worlds
    drawn hold no beat far more often than uniform ones, and never collapse to zero worlds."""
    config = Config(players=4)
    hands = [cards_of(x) for x in Game(config, seed=5).hands]
    two = [p for p in follow_plays(combo_bits(hands[2]), 0) if COMBO_SIZE[p] == 2]
    pair = max(two, key=lambda p: COMBO_NUMBER[p])
    hands[2] = [c for c in hands[2] if not COMBO_BITS[pair] >> c & 1]
    game = Game.from_position(config, hands, 0, table=cards_of(COMBO_BITS[pair]), owner=2,
                              passes=1)  # fmt: skip
    obs = observe(game, 0)
    model = TableModel()
    model.observe(obs)
    assert model.applicable() == [(3, pair)]
    position, _, unseen, needs = _position(obs, game.legal_mask())
    pool = _sample_hands(position, unseen, needs, 4000, np.random.default_rng(1))
    same, up = beat_kinds(pool[:, 3], pair)
    expected = np.where(same, np.log(SAME), np.where(up, np.log(UP), 0.0))
    assert np.array_equal(model.log_weights(pool), expected)
    drawn = model.choose(pool, 200, np.random.default_rng(2))
    assert drawn.shape == (200, 4) and len({tuple(r) for r in drawn.tolist()}) == 200
    uniform = (~same & ~up).mean()
    weighted = (~np.logical_or(*beat_kinds(drawn[:, 3], pair))).mean()
    assert 0 < uniform < 0.5 and weighted > 1.5 * uniform, (uniform, weighted)
    beaten = pool[same | up]  # every world against the pass: still worlds to search
    assert len(beaten) > 10 and model.choose(beaten, 10, np.random.default_rng(3)).shape == (10, 4)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_games_that_look_the_same_to_the_seat_get_the_same_actions_and_scores(seed: int) -> None:
    """One hand played in lockstep in two games whose other seats' hidden cards differ, every
    other seat choosing among the actions legal in both: the observer's observations are
    identical, and so are ``search:N:model``'s actions and scores, decision by decision; its
    memory was used (passes applied) and changes the scores from the plain search's."""
    seen, twin, plain, used = play_in_lockstep(
        seed, {"model": True}, lambda search: bool(search.table.applicable())
    )
    assert seen == twin and len(seen) >= 3
    assert used >= 1
    assert seen != plain[: len(seen)]


def test_the_spec_takes_model_after_a_budget_and_refuses_anything_else() -> None:
    for spec, rollouts, ms in (("search:64:model", 64, None), ("search:model", 512, None),
                               ("search:20ms:model", 512, 20)):  # fmt: skip
        agent = make(spec, seed=0)
        assert isinstance(agent, SearchAgent) and agent.table is not None
        assert (agent.rollouts, agent.ms) == (rollouts, ms)
    assert make("search:64", seed=0).table is None
    for bad in ("search:64:mode", "search::model", "search:model:64", "search:64:model:model",
                "search:0:model", "search:ms:model", "search:model:model"):  # fmt: skip
        with pytest.raises(ValueError, match="bad search spec"):
            check_spec(bad)
