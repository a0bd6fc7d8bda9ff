"""The test oracle of the hand-written agents: ``greedy``, ``shaper`` and ``planner`` as they
were written in Python before the Goat (the lab plays their numba kernels,
:mod:`agents.heuristics`).

In a game without the Goat every kernel must choose exactly as its class here, decision by
decision (``tests/test_batched_heuristics.py``, ``tests/test_batched_shaper.py``): this is the
readable statement of their rules of play, kept as the kernels' reference.

Each reads only the observation and the legal mask (decoded by :func:`agents.hand.see`, which goes
through :func:`odin_env.observation.views`) and the :mod:`odin_env.combos` tables. All three are
deterministic; ``seed`` is accepted for the common agent signature and to break no ties.
"""

from __future__ import annotations

import numpy as np

from agents.hand import (
    COLOUR_LINE,
    VALUE_LINE,
    VALUE_OF,
    Seen,
    cover,
    joins,
    partition,
    see,
)
from odin_env.cards import cards_of
from odin_env.combos import COMBO_BITS, COMBO_NUMBER, COMBO_SIZE, combo_index_of_bits, is_combo
from odin_env.rules import LEAD, PASS, TAKE

_SIZE = COMBO_SIZE.tolist()
_NUMBER = COMBO_NUMBER.tolist()
_PAIR_CHANCE = 0.25
"""Chance that two unknown cards form a combo (8 of 53 share the colour, 5 the value)."""
_OUT = -1e9
"""Score of a play that empties the hand: better than anything else."""


class _Heuristic:
    """Shared plumbing: decode, then dispatch on the phase."""

    name = "heuristic"

    def __init__(self, seed: int | None = None):
        self.seed = seed

    def reset(self, seat: int, seed: int | None = None) -> None:
        """Nothing to reset: the heuristics keep no state between decisions."""

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        seen = see(observation, action_mask)
        if seen.takes:
            return TAKE + self.take(seen)
        if seen.plays.size == 0:
            return PASS
        for a in seen.plays[::-1]:  # the whole hand, if playable, is among the largest plays
            if COMBO_BITS[a] == seen.hand:
                return int(a)
        return self.play(seen)

    def take(self, seen: Seen) -> int:
        raise NotImplementedError

    def play(self, seen: Seen) -> int:
        raise NotImplementedError


class Greedy(_Heuristic):
    """Plays whenever it can: the play that sheds the most cards, then the lowest number.

    Leading, that is the whole hand when it is one combo, else its lowest single card. It never
    passes while it has a legal play. Taking, it keeps the card that joins the most combos with
    the cards left in its hand (ties: the higher value)."""

    name = "greedy"

    def play(self, seen: Seen) -> int:
        plays = seen.plays
        sizes = COMBO_SIZE[plays]
        # Canonical order sorts by size then number: the first play of the largest size is the
        # lowest number among the plays that shed the most.
        return int(plays[int(np.argmax(sizes == sizes.max()))])

    def take(self, seen: Seen) -> int:
        return max(seen.takes, key=lambda c: (joins(seen.hand, c), VALUE_OF[c]))


class Shaper(_Heuristic):
    """Keeps its hand in as few combos as possible, and still plays whenever it can.

    Every option is scored by the hand it leaves: first the fewest combos that hand splits into
    (:func:`agents.hand.cover`, the number of plays still needed to go out), then its size.
    Following, it plays the option that leaves the best hand, counting the best card to take from
    the beaten combo; leading, the single card whose loss leaves the best hand (ties: the higher
    value, which fewer singles beat). It passes only when it has no legal play."""

    name = "shaper"

    def after_take(self, hand: int, takes: list[int]) -> tuple[tuple, int]:
        """The best card to take into ``hand`` and the score of the hand it makes."""
        best = None
        for c in takes:
            new = hand | 1 << c
            key = (cover(new), -joins(hand, c), -VALUE_OF[c])
            if best is None or key < best[0]:
                best = (key, c)
        (combos_left, *_), card = best
        return (combos_left, hand.bit_count() + 1), card

    def take(self, seen: Seen) -> int:
        return self.after_take(seen.hand, seen.takes)[1]

    def play(self, seen: Seen) -> int:
        hand = seen.hand
        if seen.phase == LEAD:  # singles only: the whole hand was handled by act
            return int(
                min(
                    seen.plays,
                    key=lambda a: (cover(hand & ~COMBO_BITS[a]), -_NUMBER[a]),
                )
            )
        beaten = cards_of(seen.table)
        best = None
        for a in seen.plays:
            left = hand & ~COMBO_BITS[a]
            score, _ = self.after_take(left, beaten)
            key = (score, _NUMBER[a])
            if best is None or key < best[0]:
                best = (key, int(a))
        return best[1]


class Planner(_Heuristic):
    """Plans its hand as a split into combos, and plays around what it knows of the others.

    - **Plan.** A hand is valued by the fewest combos it splits into (plays still needed to go
      out, :func:`agents.hand.cover`) and its size (the penalty if someone else goes out).
      Every option (each play with its best take, or a pass) is scored by the hand it leaves.
    - **Keep the finisher.** The largest combo of the split (:func:`agents.hand.partition`) is
      kept to end the hand with: playing part of it without going out costs extra, so it leads
      and follows with the rest of its hand first.
    - **Pass on purpose.** Passing is an option like any play: it passes when every play would
      leave a worse hand (for instance, when its hand is one combo and a play would split it).
    - **Read the table.** An opponent down to one or two cards is a threat, weighted by the
      chance that its hand is one combo (certain for one card; for two, judged from the cards it
      is publicly known to hold and the cards the planner cannot place). The planner then avoids
      leading or following with a combo such an opponent could go out over (one card more, or
      the same size with a higher number, judged from its known cards or the unseen ones), and
      avoids passing on a trick that such an opponent owns, since its owner leads next.
    """

    name = "planner"
    cover_weight = 2.0
    """Cost of one more combo to play, in cards of penalty."""
    finisher_cost = 1.0
    """Cost of playing part of the finishing combo without going out."""
    threat_cost = 2.0
    """Cost of leaving a table that a near-out opponent can go out over."""

    def value(self, hand: int) -> float:
        """How bad a hand is to hold (lower is better; an empty hand is best)."""
        if not hand:
            return _OUT
        return self.cover_weight * cover(hand) + hand.bit_count()

    def after_take(self, hand: int, takes: list[int]) -> tuple[float, int]:
        best = None
        for c in takes:
            key = (self.value(hand | 1 << c), -joins(hand, c), -VALUE_OF[c])
            if best is None or key < best[0]:
                best = (key, c)
        return best[0][0], best[1]

    def take(self, seen: Seen) -> int:
        return self.after_take(seen.hand, seen.takes)[1]

    def threats(self, seen: Seen) -> list[tuple[int, int, float]]:
        """``(slot, cards, chance)`` for each opponent with 1-2 cards: ``chance`` that its hand is
        one combo (it may then go out in one play), judged from its known cards and the cards
        the observer cannot place."""
        out = []
        unseen = seen.unseen
        pool = unseen.bit_count()
        for k in range(1, seen.players):
            size = seen.sizes[k]
            if size == 1:
                out.append((k, 1, 1.0))
            elif size == 2:
                known = seen.known[k]
                if known.bit_count() == 2:
                    chance = 1.0 if is_combo(known) else 0.0
                elif known:
                    card = known.bit_length() - 1
                    mates = unseen & (COLOUR_LINE[card] | VALUE_LINE[card])
                    chance = mates.bit_count() / max(pool, 1)
                else:
                    chance = _PAIR_CHANCE
                if chance > 0:
                    out.append((k, 2, chance))
        return out

    def exposed(self, seen: Seen, combo: int, threats: list[tuple[int, int, float]]) -> float:
        """Expected number of threats that could go out over ``combo`` on the table (R7): any
        threat holding one card more, and a threat of the same size with a higher number."""
        size = _SIZE[combo]
        risk = 0.0
        for k, cards, chance in threats:
            if cards == size + 1:
                risk += chance
            elif cards == size:
                risk += chance * _beaten_share(seen, k, combo)
        return risk

    def play(self, seen: Seen) -> int:
        hand = seen.hand
        threats = self.threats(seen)
        parts = partition(hand)
        finisher = parts[0] if len(parts) > 1 else 0
        if seen.phase == LEAD:
            return self.lead(seen, threats, finisher)
        beaten = cards_of(seen.table)
        options = []
        stay = self.value(hand)
        pass_score = stay
        for k, _, chance in threats:
            if k == seen.owner:
                # Left unbeaten, the trick goes to a near-out owner, who then leads its last cards.
                pass_score += self.threat_cost * chance
        options.append((pass_score, 1, PASS))
        for a in seen.plays:
            bits = COMBO_BITS[a]
            left = hand & ~bits
            score, _ = self.after_take(left, beaten)
            if bits & finisher:
                score += self.finisher_cost
            if threats:
                score += self.threat_cost * self.exposed(seen, int(a), threats)
            options.append((score, 0, int(a)))
        return min(options)[2]

    def lead(self, seen: Seen, threats: list[tuple[int, int]], finisher: int) -> int:
        hand = seen.hand
        best = None
        for a in seen.plays:
            card = COMBO_BITS[a].bit_length() - 1
            left = hand & ~COMBO_BITS[a]
            score = self.value(left)
            if COMBO_BITS[a] & finisher:
                score += self.finisher_cost
            if threats:
                score += self.threat_cost * self.exposed(seen, int(a), threats)
            key = (score, -VALUE_OF[card])
            if best is None or key < best[0]:
                best = (key, int(a))
        return best[1]


def _beaten_share(seen: Seen, slot: int, combo: int) -> float:
    """Chance that opponent ``slot``, holding as many cards as ``combo``, holds a higher number:
    certain from its known cards when all are known, else the share of the unseen cards whose
    value tops the combo's highest (a fair guess for singles and pairs)."""
    known = seen.known[slot]
    if known.bit_count() == _SIZE[combo]:
        return 1.0 if is_combo(known) and _number(known) > _NUMBER[combo] else 0.0
    top = _NUMBER[combo] // 10 ** (_SIZE[combo] - 1)
    pool = cards_of(seen.unseen | known)
    if not pool:
        return 0.0
    return sum(1 for c in pool if VALUE_OF[c] > top) / len(pool)


def _number(bits: int) -> int:
    return _NUMBER[combo_index_of_bits(bits)]


HEURISTICS: dict[str, type] = {"greedy": Greedy, "shaper": Shaper, "planner": Planner}
"""Heuristic agents by spec name, weakest first."""

__all__ = ["HEURISTICS", "Greedy", "Planner", "Shaper"]
