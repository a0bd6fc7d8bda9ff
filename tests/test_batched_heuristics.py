"""``greedy``'s kernel (:class:`agents.heuristics.Greedy`) against the readable Python oracle of
``tests/oracle_heuristics.py``.

The differential test plays seeded games on the batched engine (2-6 players, default and fewest
colours, both episode modes, with and without forced decisions applied) with greedy and random
seats, and at every decision compares the kernel's row with the oracle's ``act`` on that
row; it counts the kinds of decision it saw so that a thin sample cannot pass unnoticed. A fuzz
test does the same on arbitrary masks the engine never shows. Tournaments must then give the
same games on the batched and the single engine.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_heuristics import Greedy as OracleGreedy
from probe_agents import ObsHash

from agents.batch import BatchRandomAgent, act_by_seat
from agents.hand import VALUE_OF, joins, see
from agents.heuristics import Greedy
from agents.registry import has_batch_form, make_batch_agent
from odin_env.batched import BatchedGames
from odin_env.combos import COMBO_BITS, COMBO_SIZE
from odin_env.observation import LAYOUT, OBS_SIZE, views
from odin_env.rules import NUM_ACTIONS, PASS, TAKE, Config
from odin_lab.evaluation.tournament import play_deals, play_tournament

# 2-6 players; default colours and the fewest the players allow; both episode modes; forced
# decisions applied by the engine or shown (only then do pass-only decisions reach an agent).
_CONFIGS = [
    (Config(players=n, threshold=10, colours=colours, episode=episode), auto_forced)
    for n in range(2, 7)
    for colours, episode, auto_forced in (
        (None, "game", True),
        (max(2, n), "hand", False),
    )
]


_KINDS = ("take", "take_tie", "pass_only", "lead", "follow_play", "whole_hand")
"""Decisions the differential test must meet: takes (also with a tie, broken by card id),
decisions with no legal play, leads, follows with a play, plays of a whole hand of 2+ cards."""


def _kinds(seen_rows: list, greedy_actions: np.ndarray) -> dict[str, int]:
    """How many decisions of each kind a list of ``Seen`` rows holds (with greedy's actions)."""
    counts = dict.fromkeys(_KINDS, 0)
    for seen, action in zip(seen_rows, greedy_actions.tolist()):
        if seen.takes:
            counts["take"] += 1
            keys = [(joins(seen.hand, c), VALUE_OF[c]) for c in seen.takes]
            counts["take_tie"] += keys.count(max(keys)) > 1
        elif seen.plays.size == 0:
            counts["pass_only"] += 1
        else:
            counts["lead" if not seen.can_pass else "follow_play"] += 1
            if COMBO_BITS[action] == seen.hand and seen.hand.bit_count() > 1:
                counts["whole_hand"] += 1
    return counts


def test_batched_greedy_picks_greedys_action_at_every_engine_decision():
    greedy = OracleGreedy()
    batched = Greedy()
    totals = dict.fromkeys(_KINDS, 0)
    episodes = 0
    for j, (config, auto_forced) in enumerate(_CONFIGS):
        engine = BatchedGames(config, batch=24, seed=100 + j, auto_forced=auto_forced)
        # Greedy in the even seats, random in the odd ones: greedy meets both kinds of play.
        table = [batched, BatchRandomAgent(seed=j)]
        seat_agent = np.array([s % 2 for s in range(config.players)])
        for _ in range(100):
            got = batched.act_batch(engine.obs, engine.mask).copy()
            seen = [see(engine.obs[i], engine.mask[i]) for i in range(engine.batch)]
            want = np.array(
                [greedy.act(engine.obs[i], engine.mask[i]) for i in range(engine.batch)]
            )
            np.testing.assert_array_equal(got, want)
            for key, count in _kinds(seen, want).items():
                totals[key] += count
            # The whole hand, when legal, is the one play of the most cards (R8, R9): greedy's
            # whole-hand rule is implied by its play rule on the engine's masks.
            for s, action in zip(seen, want.tolist()):
                whole = [int(a) for a in s.plays if COMBO_BITS[a] == s.hand]
                if whole and not s.takes:
                    sizes = COMBO_SIZE[s.plays]
                    assert (sizes == sizes.max()).sum() == 1 and action == whole[0]
            engine.step(act_by_seat(table, engine.obs, engine.mask, seat_agent[engine.seat]))
            episodes += int(engine.done.sum())
    assert episodes >= 200
    assert all(count > 0 for count in totals.values()), totals


def test_batched_greedy_matches_greedy_on_arbitrary_masks():
    """Masks the engine never shows: plays not in the hand, entries other than 0 and 1, takes
    beside plays, empty rows. Greedy's rules still decide, row for row."""
    rng = np.random.default_rng(5)
    rows = 400
    obs = np.zeros((rows, OBS_SIZE), dtype=np.float32)
    # Hand entries above 0.5 are cards, below are not (the reading of ``card_sets``).
    hand = rng.random((rows, 54)) < rng.uniform(0.02, 0.2, (rows, 1))
    obs[:, LAYOUT["hand"][0]] = np.where(
        hand, rng.uniform(0.51, 1.0, (rows, 54)), rng.uniform(0.0, 0.49, (rows, 54))
    )
    mask = np.zeros((rows, NUM_ACTIONS), dtype=np.int8)
    density = rng.choice([0.0, 0.0005, 0.005, 0.05], size=(rows, 1))
    mask[:] = (rng.random((rows, NUM_ACTIONS)) < density) * rng.choice([1, 2, -1], (rows, 1))
    mask[rows // 2 :, TAKE:] = 0  # half the rows can only play or pass
    # Some rows may play their whole hand beside larger plays: the whole-hand rule wins there.
    for i in range(0, rows, 7):
        cards = rng.choice(9, size=int(rng.integers(2, 6)), replace=False) + 9 * (i % 6)
        obs[i, LAYOUT["hand"][0]] = 0.0
        obs[i, LAYOUT["hand"][0].start + cards] = 1.0
        bits = sum(1 << int(c) for c in cards)
        mask[i, COMBO_BITS.index(bits)] = 1
        mask[i, TAKE:] = 0
    got = Greedy().act_batch(obs, mask)
    want = np.array([OracleGreedy().act(obs[i], mask[i]) for i in range(rows)])
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64 and got.shape == (rows,)
    # The sample holds every branch: takes, passes, whole hands beside larger plays.
    assert (got >= TAKE).any() and (got == PASS).any()
    placed = range(0, rows, 7)
    assert all(COMBO_BITS[got[i]] == see(obs[i], mask[i]).hand for i in placed)
    assert any(
        COMBO_SIZE[np.flatnonzero(mask[i, :PASS])].max() > COMBO_SIZE[got[i]] for i in placed
    )


@pytest.mark.parametrize("players", [2, 4, 5])
def test_greedy_tournaments_are_the_same_games_on_both_engines(players: int):
    config = Config(players=players, threshold=10, first_player="random")
    batched = Greedy()
    # Greedy against other play: a greedy decision that differs anywhere changes the game.
    fast = [batched if s % 2 == 0 else ObsHash(s) for s in range(players)]
    slow = [OracleGreedy() if s % 2 == 0 else ObsHash(s) for s in range(players)]
    single = play_deals(slow, config, 6, seed=11, engine="single")
    assert play_deals(fast, config, 6, seed=11, engine="batched", batch=8) == single
    # By spec: an all-greedy table is deterministic, so the engines give the same records.
    specs = ["greedy"] * players
    one = play_tournament(specs, config, 4, seed=3, engine="single", progress=False)
    assert play_tournament(specs, config, 4, seed=3, engine="batched", progress=False) == one


def test_greedy_is_registered_as_a_batched_agent():
    assert has_batch_form("greedy")
    agent = make_batch_agent("greedy", seed=4)
    assert isinstance(agent, Greedy) and agent.name == "greedy"
    assert not has_batch_form("search")
    # greedy against random: ``auto`` now plays the batched engine (the keyed random agent
    # draws differently on the single engine, which tells which one played).
    config = Config(players=3, threshold=10)
    specs = ["greedy", "random", "random"]
    auto = play_tournament(specs, config, 3, seed=1, progress=False)
    assert auto == play_tournament(specs, config, 3, seed=1, engine="batched", progress=False)
    assert auto != play_tournament(specs, config, 3, seed=1, engine="single", progress=False)


def test_bad_shapes_are_refused_naming_the_expected_shape():
    agent = Greedy()
    obs = np.zeros((3, OBS_SIZE), dtype=np.float32)
    mask = np.zeros((3, NUM_ACTIONS), dtype=np.int8)
    with pytest.raises(ValueError, match=rf"obs must have shape \(B, {OBS_SIZE}\)"):
        agent.act_batch(obs[0], mask)
    with pytest.raises(ValueError, match=rf"obs must have shape \(B, {OBS_SIZE}\)"):
        agent.act_batch(obs[:, :-1], mask)
    with pytest.raises(ValueError, match=rf"mask must have shape \(3, {NUM_ACTIONS}\)"):
        agent.act_batch(obs, mask[:2])
    with pytest.raises(ValueError, match=rf"mask must have shape \(3, {NUM_ACTIONS}\)"):
        agent.act_batch(obs, mask[:, :PASS])


def test_batch_size_changes_between_calls_give_the_same_rows():
    """The agent reuses a buffer grown to the largest batch: a smaller or larger batch after it
    must not see stale rows."""
    engine = BatchedGames(Config(players=4), batch=16, seed=2)
    rng_agent = BatchRandomAgent(seed=3)
    for _ in range(5):
        engine.step(rng_agent.act_batch(engine.obs, engine.mask))
    phases = views(engine.obs)["phase"].argmax(axis=1)
    assert len(set(phases.tolist())) == 3  # leads, follows and takes among the rows
    full = Greedy().act_batch(engine.obs, engine.mask)
    agent = Greedy()
    for rows in (slice(0, 5), slice(0, 16), slice(3, 16), slice(10, 12)):
        part = agent.act_batch(engine.obs[rows], engine.mask[rows])
        np.testing.assert_array_equal(part, full[rows])


WARM_CHECK = """
from numba import typeof

from agents.batched_planner import planner_kernel
from agents.batched_shaper import shaper_kernel
from agents.registry import make_batch_agent
from odin_lab.evaluation.warm import warm_kernels
from odin_env.batched import BatchedGames
from odin_env.rules import Config

warm_kernels(["planner", "shaper", "greedy", "random", "ppo"])
engine = BatchedGames(Config(players=4), batch=2, seed=0)
for kernel, spec in ((planner_kernel, "planner"), (shaper_kernel, "shaper")):
    called = (typeof(engine.obs), typeof(engine.mask))
    assert any(tuple(sig[:2]) == called for sig in kernel.signatures), kernel.signatures
    before = len(kernel.signatures)
    make_batch_agent(spec).act_batch(engine.obs, engine.mask)
    assert len(kernel.signatures) == before, kernel.signatures
print("ok")
"""


def test_the_warm_up_compiles_each_kernel_for_the_engines_arrays():
    """``odin_lab.evaluation.warm.warm_kernels`` compiles a heuristic's kernel on zero rows
    ahead of play (in a second process, beside the engine's compile); only the
    specialization the engine's own arrays call is of any use, so the first real call must
    find it and add no other. In a process of its own: no kernel has been called there before."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", WARM_CHECK], cwd=root, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]
