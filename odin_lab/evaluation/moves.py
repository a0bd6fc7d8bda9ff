"""Moves as a person types them: card names (``R3 Y3``; ``Goat`` for the Goat, RULES G1-G5), a
number from the menu of legal moves, ``pass`` or ``take Y5``; and the menu itself.

:func:`parse_move` returns a legal action of the decision at hand or raises :class:`MoveError`
with the reason in the game's own words (docs/rules.md: lead, follow, take, beat). It only
reads the game: a refused move changes nothing.
"""

from __future__ import annotations

from odin_env.cards import (
    COLOUR_LETTERS,
    COLOUR_NAMES,
    GOAT,
    GOAT_BIT,
    MAX_HAND,
    bits_of,
    card_name,
    cards_of,
    parse_card,
)
from odin_env.combos import combo_index_of_bits, goat_combo_index_of_bits, is_combo
from odin_env.rules import LEAD, PASS, TAKE, TAKING, Game
from odin_env.spec import (
    GOAT_PLAY,
    GOAT_TAKE,
    PLAY_BITS,
    PLAY_NUMBER,
    PLAY_SIZE,
    is_take,
    taken_card,
)

HOW = (
    "type a menu number, cards like R3 Y3 (colour letter, then value), pass, take Y5, hint, help "
    "or quit"
)
"""The one line that says what may be typed."""


class MoveError(ValueError):
    """A typed move that is unreadable or illegal; the message says why."""


def menu(game: Game) -> list[int]:
    """The legal actions of the decision at hand in the order they are listed: pass first,
    then the plays by size and number (the combos' canonical order, the Goat's among them), or
    the takes by card."""
    # With the Goat, its plays (after the takes in action order, G5) go among the others.
    legal = sorted(game.legal, key=lambda a: (PLAY_SIZE[a], PLAY_NUMBER[a], a))
    return [PASS, *(a for a in legal if a != PASS)] if PASS in legal else legal


def cards_text(bits: int) -> str:
    """Card names by colour, then value, as the web app and ``render()`` write them: ``B5 B7``
    (the combo's number, 75, is still read high value first: R5)."""
    return " ".join(card_name(c) for c in cards_of(bits))


def move_name(action: int) -> str:
    """What to type for ``action``: ``pass``, ``take Y5``, ``B5 B7``."""
    if action == PASS:
        return "pass"
    if is_take(action):
        return f"take {cards_text(1 << taken_card(action))}"
    return cards_text(PLAY_BITS[action])


def _take_of(card: int) -> int:
    return GOAT_TAKE if card == GOAT else TAKE + card


def _combo(index: int) -> str:
    text = cards_text(PLAY_BITS[index])
    return f"{text} ({PLAY_NUMBER[index]})" if PLAY_SIZE[index] > 1 else text


def parse_move(text: str, game: Game, shown: list[int] | None = None) -> int:
    """The legal action ``text`` names in ``game`` (the decision of ``game.current``);
    ``shown``: the menu the person saw (default :func:`menu`). :class:`MoveError` says why a
    move is refused: unreadable, or illegal and which rule it breaks."""
    words = text.replace(",", " ").split()
    shown = menu(game) if shown is None else shown
    if not words:
        raise MoveError(f"no move typed: {HOW}")
    head = words[0].lower()
    if len(words) == 1 and head.isdigit():
        k = int(head)
        if not 1 <= k <= len(shown):
            raise MoveError(f"no move {k} in the menu: choose 1-{len(shown)}")
        return shown[k - 1]
    if head == "pass" and len(words) == 1:
        return _check(PASS, game)
    if head == "take":
        if len(words) != 2:
            raise MoveError("take one card: type take and its name, e.g. take Y5")
        return _check(_take_of(_card(words[1])), game)
    cards = [_card(w) for w in words]
    seen = set()
    for card, word in zip(cards, words):
        if card in seen:
            raise MoveError(f"{word.upper()} is named twice")
        seen.add(card)
    if game.phase == TAKING and len(cards) == 1:
        return _check(_take_of(cards[0]), game)  # a lone card while taking: the card to take
    bits = bits_of(cards)
    missing = bits & ~game.hands[game.current]
    if missing and game.phase != TAKING:
        raise MoveError(f"you do not hold {cards_text(missing)}")
    if not is_combo(bits):
        typed = " ".join(card_name(c) for c in cards)
        goat = "; the Goat joins cards of one colour only" if bits & GOAT_BIT else ""
        raise MoveError(
            f"{typed} is not a combo: its cards must share one colour or one value{goat}"
        )
    if bits & GOAT_BIT:
        return _check(GOAT_PLAY + goat_combo_index_of_bits(bits), game)
    return _check(combo_index_of_bits(bits), game)


def _card(word: str) -> int:
    try:
        return parse_card(word)
    except ValueError:
        letters = ", ".join(f"{a} {name}" for a, name in zip(COLOUR_LETTERS, COLOUR_NAMES))
        raise MoveError(
            f"cannot read {word!r}: a card is a colour letter ({letters}) and a value 1-9 (or "
            f"Goat, with the Goat); {HOW}"
        ) from None


def _check(action: int, game: Game) -> int:
    """``action`` if it is legal, else :class:`MoveError` with the rule it breaks."""
    if action in game.legal:
        return action
    if game.phase == TAKING:
        offer = cards_text(game.take_from)
        if is_take(action):
            raise MoveError(f"you can take only one of {offer}")
        raise MoveError(f"first take one card of {offer}, the combo you beat (take CARD)")
    if action == PASS:
        raise MoveError("you lead this trick, and a leader cannot pass: play one card")
    if is_take(action):
        raise MoveError("there is nothing to take: a card is taken right after beating a combo")
    if game.phase == LEAD:
        raise MoveError(
            "a trick is led with one card, or with your whole hand when it is one combo"
        )
    table = game.table
    size, number = PLAY_SIZE[table], PLAY_NUMBER[table]
    more = f", or {size + 1} cards" if size < MAX_HAND else ""
    raise MoveError(
        f"{_combo(action)} does not beat {_combo(table)}: play {size} card"
        f"{'s' * (size > 1)} with a number above {number}{more}, or pass"
    )


__all__ = ["HOW", "MoveError", "menu", "move_name", "parse_move"]
