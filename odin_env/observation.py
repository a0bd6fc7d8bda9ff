"""What one seat sees, as one flat ``float32`` array with named views.

The encoding is seat-relative: slot 0 is the observing seat, slot ``k`` the seat ``k`` places
clockwise (R16). Slots of empty seats (fewer than 6 players) are zero. Nothing hidden at a real
table is encoded: other hands appear only through their size and the cards they are publicly
known to hold.

=================  ==========  ==========================================================
view               shape       content
=================  ==========  ==========================================================
``hand``           (6, 9)      the observer's cards, ``[colour, value - 1]``
``table``          (6, 9)      the combo on the table (empty when a trick is to be led);
                               while taking, the combo the observer has just played
``take``           (6, 9)      while taking: the beaten combo, whose cards may be taken
``discard``        (6, 9)      cards discarded face up this hand
``known``          (6, 6, 9)   ``known[k]``: cards slot ``k`` took this hand and has not played
``hand_size``      (6,)        cards in hand of slot ``k``, divided by 9
``penalty``        (6,)        penalty total of slot ``k``, divided by the threshold (capped,
                               see :func:`high`)
``table_owner``    (6,)        1 for the slot that played the combo on the table
``phase``          (3,)        one-hot: lead, follow, take
``passes``         (1,)        passes in a row since the last play, divided by ``players - 1``
``players``        (5,)        one-hot of the number of players, 2 .. 6
``threshold``      (1,)        the penalty threshold, divided by 100
``colours``        (6,)        1 for each colour in play
=================  ==========  ==========================================================

``LAYOUT`` maps each name to ``(slice, shape)``; :func:`views` returns the named views of one
observation or of a batch (leading axes are kept). The scale factors are ``SCALE``.
:func:`high` gives every entry's true maximum under a config (the minimum is 0): the
environments' observation spaces are ``Box(0, high(config))``.

A game with the Goat (RULES G1-G5) has :data:`GOAT_FIELD_SIZE` entries more, after all of the
above (so every other entry keeps its place): ``goat`` (11,), a one-hot of where the observer
sees the Goat: in its hand, on the table, in the beaten combo to take from, in the discard,
known in slot ``k``'s hand (6 entries: slot 0 is the observer, who then also has it in hand),
or unseen (in another hand it was dealt to; it is never set aside). The planes hold the coloured
cards only; ``hand_size`` counts the Goat as a card. :func:`observation_size` gives the size.
"""

from __future__ import annotations

import numpy as np
from gymnasium import spaces

from odin_env.cards import GOAT_BIT, MAX_HAND, NUM_CARDS, NUM_COLOURS, NUM_VALUES
from odin_env.rules import LEAD, MAX_PLAYERS, MIN_PLAYERS, PLAY_BITS, Config, Game

SLOTS = MAX_PLAYERS
PLANES = (("hand", 1), ("table", 1), ("take", 1), ("discard", 1), ("known", SLOTS))
NUM_PLANES = sum(count for _, count in PLANES)
_FIELDS = (
    ("hand_size", (SLOTS,)),
    ("penalty", (SLOTS,)),
    ("table_owner", (SLOTS,)),
    ("phase", (3,)),
    ("passes", (1,)),
    ("players", (MAX_PLAYERS - MIN_PLAYERS + 1,)),
    ("threshold", (1,)),
    ("colours", (NUM_COLOURS,)),
)
SCALE = {"hand_size": 9.0, "threshold": 100.0}
"""Divisors of the count fields; ``penalty`` is divided by the threshold, ``passes`` by
``players - 1``."""


def penalty_cap(threshold: int) -> int:
    """The largest total the ``penalty`` field shows: ``threshold + 8``. A game's totals stay
    below the threshold until its last hand, which adds at most 9 (R12, R13), so no game goes
    past this; only a built one-hand position (``episode="hand"`` allows any totals) can, and
    it is shown as this cap. The batched kernels cap identically."""
    return threshold + MAX_HAND - 1


def _build_layout() -> dict[str, tuple[slice, tuple[int, ...]]]:
    layout, start = {}, 0
    shapes = [
        (name, (NUM_COLOURS, NUM_VALUES) if count == 1 else (count, NUM_COLOURS, NUM_VALUES))
        for name, count in PLANES
    ] + list(_FIELDS)
    for name, shape in shapes:
        size = int(np.prod(shape))
        layout[name] = (slice(start, start + size), shape)
        start += size
    return layout


LAYOUT = _build_layout()
OBS_SIZE = max(s.stop for s, _ in LAYOUT.values())
GOAT_PLACES = ("hand", "table", "take", "discard", *(f"known_{k}" for k in range(SLOTS)), "unseen")
"""The entries of a Goat game's ``goat`` field, in order."""
GOAT_FIELD_SIZE = len(GOAT_PLACES)
GOAT_FIELD = slice(OBS_SIZE, OBS_SIZE + GOAT_FIELD_SIZE)
"""Where the ``goat`` field lies in a Goat game's observation."""


def observation_size(config: Config) -> int:
    """Entries of an observation under ``config``: :data:`OBS_SIZE`, plus the Goat's field."""
    return OBS_SIZE + (GOAT_FIELD_SIZE if config.goat else 0)


PLANES_SIZE = NUM_PLANES * NUM_CARDS


def high(config: Config) -> np.ndarray:
    """Every entry's true maximum under ``config`` (``float32[OBS_SIZE]``, read-only): 1 for the
    0/1 and count fields, ``penalty_cap(threshold) / threshold`` for ``penalty`` and
    ``threshold / 100`` for ``threshold`` (that field is constant). The minimum is 0 for all."""
    out = np.ones(observation_size(config), dtype=np.float32)
    out[LAYOUT["penalty"][0]] = penalty_cap(config.threshold) / config.threshold
    out[LAYOUT["threshold"][0]] = config.threshold / SCALE["threshold"]
    out.flags.writeable = False
    return out


def box(config: Config) -> spaces.Box:
    """The observation's space in both envs: a plain ``Box(0, high(config), (OBS_SIZE,),
    float32)`` that prints its bounds by field, ``Box(0.0, 1.0 but penalty 1.53 and threshold
    0.15, (574,), float32)``, rather than as all ``OBS_SIZE`` of them."""
    top = high(config)
    space = spaces.Box(0.0, top, top.shape, np.float32)
    other = []
    for name, (s, _) in LAYOUT.items():
        low, most = float(top[s].min()), float(top[s].max())
        if (low, most) != (1.0, 1.0):
            other.append(f"{name} {most:.3g}" if low == most else f"{name} {low:.3g}-{most:.3g}")
    space.high_repr = f"1.0 but {' and '.join(other)}" if other else "1.0"
    return space


def views(obs: np.ndarray) -> dict[str, np.ndarray]:
    """Named, reshaped views (no copies) of an observation or a batch ``(..., OBS_SIZE)`` (or
    of a Goat game's, ``goat`` included)."""
    goat = OBS_SIZE + GOAT_FIELD_SIZE
    if obs.shape[-1] not in (OBS_SIZE, goat):
        raise ValueError(
            f"an observation has {OBS_SIZE} entries ({goat} with the Goat), got shape {obs.shape}"
        )
    lead = obs.shape[:-1]
    named = {name: obs[..., s].reshape(lead + shape) for name, (s, shape) in LAYOUT.items()}
    if obs.shape[-1] == goat:
        named["goat"] = obs[..., GOAT_FIELD]
    return named


def players_of(named: dict[str, np.ndarray]) -> int | np.ndarray:
    """The number of players (2-6) that :func:`views` of one observation shows, or an array of
    them for a batch's (the inverse of the one-hot ``players``)."""
    found = np.argmax(named["players"], axis=-1) + MIN_PLAYERS
    return int(found) if np.ndim(found) == 0 else found


def hand_sizes(named: dict[str, np.ndarray]) -> np.ndarray:
    """The cards each slot holds, as :func:`views` of one observation or a batch shows them
    (int64, ``(..., 6)``; the inverse of the scaled ``hand_size``)."""
    return np.rint(named["hand_size"] * SCALE["hand_size"]).astype(np.int64)


def threshold_of(obs: np.ndarray) -> int:
    """The penalty threshold (R14) one observation shows (the inverse of its encoding)."""
    return int(round(float(views(obs)["threshold"][0]) * SCALE["threshold"]))


def card_sets(obs: np.ndarray) -> list[int]:
    """The card-set ints of the 6x9 planes of one observation, in layout order: ``hand``,
    ``table``, ``take``, ``discard``, then ``known[0..5]`` (the inverse of the encoding)."""
    planes = obs[:PLANES_SIZE].reshape(NUM_PLANES, NUM_CARDS) > 0.5
    packed = np.zeros((NUM_PLANES, 8), dtype=np.uint8)
    packed[:, :7] = np.packbits(planes, axis=1, bitorder="little")
    return packed.view("<u8").ravel().tolist()


_DYNAMIC_SIZE = LAYOUT["passes"][0].stop - PLANES_SIZE
STATIC_TAILS_MAX = 64
"""How many configs' static tails are kept; the oldest entry goes first."""
_static_tails: dict[int, tuple[Config, np.ndarray]] = {}
_last_tail: tuple[Config | None, np.ndarray] = (None, np.zeros(0, dtype=np.float32))


def _static_tail(config: Config) -> np.ndarray:
    """The fields fixed by the config (players, threshold, colours), encoded once per config."""
    # The previous call's config is recognised by identity (observations come in runs with one
    # config object); other configs are looked up by id, the config kept alive in the value so
    # that its id is not reused while the entry lives. Hashing the dataclass by value would
    # cost several times more. The cache keeps at most STATIC_TAILS_MAX entries (the oldest is
    # dropped), however many Config objects a long run creates.
    global _last_tail
    last = _last_tail
    if last[0] is config:
        return last[1]
    cached = _static_tails.get(id(config))
    if cached is not None and cached[0] is config:
        tail = cached[1]
    else:
        players = [0.0] * (MAX_PLAYERS - MIN_PLAYERS + 1)
        players[config.players - MIN_PLAYERS] = 1.0
        colours = [1.0 if c < config.colours else 0.0 for c in range(NUM_COLOURS)]
        tail = np.array(players + [config.threshold / 100.0] + colours, dtype=np.float32)
        tail.flags.writeable = False
        while len(_static_tails) >= STATIC_TAILS_MAX:
            _static_tails.pop(next(iter(_static_tails)), None)
        _static_tails[id(config)] = (config, tail)
    _last_tail = (config, tail)
    return tail


def observe(game: Game, seat: int, out: np.ndarray | None = None) -> np.ndarray:
    """Encode what ``seat`` sees of ``game`` (into ``out`` when given)."""
    config = game.config
    n = config.players
    obs = np.empty(observation_size(config), dtype=np.float32) if out is None else out
    order = [(seat + k) % n for k in range(n)]
    table = PLAY_BITS[game.table] if game.table >= 0 else 0
    known = game.known
    sets = [game.hands[seat], table, game.take_from, game.discard]
    sets += [known[s] for s in order]
    sets += _NO_SETS[n]
    raw = np.array(sets, dtype="<u8").view(np.uint8).reshape(NUM_PLANES, 8)
    bits = np.unpackbits(raw, axis=1, bitorder="little")
    obs[:PLANES_SIZE].reshape(NUM_PLANES, NUM_CARDS)[:] = bits[:, :NUM_CARDS]

    empty = _EMPTY[n]
    hands, totals = game.hands, game.totals
    threshold = config.threshold
    cap = penalty_cap(threshold)
    phase = _PHASE_ONE_HOT[game.phase]
    owner = game.owner if game.phase != LEAD else -1
    obs[PLANES_SIZE : PLANES_SIZE + _DYNAMIC_SIZE] = (
        [hands[s].bit_count() / 9.0 for s in order]
        + empty
        + [min(totals[s], cap) / threshold for s in order]
        + empty
        + [1.0 if s == owner else 0.0 for s in order]
        + empty
        + phase
        + [game.passes / (n - 1)]
    )
    obs[PLANES_SIZE + _DYNAMIC_SIZE : OBS_SIZE] = _static_tail(config)
    if config.goat:
        obs[GOAT_FIELD] = _goat_place(sets[: 4 + n])
    return obs


def _goat_place(sets: list[int]) -> list[float]:
    """The ``goat`` field from the observer's hand, the table, the take, the discard and the
    slots' known cards (each that holds the Goat: the observer's hand and its known cards both
    when it took the Goat), else unseen."""
    where = [1.0 if bits & GOAT_BIT else 0.0 for bits in sets]
    where += [0.0] * (GOAT_FIELD_SIZE - 1 - len(where))
    return where + [0.0 if any(where) else 1.0]


_NO_SETS = {n: [0] * (SLOTS - n) for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)}
_EMPTY = {n: [0.0] * (SLOTS - n) for n in range(MIN_PLAYERS, MAX_PLAYERS + 1)}
_PHASE_ONE_HOT = ([1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0])
