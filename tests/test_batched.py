"""The batched engine (:mod:`odin_env.batched`) against the rules engine, and its contracts.

The differential test plays random legal games in both engines from the same seeds and compares
every decision (acting seat, mask, observation bit for bit, rewards, hand ends, outcomes); this
CI slice covers about 300 games over 2-6 players and every setting. The full 10,000-game run is
``python benchmarks/batched_throughput.py --differential 10000``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from agents.base import RandomAgent
from agents.batch import (
    BatchAgent,
    BatchRandomAgent,
    PerGameAgent,
    act_by_seat,
    as_batch_agent,
)
from odin_env.batched import BatchedGames, game_seeds
from odin_env.batched_check import compare_with_rules
from odin_env.observation import OBS_SIZE
from odin_env.rules import FIRST_PLAYER_RULES, NUM_ACTIONS, PASS, Config, Game

# Every first-player rule x episode x reward x auto_forced, with the players cycling 2-6 and the
# colours alternating between the default and the fewest the players allow.
_SETTINGS = list(itertools.product(FIRST_PLAYER_RULES, ("game", "hand"), ("penalty", "win")))
_CASES = [
    (
        Config(
            players=2 + j % 5,
            threshold=(5, 10, 15)[j % 3],
            colours=None if j % 2 else max(2, 2 + j % 5),
            first_player=rule,
            episode=episode,
            reward=reward,
        ),
        auto_forced,
    )
    for j, ((rule, episode, reward), auto_forced) in enumerate(
        itertools.product(_SETTINGS, (True, False))
    )
]


@pytest.mark.parametrize(
    ("config", "auto_forced"),
    _CASES,
    ids=[
        f"{c.players}p-{c.colours}c-{c.first_player}-{c.episode}-{c.reward}-forced{int(a)}"
        for c, a in _CASES
    ],
)
def test_r1_r16_batched_engine_matches_rules_decision_by_decision(
    config: Config, auto_forced: bool
) -> None:
    games, decisions = compare_with_rules(
        config, batch=6, seed=config.players * 1000 + 7, games=9, auto_forced=auto_forced
    )
    assert games >= 9
    assert decisions >= games * 10  # every episode needs at least 9 leads and plays


def test_differential_check_detects_a_wrong_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    # A check that cannot fail proves nothing: break the engine's encoding and expect a report.
    original = BatchedGames.step

    def broken_step(self: BatchedGames, actions: np.ndarray):
        result = original(self, actions)
        self.obs[0, 0] = 1.0 - self.obs[0, 0]  # game 0 shows the wrong first hand card
        return result

    monkeypatch.setattr(BatchedGames, "step", broken_step)
    with pytest.raises(AssertionError, match="obs.*game 0"):
        compare_with_rules(Config(players=3), batch=2, seed=1, games=1)


def test_bad_action_names_the_game_and_changes_no_game() -> None:
    config = Config(players=4, first_player="random")
    engine = BatchedGames(config, batch=5, seed=11)
    twin = BatchedGames(config, batch=5, seed=11)
    for _ in range(7):  # leave the deal, so that the games are in different phases
        actions = np.array([engine.legal_actions(i)[0] for i in range(5)])
        engine.step(actions)
        twin.step(actions)
    before = [a.copy() for a in (engine.obs, engine.mask, engine.seat, engine.totals())]
    actions = np.array([engine.legal_actions(i)[-1] for i in range(5)])
    illegal = next(a for a in range(NUM_ACTIONS) if a not in engine.legal_actions(3))
    bad = actions.copy()
    bad[3] = illegal
    with pytest.raises(ValueError, match=rf"game 3: illegal action {illegal} for seat"):
        engine.step(bad)
    for out_of_range in (-1, NUM_ACTIONS):
        bad[3] = out_of_range
        with pytest.raises(ValueError, match="game 3"):
            engine.step(bad)
    after = (engine.obs, engine.mask, engine.seat, engine.totals())
    assert all(np.array_equal(b, a) for b, a in zip(before, after))
    # Nothing moved, the generators included: the same legal step keeps both engines equal.
    for _ in range(40):
        engine.step(actions)
        twin.step(actions)
        assert np.array_equal(engine.obs, twin.obs) and np.array_equal(engine.mask, twin.mask)
        actions = np.array([engine.legal_actions(i)[-1] for i in range(5)])


def test_bad_action_batch_shape_or_type_is_refused() -> None:
    engine = BatchedGames(Config(players=3), batch=4, seed=2)
    legal = [engine.legal_actions(i)[0] for i in range(4)]
    with pytest.raises(ValueError, match=r"shape \(4,\)"):
        engine.step(np.array(legal[:3]))
    with pytest.raises(ValueError, match="integer array"):
        engine.step(np.array(legal, dtype=np.float64))


def test_result_arrays_are_the_same_buffers_at_every_step() -> None:
    engine = BatchedGames(Config(players=2, episode="hand"), batch=16, seed=4)
    first = engine.reset(seed=4)
    buffers = [(a, a.ctypes.data) for a in first]
    agent = BatchRandomAgent(seed=5)
    episodes = 0
    for _ in range(300):
        result = engine.step(agent.act_batch(engine.obs, engine.mask))
        episodes += int(result.done.sum())
        for (array, address), now in zip(buffers, result):
            assert now is array and now.ctypes.data == address
    assert episodes > 16  # the buffers survived automatic resets too


def test_game_i_is_rules_game_with_its_seed_and_each_slot_has_its_own_deal() -> None:
    config = Config(players=5, first_player="random")
    engine = BatchedGames(config, batch=8, seed=21)
    assert engine.game_seeds == game_seeds(21, 8)
    assert game_seeds(21, 3) == game_seeds(21, 8)[:3]
    hands = set()
    for i, seed in enumerate(engine.game_seeds):
        game = Game(config, seed=seed)
        assert engine.seat[i] == game.current
        assert np.array_equal(engine.mask[i], game.legal_mask())
        hands.add(tuple(game.hands))
    assert len(hands) == 8


def test_mask_and_observation_have_the_contract_shapes_and_types() -> None:
    engine = BatchedGames(Config(players=6), batch=3, seed=8)
    assert engine.obs.shape == (3, OBS_SIZE) and engine.obs.dtype == np.float32
    assert engine.mask.shape == (3, NUM_ACTIONS) and engine.mask.dtype == np.int8
    assert engine.rewards.shape == (3, 6) and engine.done.shape == (3,)
    assert (engine.mask.sum(axis=1) == engine.legal_count).all()


def test_batch_random_agent_is_uniform_over_legal_actions_and_seeded() -> None:
    mask = np.zeros((2, NUM_ACTIONS), dtype=np.int8)
    legal = [3, 70, 1200, PASS, NUM_ACTIONS - 1]
    mask[:, legal] = 1
    obs = np.zeros((2, OBS_SIZE), dtype=np.float32)
    agent = BatchRandomAgent(seed=3)
    draws = np.concatenate([agent.act_batch(obs, mask).copy() for _ in range(2000)])
    counts = np.array([(draws == a).sum() for a in legal])
    assert counts.sum() == draws.size  # never an illegal action
    assert np.abs(counts / draws.size - 1 / len(legal)).max() < 0.03
    again = BatchRandomAgent(seed=3)
    assert np.array_equal(
        np.concatenate([again.act_batch(obs, mask).copy() for _ in range(2000)]), draws
    )


def test_batch_random_agent_refuses_a_row_without_legal_action() -> None:
    mask = np.zeros((3, NUM_ACTIONS), dtype=np.int8)
    mask[[0, 2], 5] = 1
    with pytest.raises(ValueError, match="row 1"):
        BatchRandomAgent(seed=0).act_batch(np.zeros((3, OBS_SIZE), np.float32), mask)


def test_single_agents_are_lifted_to_the_batched_interface() -> None:
    engine = BatchedGames(Config(players=3), batch=4, seed=9)
    lifted = as_batch_agent(RandomAgent(seed=1))
    assert isinstance(lifted, PerGameAgent) and isinstance(lifted, BatchAgent)
    native = BatchRandomAgent(seed=1)
    assert as_batch_agent(native) is native
    for _ in range(50):
        actions = lifted.act_batch(engine.obs, engine.mask)
        assert all(engine.mask[i, a] == 1 for i, a in enumerate(actions))
        engine.step(actions)
    with pytest.raises(ValueError, match="act_batch"):
        as_batch_agent(object())


def test_bad_engine_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        BatchedGames(Config(), batch=0)
    with pytest.raises(ValueError, match="auto_forced must be True or False"):
        BatchedGames(Config(), batch=2, auto_forced="yes")  # type: ignore[arg-type]


def test_parallel_engine_and_agent_give_the_same_games_as_serial_ones() -> None:
    config = Config(players=4, first_player="random", episode="hand")
    serial, threaded = (BatchedGames(config, 64, seed=5, parallel=p) for p in (False, True))
    pick, pick_threaded = BatchRandomAgent(seed=6), BatchRandomAgent(seed=6, parallel=True)
    episodes = 0
    for _ in range(200):
        actions = pick.act_batch(serial.obs, serial.mask)
        assert np.array_equal(actions, pick_threaded.act_batch(threaded.obs, threaded.mask))
        serial.step(actions)
        threaded.step(actions)
        for a, b in zip(
            (serial.obs, serial.mask, serial.seat, serial.rewards, serial.done),
            (threaded.obs, threaded.mask, threaded.seat, threaded.rewards, threaded.done),
        ):
            assert np.array_equal(a, b)
        episodes += int(serial.done.sum())
    assert episodes > 64


class _FirstLegal:
    """A batched agent that plays the first legal action and keeps the rows it was shown."""

    def __init__(self) -> None:
        self.name = "first"
        self.seen: list[np.ndarray] = []

    def act_batch(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        self.seen.append(obs.copy())
        return mask.argmax(axis=1)


def test_act_by_seat_asks_each_seat_agent_only_for_the_games_where_its_seat_acts() -> None:
    engine = BatchedGames(Config(players=3), batch=12, seed=13)
    table = [_FirstLegal() for _ in range(3)]
    for _ in range(30):
        expected = [engine.obs[engine.seat == s].copy() for s in range(3)]
        actions = act_by_seat(table, engine.obs, engine.mask, engine.seat)
        assert np.array_equal(actions, engine.mask.argmax(axis=1))
        for s, agent in enumerate(table):
            if expected[s].size:
                assert np.array_equal(agent.seen.pop(), expected[s])
        engine.step(actions)
    with pytest.raises(ValueError, match="one seat 0-1 per row"):
        act_by_seat(table[:2], engine.obs, engine.mask, np.full(12, 2))
