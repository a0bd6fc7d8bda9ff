"""Checking a built position (``Game.from_position``) field by field, before anything is built:
an inconsistent position raises ``ValueError`` whose message starts with the field's name and
states what is allowed."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from odin_env import combos
from odin_env.cards import (
    GOAT,
    GOAT_BIT,
    MAX_HAND,
    NUM_CARDS,
    NUM_VALUES,
    card_name,
    cards_of,
    names,
)
from odin_env.combos import goat_combo_index_of_bits
from odin_env.spec import FOLLOW, GOAT_PLAY, LEAD, PLAY_BITS, PLAY_NUMBER, PLAY_SIZE, TAKING, Config


@dataclass(frozen=True)
class _Position:
    """The checked, normalised fields of :meth:`Game.from_position` (card sets as ints)."""

    hands: list[int]
    current: int
    phase: int
    table: int
    owner: int | None
    take_from: int
    passes: int
    discard: int
    known: list[int]
    totals: list[int]
    hand_leader: int | None


def _is_int(value: object) -> bool:
    return isinstance(value, (int, np.integer)) and not isinstance(value, bool)


def _seat(field_name: str, value: object, n: int, what: str = "a seat") -> int:
    if not _is_int(value) or not 0 <= value < n:
        raise ValueError(f"{field_name}: must be {what} 0-{n - 1}; got {value!r}")
    return int(value)


def _sequence(field_name: str, value: object, n: int, of: str) -> list:
    try:
        items = list(value)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(f"{field_name}: must be a sequence of {n} {of}; got {value!r}") from None
    if len(items) != n:
        raise ValueError(f"{field_name}: must hold {n} {of} (one per seat); got {len(items)}")
    return items


def _card_set(
    field_name: str, cards: object, colours: int, where: str = "", goat: bool = False
) -> int:
    """The card-set int of ``cards``: distinct card ids of the deck in play (the Goat, id 54,
    with ``goat``), else ValueError."""
    top = colours * NUM_VALUES - 1
    ids = f"card ids must be integers 0-{top} ({colours} colours in play: id = colour*9 + value-1)"
    ids += f", or {GOAT} (the Goat)" if goat else ""
    where = f"{where}: " if where else ""
    try:
        items = list(cards)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(
            f"{field_name}: {where}must be a collection of card ids; {ids}; got {cards!r}"
        ) from None
    bits = 0
    for c in items:
        if not _is_int(c) or not 0 <= c <= NUM_CARDS:
            raise ValueError(f"{field_name}: {where}{ids}; got {c!r}")
        c = int(c)
        if c > top and not (goat and c == GOAT):
            raise ValueError(
                f"{field_name}: {where}{ids}; got card {card_name(c)} (id {c}), not in the deck "
                f"in play (colour {c // NUM_VALUES} is out)"
            )
        if bits >> c & 1:
            raise ValueError(
                f"{field_name}: {where}each card must be listed once; got card {card_name(c)} "
                f"(id {c}) twice"
            )
        bits |= 1 << c
    return bits


def _combo(field_name: str, cards: object, colours: int, goat: bool) -> int:
    """The play (action) of the combo ``cards``, else ValueError."""
    bits = _card_set(field_name, cards, colours, goat=goat)
    if not combos.is_combo(bits):
        raise ValueError(
            f"{field_name}: must be a combo, 1+ cards sharing one colour or one value (R4; the "
            f"Goat joins one colour, G2); got {names(bits) if bits else 'no cards'}"
        )
    if bits & GOAT_BIT:
        return GOAT_PLAY + goat_combo_index_of_bits(bits)
    return combos.combo_index_of_bits(bits)


def _beats(new: int, old: int) -> bool:
    """R7 on two plays (actions, with the Goat or not)."""
    new_size, old_size = PLAY_SIZE[new], PLAY_SIZE[old]
    return new_size == old_size + 1 or (
        new_size == old_size and PLAY_NUMBER[new] > PLAY_NUMBER[old]
    )


def check_position(
    config: object,
    hands: object,
    current: object,
    table: object,
    owner: object,
    take_from: object,
    passes: object,
    discard: object,
    known: object,
    totals: object,
    hand_leader: object,
) -> _Position:
    """Check every field of a built position (see :meth:`Game.from_position`); nothing is built
    here, so a refused position leaves nothing half-made."""
    if not isinstance(config, Config):
        raise ValueError(f"config: must be an odin_env.rules.Config; got {config!r}")
    n, colours, goat = config.players, config.colours, config.goat
    current = _seat("current", current, n, "the seat to act,")

    # hands: n disjoint sets of 1-9 cards (R12; an empty hand would have ended the hand, R13)
    hand_items = _sequence("hands", hands, n, "hands of card ids")
    hand_bits = []
    for s, h in enumerate(hand_items):
        bits = _card_set("hands", h, colours, f"seat {s}'s hand", goat)
        size = bits.bit_count()
        if not 1 <= size <= MAX_HAND:
            raise ValueError(
                f"hands: every hand must hold 1-{MAX_HAND} cards while a hand is in play (R12, "
                f"R13); got {size} for seat {s}{' (to act)' if s == current else ''}"
            )
        hand_bits.append(bits)

    # table, take_from: the phase follows from which are given
    table_index = -1 if table is None else _combo("table", table, colours, goat)
    take_bits = 0
    if take_from is not None:
        taken = _combo("take_from", take_from, colours, goat)
        take_bits = PLAY_BITS[taken]
        if table is None:
            raise ValueError(
                "take_from: must come with the table combo just played over it (R10); "
                "got take_from without a table"
            )
        if not _beats(table_index, taken):
            raise ValueError(
                f"take_from: must be a combo the table combo beats (R7: the same number of "
                f"cards and a lower number, or one card fewer); got {names(take_bits)} under "
                f"the table's {names(PLAY_BITS[table_index])}"
            )
        if hand_bits[current].bit_count() >= MAX_HAND:
            raise ValueError(
                f"hands: the seat taking must hold at most {MAX_HAND - 1} cards before its take "
                f"(R12); got {hand_bits[current].bit_count()} for seat {current}"
            )
    phase = TAKING if take_from is not None else FOLLOW if table is not None else LEAD

    # owner: who played the table combo
    if phase == FOLLOW:
        if owner is None:
            raise ValueError(
                "owner: a position with a table combo needs the seat that played it, which "
                f"must be a seat 0-{n - 1} other than current ({current}); got None"
            )
        owner = _seat("owner", owner, n, "the seat that played the table combo,")
        if owner == current:
            raise ValueError(
                f"owner: must be a seat 0-{n - 1} other than current ({current}): the seat "
                f"that played the table combo is not asked to follow it (R11); got {owner}"
            )
    elif phase == TAKING:
        if owner is None:
            owner = current
        elif not _is_int(owner) or owner != current:
            raise ValueError(
                f"owner: while taking it must be current ({current}), who has just played the "
                f"table combo (or None); got {owner!r}"
            )
        owner = int(owner)
    elif owner is not None:
        raise ValueError(f"owner: must be None when leading (no combo on the table); got {owner!r}")

    # passes: R9, R11; the trick ends at players - 1 passes in a row
    if phase == FOLLOW:
        if not _is_int(passes) or not 0 <= passes <= n - 2:
            raise ValueError(
                f"passes: must be an integer 0-{n - 2} (players - 2) while following; "
                f"got {passes!r}"
            )
    elif not _is_int(passes) or passes != 0:
        doing = "leading" if phase == LEAD else "taking"
        raise ValueError(
            f"passes: must be 0 when {doing} (passes count only while a combo is followed); "
            f"got {passes!r}"
        )
    passes = int(passes)  # type: ignore[call-overload]

    discard_bits = _card_set("discard", discard, colours, goat=goat)

    # known: per seat, cards taken this hand and still held, so a part of that seat's hand
    if known is None:
        known_bits = [0] * n
    else:
        known_bits = []
        for s, k in enumerate(_sequence("known", known, n, "sets of card ids")):
            bits = _card_set("known", k, colours, f"seat {s}'s cards", goat)
            if bits & ~hand_bits[s]:
                raise ValueError(
                    f"known: seat {s}'s known cards must be a subset of its hand "
                    f"({names(hand_bits[s])}); got {names(bits & ~hand_bits[s])} outside it"
                )
            known_bits.append(bits)

    # totals: R14
    if totals is None:
        total_list = [0] * n
    else:
        total_list = _sequence("totals", totals, n, "penalty totals")
        below = config.threshold if config.episode == "game" else None
        allowed = f"integers 0-{below - 1} (below the threshold)" if below else "integers >= 0"
        for s, t in enumerate(total_list):
            if not _is_int(t) or t < 0 or (below is not None and t >= below):
                raise ValueError(
                    f"totals: penalty totals must be {allowed}; got {t!r} for seat {s}"
                )
        total_list = [int(t) for t in total_list]

    if hand_leader is not None:
        hand_leader = _seat("hand_leader", hand_leader, n, "the seat that led the hand,")

    # every card in one place at most (the rest are set aside)
    places = [(f"hands[{s}]", "hands", h) for s, h in enumerate(hand_bits)]
    if table_index >= 0:
        places.append(("table", "table", PLAY_BITS[table_index]))
    places += [("take_from", "take_from", take_bits), ("discard", "discard", discard_bits)]
    seen: dict[int, str] = {}
    for place, field_name, bits in places:
        for c in cards_of(bits):
            if c in seen:
                raise ValueError(
                    f"{field_name}: every card must be in one place at most; got card "
                    f"{card_name(c)} (id {c}) in {seen[c]} and {place}"
                )
            seen[c] = place

    return _Position(
        hand_bits,
        current,
        phase,
        table_index,
        owner,
        take_bits,
        passes,
        discard_bits,
        known_bits,
        total_list,
        hand_leader,
    )


__all__ = ["check_position"]
