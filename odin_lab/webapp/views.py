"""What the page is shown of a game: JSON-ready views built from what one seat may see.

Cards travel as their names (``"R3"``: colour letter, value), never as ids, everywhere in every
response; that single form lets a test scan a whole response for card names. A view built for a
seat holds that seat's hand and what is public at a real table: the combo on the table, the
beaten combo a player takes from, the discard pile, every seat's hand size and total, the cards
each seat is publicly known to hold (taken this hand and not yet played), each finished hand's
penalties. Other hands appear only in a view built with ``viewer=None`` (all hands open), which
the server builds for the replay of a recorded game and never during play.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from odin_env.cards import card_name, cards_of
from odin_env.rules import FOLLOW, LEAD, OVER, PASS, PHASE_NAMES, Game
from odin_env.spec import PLAY_BITS, PLAY_NUMBER, is_take, taken_card


def card_names(bits: int) -> list[str]:
    """The names of the cards in a card-set int, in id order (colour, then value)."""
    return [card_name(c) for c in cards_of(bits)]


def action_json(action: int) -> dict:
    """One action as the page reads it: ``kind`` (play, pass, take) and the cards it moves."""
    if action == PASS:
        return {"action": action, "kind": "pass", "cards": []}
    if is_take(action):
        return {"action": action, "kind": "take", "cards": [card_name(taken_card(action))]}
    return {"action": action, "kind": "play", "cards": card_names(PLAY_BITS[action])}


def seat_view(game: Game, names: Sequence[str], viewer: int | None) -> dict:
    """``game`` as seat ``viewer`` sees it (``None``: every hand open).

    ``names[s]`` labels seat ``s``. Keys: ``players``, ``threshold``, ``hand_number``, ``phase``
    (lead, follow, take, over), ``current`` (the seat to act), ``viewer``, ``table`` (``cards``,
    ``number``, ``owner``; ``None`` when a trick is to be led), ``goat`` (a game with the Goat,
    RULES G1-G5: its card is named ``"Goat"``), ``take_from``, ``discard``,
    ``seats`` (per seat: ``name``, ``hand_size``, ``total``, ``known``, and ``hand``: the cards,
    or ``None`` when hidden from the viewer), ``history`` (each finished hand's penalties) and
    ``winners`` (empty until the game is over)."""
    config = game.config
    table = None
    if game.table >= 0 and game.phase != OVER:
        table = {
            "cards": card_names(PLAY_BITS[game.table]),
            "number": PLAY_NUMBER[game.table],
            "owner": game.owner,
        }
    seats = []
    for s in range(config.players):
        shown = viewer is None or s == viewer
        seats.append(
            {
                "seat": s,
                "name": names[s],
                "hand_size": game.hands[s].bit_count(),
                "total": game.totals[s],
                "known": card_names(game.known[s]),
                "hand": card_names(game.hands[s]) if shown else None,
            }
        )
    return {
        "players": config.players,
        "threshold": config.threshold,
        "colours": config.colours,
        "goat": config.goat,
        "hand_number": game.hand_number,
        "phase": PHASE_NAMES[game.phase],
        "current": game.current,
        "viewer": viewer,
        "table": table,
        "take_from": card_names(game.take_from),
        "discard": card_names(game.discard),
        "seats": seats,
        "history": [list(h) for h in game.history],
        "winners": list(game.winners),
    }


@dataclass(frozen=True)
class Moment:
    """The public facts of a decision's position that :func:`describe` needs, taken before the
    decision is applied (``apply`` changes the game in place)."""

    seat: int
    phase: int
    table: int
    owner: int
    passes: int
    hands_done: int

    @classmethod
    def of(cls, game: Game) -> Moment:
        return cls(game.current, game.phase, game.table, game.owner, game.passes, len(game.history))


YOU = "You"
"""The name of the person's seat during play; sentences about it take the verb's plain form."""


def _says(who: str, verb: str) -> str:
    """``who`` and ``verb`` in agreement: "You pass", "planner (seat 2) passes"."""
    if who == YOU:
        return f"{who} {verb}"
    return f"{who} {verb}es" if verb.endswith("s") else f"{who} {verb}s"


def describe(
    before: Moment, action: int, after: Game, names: Sequence[str], forced: bool = False
) -> dict:
    """The public account of one decision taken at ``before`` that led to ``after``;
    ``forced``: it was the only legal action (the sentence says so).

    Returns ``seat``, ``action``, ``kind``, ``cards``, ``forced``, ``text`` (one readable
    sentence), ``trick_won_by``
    (the seat that won the trick this pass ended, else ``None``), ``hand_end`` (``None``, or the
    hand's number, penalties and totals and the seat that went out) and ``game_over``."""
    seat = before.seat
    who = names[seat]
    moved = action_json(action)
    kind, cards = moved["kind"], moved["cards"]
    if kind == "pass":
        text = _says(who, "pass")
    elif kind == "take":
        text = f"{_says(who, 'take')} {cards[0]}"
    else:
        number = PLAY_NUMBER[action]
        verb = "lead" if before.phase == LEAD else "play"
        text = f"{_says(who, verb)} {' '.join(cards)} ({number})"
        if before.phase == FOLLOW and before.table >= 0:
            text += f" over {' '.join(card_names(PLAY_BITS[before.table]))}"
    if forced:
        text += " (forced)"
    trick_won_by = None
    if kind == "pass" and before.passes == len(after.totals) - 2:
        trick_won_by = before.owner
        text += f"; {_says(names[before.owner], 'win')} the trick"
    hand_end = None
    if len(after.history) > before.hands_done:
        penalties = list(after.history[-1])
        hand_end = {
            "hand": len(after.history),
            "out": seat,
            "penalties": penalties,
            "totals": list(after.totals),
        }
        text += f" and {'go' if who == YOU else 'goes'} out: hand {hand_end['hand']} ends"
    return {
        "seat": seat,
        "action": action,
        "kind": kind,
        "cards": cards,
        "forced": forced,
        "text": text,
        "trick_won_by": trick_won_by,
        "hand_end": hand_end,
        "game_over": after.phase == OVER,
    }


def legal_json(game: Game) -> list[dict]:
    """The legal actions of the decision at hand, as :func:`action_json` gives them."""
    return [action_json(a) for a in game.legal]


__all__ = ["YOU", "Moment", "action_json", "card_names", "describe", "legal_json", "seat_view"]
