"""The coach (``odin_lab.evaluation.coach``) and the search's scores behind it
(``agents.search.score_candidates``): every legal move scored once, best first, from the
observation only (positions that differ in other seats' hidden cards get the same hint), the
search player's own choice is the scores' best, and a hint keeps its time budget."""

from __future__ import annotations

import time

import numpy as np
import pytest
from test_search import _relaid as relaid  # the same position, other hidden cards

from agents.search import SearchAgent, score_candidates
from odin_env.combos import COMBO_BITS
from odin_env.observation import observe
from odin_env.rules import PASS, TAKE, Config, Game
from odin_lab.evaluation.coach import MAX_MS, MIN_MS, hint, move_label, warm_up
from odin_lab.evaluation.moves import move_name
from odin_lab.webapp.views import action_json


def positions(players: int, games: int, every: int = 3, seed: int = 0):
    """Decisions with a real choice from random games (``(game, seat)``, the game copied)."""
    from odin_lab.evaluation.records import copy_game

    rng = np.random.default_rng(seed)
    for g in range(games):
        game = Game(Config(players=players, threshold=15), seed=seed * 100 + g)
        k = 0
        while True:
            game.play_forced()
            if game.is_over:
                break
            if k % every == 0:
                yield copy_game(game), game.current
            k += 1
            game.apply(game.legal[rng.integers(len(game.legal))])


def test_a_hint_scores_every_legal_move_once_best_first_as_the_front_ends_write_them():
    checked = 0
    seen_kinds: set[str] = set()
    for game, seat in positions(4, 3, every=5):
        if len(game.legal) < 2:
            continue
        answer = hint(observe(game, seat), game.config, rollouts=64, seed=1)
        assert set(answer) == {"candidates", "best", "elapsed_ms", "budget_ms", "worlds"}
        candidates = answer["candidates"]
        assert sorted(c["action"] for c in candidates) == sorted(game.legal)
        assert answer["best"] == candidates[0]["action"]
        assert [c["best"] for c in candidates] == [True] + [False] * (len(candidates) - 1)
        keys = [(-c["win"], c["penalty"]) for c in candidates]
        assert keys == sorted(keys)  # best first: win chance, then the lower penalty
        for c in candidates:
            assert 0.0 <= c["win"] <= 1.0 and c["penalty"] >= 0.0
            web = action_json(c["action"])
            assert (c["kind"], c["cards"]) == (web["kind"], web["cards"])
            assert c["label"] == move_name(c["action"])  # the terminal's menu writes it so
            seen_kinds.add(c["kind"])
            action = c["action"]
            if action < PASS and COMBO_BITS[action] == game.hands[seat]:
                assert c["penalty"] == 0.0  # going out: no card left this hand
        assert answer["worlds"] >= 8 and answer["budget_ms"] == 0
        checked += 1
    assert checked >= 10
    assert seen_kinds == {"play", "pass", "take"}
    assert move_label(PASS) == ("pass", "pass", [])
    assert move_label(TAKE + 4)[1] == "take R5"


@pytest.mark.parametrize("players", [2, 4, 6])
def test_a_hint_reads_no_hidden_state(players):
    """Two positions that differ only in other seats' hidden cards: the same observation, the
    same hint for the same seed (the hidden cards really differ, and the search does see a
    different layout in each world it samples if it peeks)."""
    rng = np.random.default_rng(players)
    checked = 0
    for game, seat in positions(players, 4, every=4, seed=players):
        if len(game.legal) < 2:
            continue
        other = relaid(game, seat, rng)
        if other.hands == game.hands:
            continue
        obs = observe(game, seat)
        assert np.array_equal(obs, observe(other, seat))
        first = hint(obs, game.config, rollouts=48, seed=5, mask=game.legal_mask())
        second = hint(observe(other, seat), other.config, rollouts=48, seed=5)
        for answer in (first, second):
            del answer["elapsed_ms"]
        assert first == second
        checked += 1
        if checked == 6:
            break
    assert checked == 6


def test_the_search_player_plays_the_best_of_the_same_scores():
    """One search loop: ``SearchAgent.act`` (without its shortlist) is the best of
    ``evaluate``'s scores, and ``score_candidates`` with the same seed gives those scores again."""
    checked = 0
    for game, seat in positions(3, 2, every=7, seed=4):
        if len(game.legal) < 2:
            continue
        obs, mask = observe(game, seat), game.legal_mask()
        chosen = SearchAgent(seed=9, rollouts=64, prior=None).act(obs, mask)
        scores = score_candidates(obs, mask, rollouts=64, seed=9)
        again = score_candidates(obs, None, rollouts=64, seed=9)  # the legal moves it works out
        assert scores.best == chosen
        assert np.array_equal(scores.actions, np.array(sorted(game.legal)))
        assert np.array_equal(scores.win, again.win) and np.array_equal(
            scores.penalty, again.penalty
        )
        assert scores.win[scores.of(chosen)] == scores.win.max()
        checked += 1
    assert checked >= 5


def test_a_hint_arrives_within_its_budget():
    """The 90th percentile of a hint's wall time over many positions (2, 4 and 6 players, up
    to dozens of moves) stays within the budget, and the search uses the time it has."""
    warm_up()
    budget, took, worlds = 200, [], []
    for players in (2, 4, 6):
        real = [(g, s) for g, s in positions(players, 1, every=4, seed=7) if len(g.legal) > 1]
        for game, seat in real[:: max(1, len(real) // 10)][:10]:  # spread over the game
            start = time.perf_counter()
            answer = hint(observe(game, seat), game.config, ms=budget, seed=2)
            took.append((time.perf_counter() - start) * 1000.0)
            assert answer["budget_ms"] == budget and answer["elapsed_ms"] <= took[-1]
            worlds.append(answer["worlds"])
    assert len(took) >= 20
    assert np.percentile(took, 90) <= budget, sorted(took)
    assert np.median(worlds) >= 8  # the budget is used, not one world and out


@pytest.mark.parametrize("ms", [MIN_MS - 1, MAX_MS + 1, 0, -5, 1.5, "300", True, None])
def test_a_bad_budget_is_one_line_naming_the_range(ms):
    game = Game(Config(players=2), seed=0)
    game.play_forced()
    with pytest.raises(ValueError, match=f"ms must be an integer {MIN_MS}-{MAX_MS}") as caught:
        hint(observe(game, game.current), game.config, ms=ms)
    assert "\n" not in str(caught.value)


def test_an_observation_of_another_table_is_refused():
    game = Game(Config(players=3, threshold=15), seed=0)
    game.play_forced()
    with pytest.raises(ValueError, match="observation is of a game of 3 players to 15"):
        hint(observe(game, game.current), Config(players=3, threshold=20), rollouts=16)
