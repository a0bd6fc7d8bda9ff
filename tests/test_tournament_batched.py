"""Tournaments on the batched engine (:mod:`odin_lab.evaluation.tournament` with
``engine="batched"``).

Deterministic agents with identical ``act`` and ``act_batch`` must give exactly the games of the
single engine (same deal seeds, seats, first leaders, hand penalties, totals, winners); the games
must not depend on the batch size, the worker count or which deals a call covers; ``auto``
must pick the batched engine exactly when every agent has a batched form. The engine hooks the
tournament uses (per-game seeds, ``restart``) are checked against ``rules.Game`` directly.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from probe_agents import ObsHash
from scipy.stats import kstest

from agents.batch import BatchRandomAgent, act_by_seat
from agents.registry import batch_form_names, make
from odin_env.batched import BatchedGames
from odin_env.observation import OBS_SIZE, observe
from odin_env.rules import NUM_ACTIONS, Config, Game
from odin_env.seeding import keyed_uniforms
from odin_lab.evaluation.tournament import (
    batched_parts,
    deal_seed,
    play_deals,
    play_tournament,
)

# One config per table size, covering every first-player rule, both episode and reward modes.
_CONFIGS = [
    (Config(players=2, threshold=10, first_player="winner"), 12),
    (Config(players=3, threshold=12, first_player="random"), 8),
    (Config(players=4, threshold=15), 6),
    (Config(players=5, first_player="fixed", episode="hand", reward="win"), 5),
    (Config(players=6, threshold=8, colours=6, first_player="random"), 4),
]


@pytest.mark.parametrize(("config", "deals"), _CONFIGS, ids=[f"{c.players}p" for c, _ in _CONFIGS])
def test_batched_engine_plays_exactly_the_single_engine_games(config: Config, deals: int):
    # A different agent in each seat: a game routed to the wrong agent would play differently.
    table = [ObsHash(salt) for salt in range(config.players)]
    single = play_deals(table, config, deals, seed=17, engine="single")
    # batch 16 < the games: slots are given new games as theirs end (``restart``).
    batched = play_deals(table, config, deals, seed=17, engine="batched", batch=16)
    assert batched == single
    assert len(single) == deals * config.players > 16
    assert {r.seed for r in single} == {deal_seed(17, d) for d in range(deals)}
    assert all(sum(map(sum, r.hands)) == sum(r.totals) for r in batched)
    if config.first_player == "random":  # drawn first leaders are the deal's, on both engines
        assert len({r.first_leader for r in single}) > 1


def test_batch_size_does_not_change_the_games():
    config = Config(players=4, threshold=10, first_player="winner")
    table = [ObsHash(salt) for salt in range(4)]
    games = [
        play_deals(table, config, 6, seed=3, engine="batched", batch=size) for size in (1, 5, 1024)
    ]
    assert games[0] == games[1] == games[2]
    rounds = play_tournament(["random"] * 3, Config(players=3), 6, seed=8, progress=False)
    for size in (1, 7):
        again = play_tournament(
            ["random"] * 3, Config(players=3), 6, seed=8, batch=size, progress=False
        )
        assert again == rounds


def test_a_deal_is_the_same_games_whatever_deals_the_call_covers():
    config = Config(players=3, threshold=10)
    whole = play_tournament(["random"] * 3, config, 6, seed=5, engine="batched", progress=False)
    part = play_deals([BatchRandomAgent(seed=0)] * 3, config, range(4, 6), seed=5)
    assert part == [r for r in whole if r.deal >= 4]


def test_batched_random_tournament_is_reproducible_and_seeded_and_worker_independent():
    config = Config(players=4, threshold=10)
    first = play_tournament(["random"] * 4, config, 10, seed=2, engine="batched", progress=False)
    assert first == play_tournament(
        ["random"] * 4, config, 10, seed=2, engine="batched", progress=False
    )
    other = play_tournament(["random"] * 4, config, 10, seed=3, engine="batched", progress=False)
    assert [r.totals for r in other] != [r.totals for r in first]
    # Every agent plays every deal from every seat, as on the single engine.
    assert [(r.deal, r.rotation) for r in first] == [(d, k) for d in range(10) for k in range(4)]
    # batch 2: parts of 16 games, the first played in this process, the others by two workers.
    two = play_tournament(
        ["random"] * 4, config, 10, seed=2, engine="batched", workers=2, batch=2, progress=False
    )
    assert two == first


def test_batched_parts_start_small_and_cover_the_games_in_order():
    # The showcase's 800 games: parts of 64, so its progress bar moves every few seconds.
    showcase = batched_parts(0, 800, 1024)
    assert [len(p) for p in showcase] == [64] * 12 + [32]
    # A big tournament starts with 64 games, doubles up to a 16th of the games, and a resumed
    # one starts where it stopped.
    big = batched_parts(400, 100_400, 1024)
    assert [len(p) for p in big[:5]] == [64, 128, 256, 512, 1024]
    assert max(len(p) for p in big) == 6250
    for cut, first, games in ((showcase, 0, 800), (big, 400, 100_400)):
        assert [g for p in cut for g in p] == list(range(first, games))
    assert max(len(p) for p in batched_parts(0, 100_000, 8)) == 64  # at most 8 batches


def test_auto_picks_batched_only_when_every_agent_has_a_batched_form():
    config = Config(players=3, threshold=10)
    randoms = ["random"] * 3
    auto = play_tournament(randoms, config, 4, seed=1, progress=False)
    # The random agents draw differently on the two engines, which tells which one played.
    assert auto == play_tournament(randoms, config, 4, seed=1, engine="batched", progress=False)
    assert auto != play_tournament(randoms, config, 4, seed=1, engine="single", progress=False)
    mixed = ["search:4", "random", "random"]  # search has no batched form
    assert play_tournament(mixed, config, 1, seed=1, progress=False) == play_tournament(
        mixed, config, 1, seed=1, engine="single", progress=False
    )
    table = [ObsHash(0), BatchRandomAgent(seed=0), ObsHash(1)]
    assert play_deals(table, config, 2, seed=1) == play_deals(table, config, 2, 1, engine="batched")


def test_bad_engine_settings_are_refused_naming_the_problem():
    config = Config(players=3)
    with pytest.raises(ValueError, match="none for search: use engine single or auto"):
        play_tournament(["search", "random", "random"], config, 2, engine="batched")
    with pytest.raises(ValueError, match="engine must be one of auto, single, batched"):
        play_tournament(["random"] * 3, config, 2, engine="fast")
    with pytest.raises(ValueError, match="batch must be an integer >= 1"):
        play_tournament(["random"] * 3, config, 2, batch=0)
    with pytest.raises(ValueError, match="non-empty range"):
        play_deals([ObsHash(0)] * 3, config, range(2, 2))


def test_evaluate_refuses_the_batched_engine_for_a_heuristic_in_one_line(tmp_path: Path):
    evaluate = Path(__file__).resolve().parents[1] / "evaluate.py"
    args = ["tournament", "--agents", "search", "random", "--engine", "batched"]
    result = subprocess.run(
        [sys.executable, str(evaluate), *args, "--out", str(tmp_path / "out")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "evaluate.py tournament: error: --engine batched needs agents with a batched form "
        f"(act_batch: {', '.join(batch_form_names())}); none for search: use --engine "
        "single or auto"
    ]
    assert not (tmp_path / "out").exists()


def test_engine_seeded_per_game_and_restarted_slots_are_those_rules_games():
    config = Config(players=4, first_player="random")
    seeds = [deal_seed(9, d) for d in range(5)]
    engine = BatchedGames(config, 5, seed=seeds)
    assert engine.game_seeds == seeds
    for i, seed in enumerate(seeds):
        game = Game(config, seed=seed)
        assert engine.seat[i] == game.current == engine.hand_leaders[i] == game.hand_leader
        assert np.array_equal(engine.mask[i], game.legal_mask())
    agent = BatchRandomAgent(seed=1)
    for _ in range(7):
        engine.step(agent.act_batch(engine.obs, engine.mask))
    kept = engine.obs[[0, 2, 4]].copy(), engine.mask[[0, 2, 4]].copy()
    engine.restart([3, 1], [seeds[0], 77])
    assert np.array_equal(engine.obs[[0, 2, 4]], kept[0])
    assert np.array_equal(engine.mask[[0, 2, 4]], kept[1])
    fresh = {3: Game(config, seed=seeds[0]), 1: Game(config, seed=77)}
    # Play both on: a mask entry left over from the dropped game would show here.
    for _ in range(40):
        for i, game in fresh.items():
            assert engine.seat[i] == game.current
            assert np.array_equal(engine.mask[i], game.legal_mask())
            assert np.array_equal(engine.obs[i], observe(game, game.current))
        actions = engine.first_legal
        engine.step(actions)
        for i, game in fresh.items():
            game.apply(int(actions[i]))
            game.play_forced()
            assert not game.is_over
    with pytest.raises(ValueError, match="one seed per game"):
        engine.restart([0], [1, 2])
    with pytest.raises(ValueError, match="game indices 0-4"):
        engine.restart([5], [1])
    with pytest.raises(ValueError, match="one seed per game"):
        BatchedGames(config, 3, seed=[1, 2])


def test_keyed_random_draws_depend_only_on_each_row_and_its_key():
    engine = BatchedGames(Config(players=5), batch=40, seed=4)
    keys = np.arange(40, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    whole = BatchRandomAgent(seed=1).act_batch(engine.obs, engine.mask, keys).copy()
    seat = np.arange(40) % 3  # the same rows split among three agents seeded otherwise
    split = act_by_seat(
        [BatchRandomAgent(seed=s) for s in (5, 6, 7)], engine.obs, engine.mask, seat, keys
    )
    assert np.array_equal(split, whole)
    assert all(engine.mask[i, a] == 1 for i, a in enumerate(whole))
    with pytest.raises(ValueError, match="one key per row"):
        BatchRandomAgent().act_batch(engine.obs, engine.mask, keys[:3])


def test_keyed_uniforms_of_consecutive_keys_are_uniform():
    u = keyed_uniforms(np.arange(100_000, dtype=np.uint64))
    assert ((u >= 0) & (u < 1)).all()
    assert kstest(u, "uniform").pvalue > 1e-3
    # Neighbouring keys are unrelated: no correlation between consecutive draws.
    assert abs(np.corrcoef(u[:-1], u[1:])[0, 1]) < 0.02
    mask = np.zeros((1, NUM_ACTIONS), np.int8)
    mask[0, [4, 9]] = 1
    picks = [
        BatchRandomAgent().act_batch(np.zeros((1, OBS_SIZE), np.float32), mask, np.array([k]))[0]
        for k in range(400)
    ]
    assert 150 < picks.count(4) < 250


def test_watch_sees_each_game_that_is_played_and_keeps_to_the_single_engine():
    """``play_deals(watch=...)`` is called once per game with the very ``rules.Game`` played
    (its end is the record's), on the single engine even where ``auto`` would batch, and the
    games are those of a tournament without it; ``engine="batched"`` with it is refused."""
    config = Config(players=3, threshold=12)
    agents = [make(name) for name in ("greedy", "planner", "shaper")]  # both engines' forms
    watched = []
    records = play_deals(agents, config, range(2, 4), seed=5, watch=watched.append)
    assert len(watched) == len(records) == 6
    for game, record in zip(watched, records):
        assert game.is_over and tuple(game.totals) == record.totals
        assert tuple(game.history) == record.hands
    single = play_deals(agents, config, range(2, 4), seed=5, engine="single")
    assert [r.to_dict() for r in single] == [r.to_dict() for r in records]
    with pytest.raises(ValueError, match="watch needs the single engine"):
        play_deals(agents, config, 1, seed=5, engine="batched", watch=watched.append)
