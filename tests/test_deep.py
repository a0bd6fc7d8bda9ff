"""The search of the searcher's next decision (``agents.deep``, ``search:N:deep``): each
candidate's outcome in each world is the one the rules engine gives when the searcher plays, at
its next decision, the action of best mean outcome over the *other* worlds that show it the
same observation there; it needs a deterministic playout policy; its spec is parsed strictly."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from agents.batch import BatchRandomAgent
from agents.deep import DeepSearch
from agents.registry import check_spec, make
from agents.search import win_chance
from agents.worlds import position, sample_hands
from odin_env.observation import observe
from odin_env.rules import Config, Game


def _oracle(game: Game, config: Config, hands: np.ndarray, candidates: np.ndarray, planner,
            top: int | None = None, by_penalty: bool = False):  # fmt: skip
    """What ``DeepSearch`` should give, on ``rules.Game`` and the Python ``planner``: ``(win,
    penalty, chose_another)``. At the next decision it tries every legal action, or with
    ``top`` the ``top`` lowest (what :class:`_LowFirst` values most); it chooses by win chance,
    or with ``by_penalty`` by the fewest cards left."""
    worlds, count = hands.shape[0], candidates.size
    totals = np.array(game.totals, dtype=np.int64)
    win, penalty = np.zeros((worlds, count)), np.zeros((worlds, count))
    nexts: dict[tuple[int, bytes], list] = {}
    for w in range(worlds):
        for c, candidate in enumerate(candidates):
            play = copy.deepcopy(game)
            play.hands = [int(h) for h in hands[w]]
            play._decide()
            hand = play.hand_number
            play.apply(int(candidate))
            _advance(play, hand, planner, to_own=True)
            if play.is_over or play.hand_number != hand:
                win[w, c], penalty[w, c] = _ended(play, totals, config.threshold)
                continue
            seen = observe(play, 0)
            base = planner.act(seen, play.legal_mask())
            tried = sorted(play.legal)[:top] if top else sorted(play.legal)
            actions = [base, *(a for a in tried if a != base)]
            outcomes = []
            for action in actions:
                branch = copy.deepcopy(play)
                branch.apply(action)
                outcomes.append(_finish(branch, hand, planner, totals, config.threshold))
            win[w, c], penalty[w, c] = outcomes[0]
            nexts.setdefault((c, seen.tobytes()), []).append((w, np.array(outcomes)))
    chose_another = 0
    for (c, _), members in nexts.items():
        if len(members) < 2:
            continue
        scores = np.stack([-o[:, 1] if by_penalty else o[:, 0] for _, o in members])
        for i, (w, outcomes) in enumerate(members):
            others = (scores.sum(axis=0) - scores[i]) / (len(members) - 1)
            choice = int(np.argmax(others))
            chose_another += choice != 0
            win[w, c], penalty[w, c] = outcomes[choice]
    return win, penalty, chose_another


def _advance(play: Game, hand: int, planner, to_own: bool = False) -> None:
    """``planner`` in every seat (forced decisions applied) until the hand ends, or with
    ``to_own`` until the searcher's (seat 0) next decision with a choice."""
    while not play.is_over and play.hand_number == hand:
        if to_own and play.current == 0 and len(play.legal) > 1:
            return
        legal = play.legal
        play.apply(legal[0] if len(legal) == 1 else planner.act(
            observe(play, play.current), play.legal_mask()))  # fmt: skip


def _finish(play: Game, hand: int, planner, totals: np.ndarray, threshold: int):
    _advance(play, hand, planner)
    return _ended(play, totals, threshold)


def _ended(play: Game, totals: np.ndarray, threshold: int) -> tuple[float, float]:
    """The searcher's win chance and penalty once the hand is scored (the totals after it: the
    game's, or those the next deal started from)."""
    after = np.array(play.totals, dtype=np.int64)
    return float(win_chance(after, threshold)[0]), float(after[0] - totals[0])


class _LowFirst:
    """A prior that values the lower actions more."""

    def values(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return np.broadcast_to(-np.arange(masks.shape[1], dtype=np.float64), masks.shape)


@pytest.mark.parametrize(
    "players,top,by_penalty", [(3, None, False), (4, None, False), (4, 2, True)]
)
def test_each_outcome_is_the_rules_engines_under_the_leave_one_out_choice(
    players: int, top: int | None, by_penalty: bool
) -> None:
    """At decisions of ``planner`` games, ``DeepSearch._playouts`` over a few sampled worlds
    equals the rules engine's outcomes (``rules.Game``, the Python ``planner``) with the next
    decision made by the best mean over the other worlds of its information set (by win chance,
    or with ``by_penalty`` by cards left; among every legal action, or with a prior its ``top``
    best); and that choice differs from ``planner``'s somewhere (else the test would not see the
    search)."""
    config = Config(players=players, threshold=12)
    planner = make("planner")
    prior = {"prior": _LowFirst(), "top": top} if top else {}
    deep = DeepSearch(0, policy="planner", penalty=by_penalty, **prior)
    rng = np.random.default_rng(players)
    checked = another = 0
    for seed in range(6):
        game = Game(config, seed=seed)
        decisions = 0
        while not game.is_over and game.hand_number < 2 and decisions < 4:
            seat = game.current
            if len(game.legal) < 2:
                game.apply(game.legal[0])
                continue
            obs, mask = observe(game, seat), game.legal_mask()
            if seat == seed % players:
                decisions += 1
                start, config_, unseen, needs = position(obs, mask)
                hands = sample_hands(start, unseen, needs, 5, rng)
                candidates = np.array(sorted(start.legal)[:3], dtype=np.int64)
                win, penalty = deep._playouts(start, config_, hands, candidates)
                want_win, want_penalty, chose = _oracle(
                    start, config_, hands, candidates, planner, top, by_penalty
                )
                np.testing.assert_allclose(win, want_win, atol=1e-12)
                np.testing.assert_allclose(penalty, want_penalty, atol=1e-12)
                checked, another = checked + 1, another + chose
            game.apply(planner.act(obs, mask))
    assert checked >= 12 and another >= 1, (checked, another)


def test_a_random_playout_policy_is_refused_when_a_replay_differs() -> None:
    game = Game(Config(players=4), seed=2)
    game.play_forced()
    deep = DeepSearch(0, rollouts=256, policy=BatchRandomAgent(0))
    with pytest.raises(RuntimeError, match="deterministic playout policy"):
        for _ in range(40):
            obs, mask = observe(game, game.current), game.legal_mask()
            game.apply(deep.act(obs, mask))
            game.play_forced()


def test_the_spec_takes_deep_and_refuses_it_twice_or_with_netleaf() -> None:
    agent = make("search:64:net:one:deep", seed=0)
    assert isinstance(agent, DeepSearch) and agent.prior is not None and agent.rollouts == 64
    assert not isinstance(make("search:64", seed=0), DeepSearch)
    for bad in ("search:64:deep:deep", "search:64:deeper"):
        with pytest.raises(ValueError, match="bad search spec"):
            check_spec(bad)
    with pytest.raises(ValueError, match="give one of them"):
        check_spec("search:64:deep:netleaf")
    with pytest.raises(ValueError, match="leaf cuts"):
        DeepSearch(0, leaf=make("search:8:netleaf").leaf)
