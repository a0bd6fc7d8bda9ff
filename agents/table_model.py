"""A model of the table for the search (``search:N:model``): which passes the other seats made,
read from the observer's own observations, and how likely each sampled layout makes them.

What is recorded (:class:`TableModel`, one per game, from observations and the observer's own
actions only). A *pass event* is ``(slot, combo, size, known)``: the seat in ``slot`` (relative to
the observer) passed on ``combo`` while holding ``size`` cards of which ``known`` (a card-set
int) were public. Two sources, both exact under the rules:

- **the current observation**: while following, the ``passes`` seats just before the observer
  (slots ``n - passes .. n - 1``) passed on the combo on the table, with the hands they hold now
  (a pass changes no hand);
- **the interval since the observer's last decision**: after the observer played ``C`` (lead,
  follow, or the take that ends a follow), slot 1 faced ``C``; after it passed on ``T`` without
  ending the trick, slot 1 faced ``T``. Slots 1, 2, ... whose public fingerprint ``(size, known)``
  has not changed since that decision made no play in between (see below), so each of them, in
  order, passed on that combo, until the first slot that changed or the trick's ``n - 1`` passes.

Why a fingerprint identifies a hand: within a hand a seat's hidden cards (those not publicly
known) only leave it; a card it takes becomes known until it plays it. So equal hand size and
equal known cards at two moments of one hand mean equal hidden cards, hence the same hand. An
event therefore applies to a sampled world exactly when the seat's fingerprint now equals the
event's: the seat holds now the very cards it passed with. Events are cleared at a new hand
(penalty totals changed, or the discard pile lost cards) and by :meth:`TableModel.reset`.

Plays are not weighted: a seat that played ``D`` held ``D``, which is public; what it says about
the cards left is left to a later model.

The likelihood (:meth:`TableModel.log_weights`): each applicable pass event whose seat holds, in
a world, a combo that beats the event's combo multiplies that world's weight by ``same`` (a beat
of the same size: the cheap beat a seat rarely keeps) or ``up`` (only a beat one card larger);
a seat with no beat passes for sure (factor 1). Every world keeps a weight above zero, so the
search never runs out of worlds. :meth:`TableModel.choose` draws the search's worlds from a pool
of uniformly sampled ones in proportion to these weights, without replacement (Gumbel top-k).
"""

from __future__ import annotations

import numpy as np

from odin_env.combos import BEAT_HI, BEAT_LO, COMBO_BITS, COMBO_SIZE, combo_index_of_bits
from odin_env.observation import card_sets, hand_sizes, players_of, views
from odin_env.rules import FOLLOW, PASS, TAKING

SAME = 0.1
"""Default likelihood factor of a pass by a seat that held a beat of the same size. Measured
at 4 players (real decisions, a seat holding such a beat): ``planner`` passes 1.9% of the time
(53 of 2,772), ``shaper`` never (0 of 2,686), ``linear`` 8.7% (173 of 1,996); 0.1 stays above
all three, so a seat that passes more than the lab's players is not ruled out."""
UP = 0.1
"""Default likelihood factor of a pass by a seat whose only beats are one card larger
(measured as for :data:`SAME`: ``planner`` 2.5%, ``shaper`` 0%, ``linear`` 5.1%)."""
POOL = 8
"""Uniform worlds drawn per world the search keeps."""

_BITS = np.array(COMBO_BITS, dtype=np.int64)


def beat_kinds(hands: np.ndarray, combo: int) -> tuple[np.ndarray, np.ndarray]:
    """For card-set ints ``hands`` (any shape): whether each holds a combo that beats ``combo``
    with as many cards (``same``), and whether it holds one with one card more (``up``)."""
    lo, hi = int(BEAT_LO[combo]), int(BEAT_HI[combo])
    beats = _BITS[lo:hi]
    larger = COMBO_SIZE[lo:hi] > COMBO_SIZE[combo]
    flat = np.asarray(hands, dtype=np.int64).reshape(-1, 1)
    inside = (beats[None, :] & ~flat) == 0
    same = inside[:, ~larger].any(axis=1).reshape(np.shape(hands))
    up = inside[:, larger].any(axis=1).reshape(np.shape(hands))
    return same, up


class TableModel:
    """Per-game memory of the other seats' passes and the likelihood of sampled worlds; see the
    module docstring. Call :meth:`observe` with every observation the seat is shown (in order),
    then :meth:`decided` with the action it took; :meth:`reset` at a new game."""

    def __init__(self, same: float = SAME, up: float = UP, pool: int = POOL):
        for name, value in (("same", same), ("up", up)):
            if not 0.0 < value <= 1.0:
                raise ValueError(f"{name} must be a likelihood in (0, 1]; got {value!r}")
        if isinstance(pool, bool) or not isinstance(pool, int) or pool < 1:
            raise ValueError(f"pool must be an integer >= 1; got {pool!r}")
        self.log_same, self.log_up, self.pool = float(np.log(same)), float(np.log(up)), pool
        self.reset()

    def reset(self) -> None:
        """Forget everything (a new game)."""
        self.events: set[tuple[int, int, int, int]] = set()
        self._now: dict | None = None
        self._after: tuple[list, int, int] | None = None

    def observe(self, observation: np.ndarray) -> None:
        """Record the pass events this observation reveals (module docstring); reads nothing
        but the observation and the observer's own earlier actions."""
        v = views(observation)
        n = players_of(v)
        sizes = hand_sizes(v)[:n].tolist()
        _, table, _, discard, *known = card_sets(observation)
        prints = [(sizes[k], known[k]) for k in range(n)]
        penalty = v["penalty"][:n].tolist()
        phase = int(np.argmax(v["phase"]))
        passes = int(round(float(v["passes"][0]) * (n - 1)))
        before = self._now
        if before is not None and (
            before["n"] != n or before["penalty"] != penalty or before["discard"] & ~discard
        ):
            self.events.clear()  # a new hand (or game): other cards, other passes
            self._after = None
        after = self._after
        if after is not None and phase != TAKING:
            # The observer's own take comes right after its play: nobody else has acted yet.
            was, faced, row = after
            for k in range(1, n - row):
                if prints[k] != was[k]:
                    break
                self.events.add((k, faced, *prints[k]))
            self._after = None
        combo = combo_index_of_bits(table) if table else -1
        if phase == FOLLOW:
            for k in range(n - passes, n):
                self.events.add((k, combo, *prints[k]))
        self._now = {
            "n": n, "penalty": penalty, "discard": discard, "prints": prints,
            "phase": phase, "combo": combo, "passes": passes,
        }  # fmt: skip

    def decided(self, action: int) -> None:
        """The observer took ``action`` at the observation last given to :meth:`observe`."""
        now = self._now
        if now is None:
            return
        if action < PASS:
            faced, row = int(action), 0
        elif action == PASS:
            faced, row = now["combo"], now["passes"] + 1  # the trick ends at n - 1 passes
        else:
            faced, row = now["combo"], 0  # taking: the table shows the combo just played
        self._after = (now["prints"], faced, row) if faced >= 0 else None

    def applicable(self) -> list[tuple[int, int]]:
        """``(slot, combo)`` of the recorded passes whose seat still holds the cards it passed
        with (same fingerprint now), sorted."""
        if self._now is None:
            return []
        prints = self._now["prints"]
        return sorted({(k, c) for k, c, size, known in self.events if prints[k] == (size, known)})

    def log_weights(self, hands: np.ndarray) -> np.ndarray:
        """Log likelihood, up to a constant, of the applicable passes in each world of
        ``hands`` (``(worlds, players)`` card-set ints, slot-relative); 0 for every world when
        there is none."""
        out = np.zeros(hands.shape[0])
        for slot, combo in self.applicable():
            same, up = beat_kinds(hands[:, slot], combo)
            out += np.where(same, self.log_same, np.where(up, self.log_up, 0.0))
        return out

    def choose(self, pool: np.ndarray, worlds: int, rng: np.random.Generator) -> np.ndarray:
        """``worlds`` rows of ``pool`` (uniformly sampled worlds), drawn without replacement
        with probability in proportion to their likelihood (Gumbel top-k), in pool order."""
        keys = self.log_weights(pool) + rng.gumbel(size=pool.shape[0])
        keep = np.sort(np.argsort(-keys, kind="stable")[:worlds])
        return pool[keep]


__all__ = ["POOL", "SAME", "UP", "TableModel", "beat_kinds"]
