"""The search's shortlist (``prior``): only the ``top`` candidates a network values most are
searched, chosen from the observation alone; by default the bundled one-pass ``dmc_one``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from agents.base import legal_actions
from agents.dmc import BUNDLED_DMC_ONE, DMCAgent
from agents.registry import make
from agents.search import PRIOR, TOP, SearchAgent
from odin_env.observation import observe
from odin_env.rules import Config, Game


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
    plain = SearchAgent(seed=5, rollouts=96, prior=None).act(obs, mask)
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
        assert action == SearchAgent(seed=5, rollouts=96, prior=None).act(obs, only)
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


def test_the_plain_search_shortlists_with_the_one_pass_network() -> None:
    """``search``'s prior is :data:`PRIOR` (``dmc_one``), read at its first shortlist and shared
    by every search of the process; it chooses as a search given that network by hand, and a
    bad prior is refused."""
    agent = make("search:96", seed=5)
    assert agent.prior == PRIOR == BUNDLED_DMC_ONE and agent.top == TOP
    game = _wide(Config(players=4), 1)
    obs, mask = observe(game, game.current), game.legal_mask()
    network = DMCAgent.load(BUNDLED_DMC_ONE)
    assert agent.act(obs, mask) == SearchAgent(seed=5, rollouts=96, prior=network).act(obs, mask)
    assert isinstance(agent.prior, DMCAgent) and agent.prior.symmetries == 1
    assert make("search:8").prior == PRIOR  # not read until a decision needs it
    other = make("search:8")
    other.act(obs, mask)
    assert other.prior is agent.prior
    for kwargs in ({"prior": "dmc"}, {"prior": Path("no.safetensors")}, {"top": 0}):
        with pytest.raises(ValueError, match="must be"):
            SearchAgent(**kwargs)
