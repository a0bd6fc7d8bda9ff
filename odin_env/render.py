"""A readable text picture of what one seat sees (the env's ``ansi`` render)."""

from __future__ import annotations

from odin_env.cards import names
from odin_env.rules import OVER, PHASE_NAMES, PLAY_BITS, PLAY_NUMBER, Game

NO_RENDER_MODE = (
    'render() needs a render mode: create the env with render_mode="ansi" (returns the text) or '
    'render_mode="human" (prints it)'
)
"""What both environments' ``render()`` warns when they were made without a render mode."""


def describe(game: Game, seat: int) -> str:
    """The observer's hand, the table, every seat's hand size and total, and whose turn it is.

    Shows only what ``seat`` could see at a real table."""
    n = game.config.players
    lines = [f"hand {game.hand_number} | threshold {game.config.threshold}"]
    if game.phase == OVER:
        winners = ", ".join(f"player_{s}" for s in game.winners)
        lines.append(f"over: won by {winners}")
    else:
        lines.append(f"player_{game.current} to {PHASE_NAMES[game.phase]}")
    if game.table >= 0 and game.phase != OVER:
        number = PLAY_NUMBER[game.table]
        lines.append(f"table: {names(PLAY_BITS[game.table])} ({number}) by player_{game.owner}")
    if game.take_from:
        lines.append(f"take one of: {names(game.take_from)}")
    lines.append(f"discard: {names(game.discard)}")
    for s in range(n):
        me = "*" if s == seat else " "
        known = f" known {names(game.known[s])}" if game.known[s] and s != seat else ""
        lines.append(
            f"{me}player_{s}: {game.hands[s].bit_count()} cards, total {game.totals[s]}{known}"
        )
    lines.append(f"your hand: {names(game.hands[seat])}")
    return "\n".join(lines)
