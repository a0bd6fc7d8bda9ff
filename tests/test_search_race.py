"""The search's race (``search:N:race``, :meth:`agents.search.SearchAgent._race`): candidates leave
as soon as they are clearly behind on the worlds they share, within a cap of playouts."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import agents.search as search_module
from agents.registry import make
from agents.search import PRIOR, RACE_ROUND, RACE_Z, SearchAgent, _still_racing
from odin_env.cards import card_id
from odin_env.observation import observe
from odin_env.rules import Config, Game


def test_a_candidate_leaves_when_its_paired_deficit_is_clear() -> None:
    rng = np.random.default_rng(0)
    leader = rng.normal(0.5, 0.2, size=64)
    noise = rng.normal(0.0, 0.05, size=64)
    noise -= noise.mean()
    outcomes = np.stack(
        [
            leader - 0.1 + noise,  # behind by 0.1, each world: out (t far above RACE_Z)
            leader,  # the leader
            leader - 0.001 * noise.std() + noise,  # level within noise: stays
            leader.copy(),  # the same outcome in every world as the leader: the later leaves
        ],
        axis=1,
    )
    assert _still_racing(outcomes).tolist() == [False, True, True, False]
    # Identical columns: the first of them is the leader and stays.
    same = np.repeat(leader[:, None], 2, axis=1)
    assert _still_racing(same).tolist() == [True, False]
    # The threshold is RACE_Z standard errors: just inside it stays, just outside leaves.
    worlds = 64
    spread = rng.normal(size=worlds)
    spread = (spread - spread.mean()) / spread.std(ddof=1)  # differences of unit deviation
    for factor, kept in ((0.99, True), (1.01, False)):
        gap = factor * RACE_Z / np.sqrt(worlds)
        pair = np.stack([np.zeros(worlds), -(gap + spread)], axis=1)
        assert _still_racing(pair)[1] == kept


class _Counted(SearchAgent):
    """A search that counts its playouts."""

    playouts = 0

    def _playouts(self, game, config, hands, candidates):
        self.playouts += hands.shape[0] * candidates.size
        return super()._playouts(game, config, hands, candidates)


def _going_out() -> tuple[np.ndarray, np.ndarray]:
    """Seat 0 leads with two 5s: playing both ends the hand with no penalty; either 5 alone
    leaves it a card against three hands of five."""
    config = Config(players=4, threshold=15)
    mine = [card_id(0, 5), card_id(1, 5)]
    others = [
        [card_id(c, v) for c, v in zip(range(6), vs)]
        for vs in ((1, 2, 3, 4, 6), (2, 3, 4, 6, 7), (3, 4, 6, 7, 8))
    ]
    game = Game.from_position(config, [mine, *others], 0)
    return observe(game, 0), game.legal_mask()


def test_a_clear_best_ends_the_race_after_one_round() -> None:
    obs, mask = _going_out()
    count = int(mask.sum())
    assert count == 3
    agent = _Counted(seed=5, rollouts=4096, race=True)
    action = agent.act(obs, mask)
    assert agent.playouts == RACE_ROUND * count  # one round, not the 4,096 the cap allows
    best = SearchAgent(seed=5, rollouts=256).evaluate(obs, mask).best
    assert action == best


def _first_decisions(seeds: int, fewest: int):
    """``(seed, observation, mask)`` of each seeded 4-player game's first real decision that
    has at least ``fewest`` legal actions."""
    config = Config(players=4, threshold=15)
    for seed in range(seeds):
        game = Game(config, seed=seed)
        game.play_forced()
        obs, mask = observe(game, game.current), game.legal_mask()
        if mask.sum() >= fewest:
            yield seed, obs, mask


def test_the_race_keeps_within_its_cap_and_plays_one_round_at_least() -> None:
    checked = 0
    for seed, obs, mask in _first_decisions(20, fewest=4):
        count = int(mask.sum())
        for cap in (RACE_ROUND, 1000):
            agent = _Counted(seed=seed, rollouts=cap, race=True, prior=None)
            action = agent.act(obs, mask)
            assert mask[action] == 1
            assert agent.playouts <= max(cap, RACE_ROUND * count)
            assert agent.playouts >= RACE_ROUND * count
            again = _Counted(seed=seed, rollouts=cap, race=True, prior=None)
            assert again.act(obs, mask) == action and again.playouts == agent.playouts
        checked += 1
        if checked == 6:  # six positions of 4+ legal actions are enough
            break
    assert checked >= 5


def test_race_by_spec() -> None:
    agent = make("search:4096:race")
    assert agent.race and agent.rollouts == 4096 and agent.prior == PRIOR
    assert not make("search:64").race
    with pytest.raises(ValueError, match=":race"):
        make("search:64:race:race")


@pytest.mark.parametrize(("ms", "rounds"), [(1e-6, 1), (5.0, 5)])
def test_a_timed_race_stops_on_the_clock(ms, rounds, monkeypatch) -> None:
    """``search:Nms:race``: with every candidate kept in the race and a clock that moves one
    millisecond per reading, a race of ``ms`` plays rounds until ``ms`` have passed: one round
    for a budget already spent after it, five for 5 ms."""
    clock = iter(range(1000))
    fake = SimpleNamespace(perf_counter=lambda: next(clock) / 1000.0)
    monkeypatch.setattr(search_module, "time", fake)  # the search's clock only
    monkeypatch.setattr(
        search_module, "_still_racing", lambda outcomes: np.ones(outcomes.shape[1], bool)
    )
    obs, mask = _going_out()
    agent = _Counted(seed=5, ms=ms, race=True)
    agent.act(obs, mask)
    assert agent.playouts == rounds * RACE_ROUND * int(mask.sum())
