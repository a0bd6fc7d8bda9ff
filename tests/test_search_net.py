"""The search with a network's shortlist (``prior``, ``search:N:net``): only the ``top``
candidates the prior values most are searched, chosen from the observation alone."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from agents.base import legal_actions
from agents.dmc import BUNDLED_DMC, BUNDLED_DMC_ONE, DMCAgent
from agents.registry import check_spec, make, make_batch_agent
from agents.search import TOP, SearchAgent, _position
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.spec import TAKE


class Ranked:
    """A prior that values the legal actions by a fixed preference: ``order[a]`` (higher is
    preferred), and counts its calls."""

    def __init__(self, order: np.ndarray):
        self.order, self.calls = order, 0

    def values(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self.calls += 1
        return np.where(masks.astype(bool), self.order[None, : masks.shape[1]], -np.inf)


def _reached(config: Config, seed: int, wanted) -> Game:
    """The first decision of random play (a new game after each that ends) that is ``wanted``."""
    rng = np.random.default_rng(seed)
    game = Game(config, seed=seed)
    while True:
        game.play_forced()
        if game.is_over:
            game = Game(config, seed=int(rng.integers(1 << 30)))
        elif wanted(game):
            return game
        else:
            game.apply(game.legal[rng.integers(len(game.legal))])


def _wide(config: Config, seed: int) -> Game:
    """A decision with more legal actions than ``TOP``, reached by random play."""
    return _reached(config, seed, lambda game: len(game.legal) > TOP + 2)


def test_only_the_top_candidates_of_the_prior_are_searched() -> None:
    game = _wide(Config(players=4), 1)
    obs, mask = observe(game, game.current), game.legal_mask()
    legal = legal_actions(mask)
    plain = SearchAgent(seed=5, rollouts=96).act(obs, mask)
    # A prior that values the plain search's choice least: it may no longer be chosen.
    order = np.random.default_rng(0).permutation(mask.size).astype(np.float64)
    order[plain] = -1.0
    for top in (1, 3, TOP):
        prior = Ranked(order)
        action = SearchAgent(seed=5, rollouts=96, prior=prior, top=top).act(obs, mask)
        shortlist = legal[np.argsort(-order[legal], kind="stable")[:top]]
        assert action in shortlist and action != plain and prior.calls == 1
        # ... and the choice is exactly the plain search's over the shortlist alone.
        only = np.zeros_like(mask)
        only[shortlist] = 1
        assert action == SearchAgent(seed=5, rollouts=96).act(obs, only)
    # With room for every legal action, the prior changes nothing and is not asked.
    prior = Ranked(order)
    agent = SearchAgent(seed=5, rollouts=96, prior=prior, top=len(legal))
    assert agent.act(obs, mask) == plain and prior.calls == 0


def test_a_goat_game_is_searched_whole_without_asking_the_network() -> None:
    config = Config(players=3, goat=True)
    game = _wide(config, 2)
    prior = Ranked(np.arange(config.num_actions, dtype=np.float64))
    agent = SearchAgent(seed=2, rollouts=48, prior=prior, top=2)
    action = agent.act(observe(game, game.current), game.legal_mask())
    assert action in game.legal and prior.calls == 0


def test_the_net_spec_and_a_bad_prior() -> None:
    for spec, rollouts, model in (("search:net", 512, False), ("search:64:net", 64, False),
                                  ("search:64:model:net", 64, True),
                                  ("search:64:net:model", 64, True)):  # fmt: skip
        agent = make(spec, seed=0)
        assert isinstance(agent.prior, DMCAgent) and agent.prior.path == BUNDLED_DMC
        assert agent.rollouts == rollouts and (agent.table is not None) == model
    assert make("search:64", seed=0).prior is None
    for bad in ("search:net:net", "search:64:nett", "search:net:64", "search:64:net:"):
        with pytest.raises(ValueError, match="bad search spec .*:net"):
            check_spec(bad)
    for kwargs in ({"prior": "dmc"}, {"top": 0}):
        with pytest.raises(ValueError, match="must be"):
            SearchAgent(**kwargs)


def test_netplay_has_the_bundled_network_play_the_playouts() -> None:
    """``:netplay``: every seat of every playout is the bundled network (with ``:net`` the same
    one shortlists), so its scores are those of a search given that network as its policy, and
    not those of the default ``planner`` playouts on the same worlds."""
    both = make("search:64:net:netplay", seed=0)
    assert isinstance(both.policy, DMCAgent) and both.policy is both.prior
    alone = make("search:64:netplay", seed=0)
    assert isinstance(alone.policy, DMCAgent) and alone.prior is None
    assert alone.policy.path == BUNDLED_DMC and make("search:64", seed=0).prior is None
    config = Config(players=4)
    game = _wide(config, 4)
    obs, mask = observe(game, game.current), game.legal_mask()
    by_spec = make("search:64:netplay", seed=9).evaluate(obs, mask)
    network = DMCAgent.load(BUNDLED_DMC)
    by_hand = SearchAgent(seed=9, rollouts=64, policy=network).evaluate(obs, mask)
    planner = make("search:64", seed=9).evaluate(obs, mask)
    np.testing.assert_array_equal(by_spec.win, by_hand.win)
    assert not np.array_equal(by_spec.win, planner.win)
    for bad in ("search:netplay:netplay", "search:64:net:netplays"):
        with pytest.raises(ValueError, match="bad search spec .*:netplay"):
            check_spec(bad)


class Counted:
    """A batched playout policy (``planner`` or ``greedy``) that counts the rows it was asked."""

    def __init__(self, name: str):
        self.player, self.rows = make_batch_agent(name, seed=0), 0

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        self.rows += len(masks)
        return self.player.act_batch(observations, masks)


def test_own_plays_the_searchers_seat_and_policy_the_others() -> None:
    """``own`` plays only the searcher's own seat of the playouts: given the playout policy it
    changes nothing; given another player the scores change, and they differ from those of the
    same two players the other way round; the two share the decisions, about a quarter ``own``'s
    at four players. ``:netself`` gives the bundled network that seat."""
    config = Config(players=4)
    game = _wide(config, 6)
    obs, mask = observe(game, game.current), game.legal_mask()

    def scores(policy, own=None) -> np.ndarray:
        return SearchAgent(seed=4, rollouts=64, policy=policy, own=own).evaluate(obs, mask).win

    plain = scores("planner")
    np.testing.assert_array_equal(scores("planner", own="planner"), plain)
    mine, theirs = Counted("greedy"), Counted("planner")
    split = scores(theirs, own=mine)
    assert not np.array_equal(split, plain)
    assert not np.array_equal(split, scores("greedy", own="planner"))
    assert 0.1 < mine.rows / (mine.rows + theirs.rows) < 0.45
    agent = make("search:64:net:netself", seed=0)
    assert isinstance(agent.own, DMCAgent) and agent.own is agent.prior
    assert not isinstance(agent.policy, DMCAgent) and make("search:64").own is None
    assert agent.own.path == BUNDLED_DMC
    one = make("search:64:net:netself:one", seed=0)  # the one-pass network in both roles
    assert one.own is one.prior and one.own.path == BUNDLED_DMC_ONE
    assert one.own.symmetries == 1 and agent.own.symmetries > 1
    with pytest.raises(ValueError, match=r":one picks the network of :net, :netplay"):
        make("search:64:model:one")
    with pytest.raises(ValueError, match="own must be"):
        SearchAgent(own="nobody")


def _leaf_reference(game: Game, hands: np.ndarray, candidate: int, network, policy) -> float:
    """The oracle of ``:netleaf`` on ``rules.Game``, one world at a time: the searcher (seat 0)
    plays ``candidate`` in the layout ``hands``, forced decisions are applied, ``policy`` plays
    the other seats and ``network`` the searcher's take, until the hand ends (its penalty) or the
    searcher faces another decision (minus the network's best value there)."""
    world = copy.deepcopy(game)
    free = game.set_aside
    for hand in game.hands:
        free |= hand
    world.hands = [int(h) for h in hands]
    world.set_aside = free & ~int(np.bitwise_or.reduce(hands))
    hands_played = len(world.history)
    world.apply(candidate)
    while True:
        world.play_forced()
        if len(world.history) > hands_played:
            return float(world.history[-1][0])
        obs, mask = observe(world, world.current), world.legal_mask()
        if world.current == 0 and not mask[TAKE:].any():
            return -float(network.values(obs[None], mask[None])[0].max())
        player = network if world.current == 0 else policy
        world.apply(int(player.act_batch(obs[None], mask[None])[0]))


def _beating(config: Config, seed: int) -> Game:
    """Seat 0 (the seat the search reads itself as) following, with two beats or more to choose
    from: the beats lead to its take, then the others answer. Reached by random play."""
    return _reached(
        config, seed,
        lambda g: g.current == 0 and g.table >= 0 and not g.take_from and len(g.legal) > 2,
    )  # fmt: skip


@pytest.mark.parametrize("players,seed", [(4, 8), (3, 11), (5, 13)])
def test_netleaf_matches_its_oracle_world_by_world(players: int, seed: int) -> None:
    """``leaf``: each candidate's penalty is the mean, over the sampled worlds, of what the
    oracle above finds on ``rules.Game`` (the same worlds: the same seed draws them); the choice
    is the lowest; ``win`` is not estimated (NaN)."""
    game = _beating(Config(players=players), seed)
    obs, mask = observe(game, 0), game.legal_mask()
    network = DMCAgent.load(BUNDLED_DMC)
    scores = SearchAgent(seed=3, rollouts=24, min_worlds=3, leaf=network).evaluate(obs, mask)
    position, _, unseen, needs = _position(obs, mask)
    hands = SearchAgent(seed=3)._sample(position, unseen, needs, scores.worlds)
    planner = make_batch_agent("planner", seed=0)
    expected = [
        np.mean([_leaf_reference(game, hands[w], int(a), network, planner)
                 for w in range(scores.worlds)])
        for a in scores.actions
    ]  # fmt: skip
    np.testing.assert_allclose(scores.penalty, expected, rtol=1e-5, atol=1e-5)
    assert np.isnan(scores.win).all()
    assert scores.best == scores.actions[int(np.argmin(expected))]
    # The spec: the bundled network, shared with the shortlist.
    agent = make("search:64:net:netleaf", seed=0)
    assert isinstance(agent.leaf, DMCAgent) and agent.leaf is agent.prior
    assert make("search:64").leaf is None
    with pytest.raises(ValueError, match="leaf must be"):
        SearchAgent(leaf="dmc")
