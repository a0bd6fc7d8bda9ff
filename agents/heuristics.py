"""Hand-written agents of clearly different strength, weakest first: ``greedy``, ``shaper``,
``planner``.

Each reads only the observation and the legal mask, and is one numba kernel
(:mod:`agents.batched_shaper`, :mod:`agents.batched_planner`): ``act`` plays one decision,
``act_batch`` a whole batch of the batched engine, with the same rules of play written once.
All three are deterministic; ``seed`` is accepted for the common agent signature and to break
no ties. The strength order greedy < shaper < planner (and random below all three) is measured
by ``tests/test_heuristics.py``, not just claimed; in a game without the Goat the kernels choose
exactly as the readable Python oracle of ``tests/oracle_heuristics.py``.

All three play the Grumpy Goat (RULES G1-G5), each in its own way:

- ``greedy`` still sheds the most cards: the Goat rides along on the largest play it can join,
  and leading, the Goat alone is its lowest single (number 0), so it leads it first. Taking, it
  never takes the Goat while it may take another card.
- ``shaper`` counts the Goat as 5 cards of penalty after the number of combos: it leads the
  Goat alone whenever that leaves no more combos than another single would, and it takes the
  Goat only when that leaves its hand in fewer combos.
- ``planner`` values a hand at ``2 * combos + cards``. While no opponent is near out it counts
  the Goat as one card: the Goat joins any colour's combo as a 0 digit, so it keeps it to ride
  along in a play (and takes it when it leaves no worse hand). Once an opponent holds one or two
  cards it counts the Goat's 5 points (G4), sheds it first and leaves it when taking. (Counted at
  5 throughout, the planner leads the Goat alone at once and wastes the lead: measured, it then
  wins only 51% of two-against-two Goat games against ``shaper`` instead of about 62%.)
"""

from __future__ import annotations

from agents.batched_planner import planner_kernel
from agents.batched_shaper import KernelAgent, greedy_kernel, shaper_kernel


class Greedy(KernelAgent):
    """Plays whenever it can: the play that sheds the most cards, then the lowest number.

    Leading, that is the whole hand when it is one combo, else its lowest single card. It never
    passes while it has a legal play. Taking, it keeps the card that joins the most combos with
    the cards left in its hand (ties: the higher value)."""

    name = "greedy"
    kernel = greedy_kernel


class Shaper(KernelAgent):
    """Keeps its hand in as few combos as possible, and still plays whenever it can.

    Every option is scored by the hand it leaves: first the fewest combos that hand splits into
    (the number of plays still needed to go out), then its penalty. Following, it plays the
    option that leaves the best hand, counting the best card to take from the beaten combo;
    leading, the single card whose loss leaves the best hand (ties: the higher number, which
    fewer singles beat). It passes only when it has no legal play."""

    name = "shaper"
    kernel = shaper_kernel


class Planner(KernelAgent):
    """Plans its hand as a split into combos, and plays around what it knows of the others.

    - **Plan.** A hand is valued by the fewest combos it splits into (plays still needed to go
      out) and its penalty (if someone else goes out). Every option (each play with its best
      take, or a pass) is scored by the hand it leaves.
    - **Keep the finisher.** The largest combo of a smallest split is kept to end the hand with:
      playing part of it without going out costs extra, so it leads and follows with the rest
      of its hand first.
    - **Pass on purpose.** Passing is an option like any play: it passes when every play would
      leave a worse hand (for instance, when its hand is one combo and a play would split it).
    - **Read the table.** An opponent down to one or two cards is a threat, weighted by the
      chance that its hand is one combo (certain for one card; for two, judged from the cards it
      is publicly known to hold and the cards the planner cannot place). The planner then avoids
      leading or following with a combo such an opponent could go out over (one card more, or
      the same size with a higher number, judged from its known cards or the unseen ones), and
      avoids passing on a trick that such an opponent owns, since its owner leads next.

    Its weights are :data:`agents.batched_planner.COVER_WEIGHT`, ``FINISHER_COST`` and
    ``THREAT_COST``.
    """

    name = "planner"
    kernel = planner_kernel


HEURISTICS: dict[str, type[KernelAgent]] = {
    "greedy": Greedy,
    "shaper": Shaper,
    "planner": Planner,
}
"""Heuristic agents by spec name, weakest first. Each class is both forms: ``act`` and
``act_batch``."""

__all__ = ["HEURISTICS", "Greedy", "Planner", "Shaper"]
