"""``search:N:deep``: the search's own next decision searched too, under its own information.

The plain search (:class:`agents.search.SearchAgent`) plays each candidate in each sampled world
and the rest of the hand by the playout policy in every seat, its own included: it improves on
the policy by one decision. :class:`DeepSearch` searches the searcher's *next* decision too, as
it could make it then, knowing only what it would then see:

1. Each candidate is played out in each world as the plain search plays it (the *base*
   playouts); along the way, each playout's first decision of the searcher after the candidate
   (its *next decision*) is recorded: the observation it would be shown, its legal actions and
   the policy's action there.
2. Worlds that show the searcher the same observation at the next decision of one candidate form
   an *information set*: the searcher cannot tell them apart there, so it makes one choice for
   all of them. In a set of two worlds or more, the other legal actions worth trying there (the
   ``prior``'s :data:`agents.search.TOP` best, or all without a prior or in a Goat game) are
   played out too, in each of its worlds: the position reloaded, the candidate and the other
   seats' answers replayed (the policy is deterministic: the replay reaches the same
   observation, which is checked), the alternative played, the rest of the hand by the policy.
3. In each world of a set the searcher plays the action of best mean outcome over the *other*
   worlds of the set (leave-one-out: a world's own outcome never chooses its action, so the
   estimate is not optimistic, as the best of a world's own outcomes would be); in a world alone
   in its set, or whose hand ended before the next decision, the base playout stands.
4. A candidate's outcome in a world is that of the action so chosen; the candidates are ranked
   as the plain search ranks them.

The budget ``N`` counts the base playouts; the alternatives cost more (up to ``TOP`` times as
many again, fewer where the sets are small): decision times are the measure to compare.
"""

from __future__ import annotations

import numpy as np

from agents.base import legal_actions
from agents.search import MAX_STEPS, SearchAgent, top_actions, win_chance
from odin_env.rules import Config, Game

_PAD = 64
"""The alternatives' batch is padded to a multiple of this, so that few engine sizes are built."""


class DeepSearch(SearchAgent):
    """:class:`agents.search.SearchAgent` that also searches its next decision (module
    docstring); the same arguments, less ``leaf`` (a search cut at the next decision has none
    to search)."""

    name = "search"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        if self.leaf is not None:
            raise ValueError("deep searches the next decision, which leaf cuts: give one of them")

    def _playouts(
        self, game: Game, config: Config, hands: np.ndarray, candidates: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        worlds, count = hands.shape[0], candidates.size
        rows = np.repeat(hands, count, axis=0)
        firsts = np.tile(candidates, worlds).astype(np.int64)
        win, penalty, seen = self._play(game, config, rows, firsts)
        sets: dict[tuple[int, bytes], list[int]] = {}
        for row in np.flatnonzero(seen.reached):
            sets.setdefault((row % count, seen.obs[row].tobytes()), []).append(int(row))
        many = [members for members in sets.values() if len(members) > 1]
        tried = self._alternatives(seen, [members[0] for members in many], config)
        # One extra playout per (world, alternative) of every set of two worlds or more.
        plan = [(row, action) for m, members in enumerate(many) for row in members
                for action in tried[m]]  # fmt: skip
        if not plan:
            return win.reshape(worlds, count), penalty.reshape(worlds, count)
        at, forced = np.array(plan, dtype=np.int64).T
        alt_win, alt_penalty, _ = self._play(
            game, config, rows[at], firsts[at], forced=(forced, seen.obs[at])
        )
        done = 0
        for m, members in enumerate(many):
            k = len(tried[m])
            idx = np.array(members)
            cut = slice(done, done + idx.size * k)
            done += idx.size * k
            wins = np.column_stack([win[idx], alt_win[cut].reshape(idx.size, k)])
            pens = np.column_stack([penalty[idx], alt_penalty[cut].reshape(idx.size, k)])
            score = -pens if self.penalty else wins
            others = (score.sum(axis=0) - score) / (idx.size - 1)  # leave-one-out means
            choice = np.argmax(others, axis=1)  # ties: the base action (column 0) first
            win[idx] = wins[np.arange(idx.size), choice]
            penalty[idx] = pens[np.arange(idx.size), choice]
        return win.reshape(worlds, count), penalty.reshape(worlds, count)

    def _alternatives(self, seen: _Next, rows: list[int], config: Config) -> list[np.ndarray]:
        """For the next decision of each of ``rows`` (one per set), the legal actions to play
        out besides the base playout's: the prior's ``top`` best (all without a prior or in a
        Goat game), less the one the base playout played."""
        obs, masks = seen.obs[rows], seen.mask[rows]
        if self.prior is not None and not config.goat and rows:
            values = self.prior.values(obs, masks)
        else:
            values = None
        tried = []
        for i, row in enumerate(rows):
            mask = masks[i] if values is None else top_actions(values[i], masks[i], self.top)
            legal = legal_actions(mask)  # ascending
            tried.append(legal[legal != seen.base[row]])
        return tried

    def _play(
        self,
        game: Game,
        config: Config,
        hands: np.ndarray,
        firsts: np.ndarray,
        forced: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> tuple[np.ndarray, np.ndarray, _Next]:
        """Play ``firsts[i]`` from ``game`` in layout ``hands[i]``, then the hand out by the
        policy (``own`` in seat 0 when given), but with ``forced = (actions, observations)``
        play ``actions[i]`` at the searcher's next decision, which must show
        ``observations[i]`` (``RuntimeError`` otherwise: the policy is not deterministic). The
        searcher's outcome and penalty for each row, and its next decisions."""
        size = hands.shape[0]
        batch = -(-size // _PAD) * _PAD if forced is not None else size
        pad = np.arange(batch) % size  # padding rows repeat real ones; their results are dropped
        engine = self._engine(config, batch)
        engine.load(np.arange(batch), game, hands=hands[pad])
        engine.step(firsts[pad])
        final = np.zeros((batch, config.players), dtype=np.int64)
        actions = np.zeros(batch, dtype=np.int64)
        seen = _Next(batch, engine.obs.shape[1], engine.mask.shape[1])
        for _ in range(MAX_STEPS):
            ended = engine.hand_end
            final[ended] = engine.penalties[ended]
            rows = np.flatnonzero(~engine.held)
            if rows.size == 0:
                break
            mine = engine.seat[rows] == 0
            if self.own is None:
                actions[rows] = self.policy.act_batch(engine.obs[rows], engine.mask[rows])
            else:
                for player, part in ((self.own, rows[mine]), (self.policy, rows[~mine])):
                    if part.size:
                        actions[part] = player.act_batch(engine.obs[part], engine.mask[part])
            first = rows[mine & ~seen.reached[rows]]
            if first.size:
                seen.reached[first] = True
                seen.obs[first], seen.mask[first] = engine.obs[first], engine.mask[first]
                seen.base[first] = actions[first]
                if forced is not None:
                    if not np.array_equal(engine.obs[first], forced[1][pad[first]]):
                        raise RuntimeError(
                            "deep needs a deterministic playout policy: a replay reached "
                            "another position"
                        )
                    actions[first] = forced[0][pad[first]]
            engine.step(actions)
        totals = np.array(game.totals, dtype=np.int64)
        outcome = win_chance(totals + final, config.threshold)[:size, 0]
        return outcome, final[:size, 0].astype(np.float64), seen


class _Next:
    """The searcher's next decision in each row of a playout batch: whether it came
    (``reached``), the observation and mask it showed, and the policy's action there."""

    def __init__(self, batch: int, obs_size: int, actions: int):
        self.reached = np.zeros(batch, dtype=bool)
        self.obs = np.zeros((batch, obs_size), dtype=np.float32)
        self.mask = np.zeros((batch, actions), dtype=np.int8)
        self.base = np.full(batch, -1, dtype=np.int64)


__all__ = ["DeepSearch"]
