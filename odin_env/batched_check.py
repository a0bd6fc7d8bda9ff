"""The differential check of the batched engine against ``rules.Game`` (decision by decision).

``compare_with_rules`` is what the tests and ``benchmarks/batched_throughput.py --differential``
run: the pure rules engine is the oracle the fast engine is held to.
"""

from __future__ import annotations

import numpy as np

from odin_env.batched import BatchedGames
from odin_env.observation import observe
from odin_env.rules import Config, Game


def compare_with_rules(
    config: Config,
    batch: int,
    seed: int,
    games: int,
    auto_forced: bool = True,
    action_seed: int = 0,
) -> tuple[int, int]:
    """Play random legal games in :class:`BatchedGames` and in ``rules.Game`` side by side
    until ``games`` episodes have finished, comparing every decision: acting seat, mask,
    observation (bit for bit), rewards, hand ends and penalties, episode ends and outcomes.

    Returns ``(episodes finished, decisions compared)``; raises ``AssertionError`` naming the
    game, the decision and what differs at the first mismatch.
    """
    engine = BatchedGames(config, batch, seed, auto_forced)
    rngs = [np.random.default_rng(s) for s in engine.game_seeds]
    ref = [_new_reference(config, rng, auto_forced) for rng in rngs]
    pick = np.random.default_rng(action_seed)
    finished = decisions = 0
    actions = np.zeros(batch, dtype=np.int64)
    n = config.players
    zero = [0.0] * n
    while finished < games:
        for i, game in enumerate(ref):
            where = f"{config}, auto_forced={auto_forced}, seed {seed}, game {i}, step {decisions}"
            _expect(engine.seat[i] == game.current, where, "acting seat")
            _expect(np.array_equal(engine.mask[i], game.legal_mask()), where, "mask")
            _expect(np.array_equal(engine.obs[i], observe(game, game.current)), where, "obs")
            actions[i] = game.legal[pick.integers(len(game.legal))]
        engine.step(actions)
        for i, game in enumerate(ref):
            where = f"{config}, auto_forced={auto_forced}, seed {seed}, game {i}, step {decisions}"
            hands_before = len(game.history)
            paid = game.apply(int(actions[i]))
            if auto_forced and not game.is_over:
                forced = game.play_forced()
                if forced is not None:
                    paid = forced if paid is None else [a + b for a, b in zip(paid, forced)]
            _expect(engine.rewards[i].tolist() == (paid or zero), where, "rewards")
            ended = len(game.history) > hands_before
            _expect(engine.hand_end[i] == ended, where, "hand end")
            if ended:
                _expect(engine.penalties[i].tolist() == list(game.history[-1]), where, "penalty")
            _expect(engine.done[i] == game.is_over, where, "done")
            if game.is_over:
                _expect(engine.final_totals[i].tolist() == game.totals, where, "final totals")
                won = tuple(np.flatnonzero(engine.winners[i]).tolist())
                _expect(won == game.winners, where, "winners")
                _expect(engine.final_hands[i] == len(game.history), where, "hands played")
                finished += 1
                ref[i] = _new_reference(config, rngs[i], auto_forced)
        decisions += batch
    return finished, decisions


def _new_reference(config: Config, rng: np.random.Generator, auto_forced: bool) -> Game:
    game = Game(config, seed=rng)
    if auto_forced:
        game.play_forced()
    return game


def _expect(ok: object, where: str, what: str) -> None:
    if not ok:
        raise AssertionError(f"batched engine differs from rules.py in {what}: {where}")


__all__ = ["compare_with_rules"]
