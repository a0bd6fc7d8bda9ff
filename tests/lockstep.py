"""One hand played in lockstep in two games that look the same to one seat: the check that a
search with a memory of the game (``search:N:model``, ``search:N:post``) reads nothing but its
observations. Shared by tests/test_table_model.py and tests/test_posterior.py."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from agents.search import SearchAgent
from odin_env.cards import cards_of
from odin_env.observation import observe
from odin_env.rules import PASS, Config, Game


class Recording(SearchAgent):
    """A search that keeps the scores of every decision it evaluates."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.seen: list = []

    def evaluate(self, observation, action_mask=None, *, within=False):
        scores = super().evaluate(observation, action_mask, within=within)
        self.seen.append((scores.actions.tolist(), scores.win.tolist(), scores.penalty.tolist()))
        return scores


def swapped(game: Game, seat: int) -> Game:
    """The deal of ``game`` with one hidden card of the two seats after ``seat`` exchanged."""
    n = game.config.players
    a, b = [(seat + k) % n for k in (1, 2)]
    hands = [cards_of(h) for h in game.hands]
    hands[a][0], hands[b][0] = hands[b][0], hands[a][0]
    return Game.from_position(game.config, hands, game.current)


def play_in_lockstep(
    seed: int, memory: dict, used: Callable[[SearchAgent], int]
) -> tuple[list, list, list, int]:
    """One 4-player hand in two games whose other seats' hidden cards differ, every other seat
    choosing among the actions legal in both. A search with ``memory`` (its keywords) plays the
    seat after the leader in each, a plain one evaluates the same decisions beside it; every
    observation of the seat is asserted the same in both games, and so are the two actions.
    Returns both searches' scores, the plain one's and the sum of ``used(search)`` over the
    seat's decisions."""
    first = Game(Config(players=4, episode="hand"), seed=seed)
    seat = (first.current + 1) % 4
    second = swapped(first, seat)
    assert first.hands != second.hands
    rng = np.random.default_rng(seed)
    agents = [Recording(seed, rollouts=32, **memory) for _ in range(2)]
    plain = Recording(seed, rollouts=32)
    for agent in (*agents, plain):
        agent.reset(seat, seed=seed)
    total = 0
    while not first.is_over:
        assert second.current == first.current and not second.is_over
        if first.current == seat:
            obs, mask = observe(first, seat), first.legal_mask()
            assert np.array_equal(obs, observe(second, seat))
            assert np.array_equal(mask, second.legal_mask())
            action = agents[0].act(obs, mask)
            assert agents[1].act(observe(second, seat), mask) == action
            total += used(agents[0])
            if mask.sum() > 1:
                plain.evaluate(obs, mask)
        else:
            common = sorted(set(first.legal) & set(second.legal))
            passing = PASS in common and rng.random() < 0.6
            action = PASS if passing else common[rng.integers(len(common))]
        first.apply(action)
        second.apply(action)
    return agents[0].seen, agents[1].seen, plain.seen, total
