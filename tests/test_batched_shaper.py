"""The kernels of ``shaper`` and ``planner`` (:mod:`agents.heuristics`) against the readable
Python oracle of ``tests/oracle_heuristics.py`` (the heuristics as they were written before the
Goat, kept as the kernels' reference for games without it).

Seeded games on the batched engine (2-6 players, default and fewest colours, both episode
modes, forced decisions applied or shown), the heuristic in half the seats and random in the
others; at every decision each row's batched action must equal the oracle's on that row. The kinds
of decision met are counted so that a thin sample cannot pass unnoticed.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_heuristics import Planner as OraclePlanner
from oracle_heuristics import Shaper as OracleShaper

from agents.batch import BatchRandomAgent, act_by_seat
from agents.batched_planner import _finisher
from agents.hand import cover, partition, see
from agents.heuristics import Planner, Shaper
from agents.registry import has_batch_form, make_batch_agent
from odin_env.batched import BatchedGames
from odin_env.cards import GOAT, NUM_CARDS
from odin_env.combos import COMBO_BITS
from odin_env.rules import PASS, Config
from odin_lab.evaluation.tournament import play_deals

_CONFIGS = [
    (Config(players=n, threshold=10, colours=colours, episode=episode), auto_forced)
    for n in range(2, 7)
    for colours, episode, auto_forced in ((None, "game", True), (max(2, n), "hand", False))
]


@pytest.mark.parametrize(("python", "batched"), [(OracleShaper, Shaper), (OraclePlanner, Planner)])
def test_the_numba_form_picks_the_heuristics_action_at_every_engine_decision(python, batched):
    slow, fast = python(), batched()
    kinds = {"take": 0, "pass": 0, "lead": 0, "follow_play": 0, "whole_hand": 0, "threat": 0}
    for j, (config, auto_forced) in enumerate(_CONFIGS):
        engine = BatchedGames(config, batch=16, seed=300 + j, auto_forced=auto_forced)
        table = [fast, BatchRandomAgent(seed=j)]
        seat_agent = np.array([s % 2 for s in range(config.players)])
        for _ in range(60):
            got = fast.act_batch(engine.obs, engine.mask)
            want = [slow.act(engine.obs[i], engine.mask[i]) for i in range(engine.batch)]
            np.testing.assert_array_equal(got, want)
            for i, action in enumerate(want):
                seen = see(engine.obs[i], engine.mask[i])
                if seen.takes:
                    kinds["take"] += 1
                    continue
                if action == PASS:
                    kinds["pass"] += 1
                else:
                    kinds["follow_play" if seen.can_pass else "lead"] += 1
                    whole = COMBO_BITS[action] == seen.hand and seen.hand.bit_count() > 1
                    kinds["whole_hand"] += whole
                kinds["threat"] += bool(OraclePlanner().threats(seen))
            engine.step(act_by_seat(table, engine.obs, engine.mask, seat_agent[engine.seat]))
    assert all(count > 20 for count in kinds.values()), kinds


def test_shaper_is_registered_and_plays_the_same_games_on_both_engines():
    assert has_batch_form("shaper") and has_batch_form("planner") and not has_batch_form("search")
    agent = make_batch_agent("shaper")
    assert isinstance(agent, Shaper) and agent.name == "shaper"
    config = Config(players=4, threshold=10)
    slow = [OracleShaper(), OracleShaper(), OracleShaper(), OracleShaper()]
    single = play_deals(slow, config, 3, seed=5, engine="single")
    assert play_deals([agent] * 4, config, 3, seed=5, engine="batched", batch=4) == single


def test_the_planners_finishing_combo_is_the_oracles_on_random_hands():
    """``_finisher`` (no split stored or sorted) against ``agents.hand.partition``: the first
    combo of a smallest split, the largest of the smallest splits' largest, on hands of 1-9
    cards from all six colours, with and without the Goat (which it leaves out)."""
    rng = np.random.default_rng(20261203)
    checked = 0
    for _ in range(3000):
        cards = rng.choice(NUM_CARDS + 1, size=int(rng.integers(1, 10)), replace=False)
        hand = sum(1 << int(c) for c in cards)
        coloured = hand & ~(1 << GOAT)
        expected = partition(coloured)[0] if cover(coloured) > 1 else 0
        assert _finisher(np.int64(hand)) == expected, cards
        checked += expected != 0
    assert checked > 2000  # most hands split into two combos or more
