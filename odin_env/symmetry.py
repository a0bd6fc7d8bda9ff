"""The colour symmetry of Odin: relabelling the colours of every card changes nothing in play.

No rule names a colour (R4-R7 ask only whether cards share one, R5 reads the values alone, and
R3 keeps colours ``0 .. colours - 1``), so a game whose cards had their colours permuted among
the colours in play is the same game: the same seats act, with the same choices, to the same
penalties. :func:`colour_relabelling` gives what that permutation does to the encodings, so
that a player can read one position under several labellings (a network that averages its
values over them, :class:`agents.dmc.DMCAgent`). :func:`colour_permutations` picks a fixed,
spread set of them.

Only the encodings of a game without the Goat are mapped (``OBS_SIZE`` entries and
``NUM_ACTIONS`` actions): the Goat has no colour, but its actions and fields are laid out apart.
"""

from __future__ import annotations

from functools import cache
from itertools import permutations
from math import factorial
from typing import NamedTuple

import numpy as np

from odin_env.cards import NUM_CARDS, NUM_COLOURS, NUM_VALUES
from odin_env.combos import COMBO_MASKS, NUM_COMBOS, combo_index_of_bits
from odin_env.observation import LAYOUT, OBS_SIZE, PLANES, views
from odin_env.rules import NUM_ACTIONS, TAKE
from odin_env.seeding import splitmix64


class Relabelling(NamedTuple):
    """What one colour permutation does to the encodings (index arrays, int64).

    With ``perm[c]`` the new colour of colour ``c``: the relabelled game's observation is
    ``observation[obs]`` and its legal mask ``mask[inverse(action)]``; action ``a`` of the
    game is action ``action[a]`` of the relabelled one."""

    obs: np.ndarray
    action: np.ndarray


def colour_relabelling(perm: tuple[int, ...] | list[int]) -> Relabelling:
    """The :class:`Relabelling` of the colour permutation ``perm`` (``perm[c]``: the new colour
    of colour ``c``; a permutation of ``0 .. 5``). ``ValueError`` for anything else."""
    perm = [int(c) for c in perm]
    if sorted(perm) != list(range(NUM_COLOURS)):
        raise ValueError(f"perm must be a permutation of 0 .. {NUM_COLOURS - 1}; got {perm}")
    card = np.array([perm[c // NUM_VALUES] * NUM_VALUES + c % NUM_VALUES for c in range(NUM_CARDS)])
    inverse = np.argsort(perm)  # the old colour of each new colour
    obs = np.arange(OBS_SIZE)
    for name, _ in PLANES:  # each plane is [colour, value - 1]: its colour rows move
        where, shape = LAYOUT[name]
        block = np.arange(where.start, where.stop).reshape(shape)
        obs[where] = (block[inverse] if len(shape) == 2 else block[:, inverse]).reshape(-1)
    where, _ = LAYOUT["colours"]
    obs[where] = np.arange(where.start, where.stop)[inverse]
    action = np.arange(NUM_ACTIONS)
    moved = np.zeros_like(COMBO_MASKS)
    moved[:, card] = COMBO_MASKS  # each combo's cards, every one moved to its new colour
    bits = (moved.astype(np.uint64) << np.arange(NUM_CARDS, dtype=np.uint64)).sum(1)
    action[:NUM_COMBOS] = [combo_index_of_bits(int(b)) for b in bits]
    action[TAKE : TAKE + NUM_CARDS] = TAKE + card
    return Relabelling(obs, action)


def colour_permutations(colours: int, count: int) -> list[tuple[int, ...]]:
    """``count`` distinct permutations of the colours in play, ``0 .. colours - 1`` (the others
    stay): the identity first, then the others in a fixed pseudo-random order (each
    permutation's lexicographic rank keyed by :func:`~odin_env.seeding.splitmix64`), so the
    same arguments give the same list on every machine and version. All ``colours!`` of them
    when ``count`` is larger."""
    if not 1 <= colours <= NUM_COLOURS or count < 1:
        raise ValueError(f"colours must be 1 .. {NUM_COLOURS}, count >= 1; got {colours}, {count}")
    ranked = list(permutations(range(colours)))  # lexicographic: the identity is rank 0
    order = [0, *sorted(range(1, factorial(colours)), key=splitmix64)]
    rest = tuple(range(colours, NUM_COLOURS))
    return [ranked[r] + rest for r in order[:count]]


def colours_in_play(observations: np.ndarray) -> np.ndarray:
    """How many colours each observation row has in play (int64 ``(n,)``): the count whose
    labellings :func:`colour_relabellings` gives."""
    return views(np.asarray(observations))["colours"].sum(1).round().astype(np.int64)


@cache
def colour_relabellings(colours: int, count: int) -> Relabelling:
    """The :class:`Relabelling` of each of ``colour_permutations(colours, count)``, stacked:
    ``obs`` ``(k, OBS_SIZE)`` and ``action`` ``(k, NUM_ACTIONS)``, row ``i`` the ``i``-th
    permutation's (the identity first). Built once per process and read-only, since players and
    learners share it (all 720 at six colours: about 1 s and 24 MB)."""
    maps = [colour_relabelling(p) for p in colour_permutations(colours, count)]
    table = Relabelling(np.stack([m.obs for m in maps]), np.stack([m.action for m in maps]))
    for array in table:
        array.setflags(write=False)
    return table


__all__ = [
    "Relabelling", "colour_permutations", "colour_relabelling", "colour_relabellings",
    "colours_in_play",
]  # fmt: skip
