"""Games told as a person would tell them: who led what, who played, passed and took, who won
each trick, each hand's penalties, the running totals and the winners.

A :class:`Narrator` turns one decision at a time into lines of text (:meth:`Narrator.tell`,
given the state before and after it), so that the same words serve a replay
(:func:`tell_record`, from :func:`odin_lab.evaluation.records.iter_steps`) and a game being played
(``odin_lab.evaluation.play``). Cards are written by colour letter and value (``R3``, as
:mod:`odin_env.cards` names them), ANSI-coloured when asked (:func:`use_colour` says when).

Two views: all hands open (``seat=None``), or one seat's (``seat=S``), which shows only what
that seat could know at a real table: its own cards, the table, the discards, every hand's
size and the cards each seat took in the open and still holds (as
:func:`odin_env.render.describe`). In that view a pass is never marked forced unless it was
the viewer's own: whether another seat could have played is hidden.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import TextIO

from odin_env.cards import GOAT, NUM_VALUES, card_name, cards_of
from odin_env.rules import LEAD, Config, Game
from odin_env.spec import PASS, PLAY_BITS, PLAY_NUMBER, is_take, taken_card
from odin_lab.evaluation.names import short_names
from odin_lab.evaluation.records import RecordsFile, Step, check_game_index, iter_steps

COLOUR_CODES = ("31", "33", "32", "34", "35", "38;5;208")
"""ANSI foreground codes of the colours red, yellow, green, blue, purple, orange."""
BOLD, RESET = "\x1b[1m", "\x1b[0m"


def use_colour(stream: TextIO, no_colour: bool = False) -> bool:
    """Colour is used when ``stream`` is a terminal, ``NO_COLOR`` is unset or empty
    (https://no-color.org) and the user did not ask for none."""
    if no_colour or os.environ.get("NO_COLOR"):
        return False
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


class Style:
    """How cards and headings are written: plain, or with ANSI colours."""

    def __init__(self, colour: bool):
        self.colour = colour

    def card(self, card: int) -> str:
        name = card_name(card)
        if not self.colour or card == GOAT:  # the Goat has no colour (G1)
            return name
        return f"\x1b[{COLOUR_CODES[card // NUM_VALUES]}m{name}{RESET}"

    def hand(self, bits: int) -> str:
        """A hand's cards by colour, then value: ``R1 R5 Y5 B9``; ``-`` when empty."""
        return " ".join(self.card(c) for c in cards_of(bits)) or "-"

    def combo(self, index: int) -> str:
        """A combo's cards by colour, then value (as the web app's log and ``render()`` write
        them), with its number (R5) when it has several cards: ``B5 B7 (75)``, ``R3``."""
        cards = cards_of(PLAY_BITS[index])
        text = " ".join(self.card(c) for c in cards)
        return f"{text} ({PLAY_NUMBER[index]})" if len(cards) > 1 else text

    def bold(self, text: str) -> str:
        return f"{BOLD}{text}{RESET}" if self.colour else text


def seat_labels(specs: Sequence[str], agents: Sequence[int], you: int | None = None) -> list[str]:
    """``seat 2 (greedy)`` for each seat (``agents[s]`` indexes ``specs``; a file's agent by its
    short name, :func:`odin_lab.evaluation.names.short_names`); the seat ``you``, when given, is
    ``seat 2 (you)``."""
    names = short_names(specs)
    return [f"seat {s} ({'you' if s == you else names[a]})" for s, a in enumerate(agents)]


class Narrator:
    """Tells one game decision by decision; see the module docstring.

    ``labels``: each seat's name in the text; ``seat``: the viewer (``None``: all hands
    open); ``style``: plain or coloured; ``trick_hands``: list the hands (as the view allows)
    at the start of every trick, not only of every hand. Keeps the trick count of the hand in
    progress."""

    def __init__(
        self,
        config: Config,
        labels: Sequence[str],
        seat: int | None = None,
        style: Style | None = None,
        trick_hands: bool = True,
    ):
        if seat is not None and not 0 <= seat < config.players:
            raise ValueError(f"seat must be 0-{config.players - 1}; got {seat}")
        self.config, self.labels, self.seat = config, list(labels), seat
        self.style = style or Style(False)
        self.width = max(len(label) for label in self.labels)
        self.trick = 0
        self.trick_hands = trick_hands

    def _who(self, seat: int) -> str:
        return self.labels[seat].ljust(self.width)

    # -- what a seat can see ---------------------------------------------------------------

    def hands(self, game: Game) -> list[str]:
        """Each seat's cards (open view), or the viewer's cards and, for the others, their
        hand size and the cards known to be in their hand."""
        s = self.style
        lines = []
        for seat in range(self.config.players):
            hand, total = game.hands[seat], game.totals[seat]
            if self.seat is None or seat == self.seat:
                shown = s.hand(hand)
            else:
                known = game.known[seat]
                size = hand.bit_count()
                shown = f"{size} card{'s' * (size != 1)}"
                shown += f", known {s.hand(known)}" if known else ""
            lines.append(f"    {self._who(seat)}  {shown}  [total {total}]")
        return lines

    # -- the story -------------------------------------------------------------------------

    def opening(self, game: Game) -> list[str]:
        """The start of a hand: its number, the totals so far, who leads, the cards."""
        self.trick = 0
        totals = " ".join(str(t) for t in game.totals)
        head = self.style.bold(f"== Hand {game.hand_number} ==")
        return [head + f"  totals {totals}", *self._trick_start(game)]

    def _trick_start(self, game: Game) -> list[str]:
        self.trick += 1
        lines = [f"  Trick {self.trick}: {self.labels[game.current]} leads"]
        return lines + self.hands(game) if self.trick_hands or self.trick == 1 else lines

    def tell(self, before: Game, action: int, forced: bool, after: Game) -> list[str]:
        """The lines of one decision: ``before`` is the state it was taken in, ``after`` the
        state it left (both unchanged)."""
        s, seat = self.style, before.current
        who = self._who(seat)
        if before.phase == LEAD:
            line = f"  {who}  leads {s.combo(action)}"
        elif action == PASS:
            line = f"  {who}  passes"
            if forced and (self.seat is None or self.seat == seat):
                line += " (nothing beats it)"
        elif is_take(action):
            card = taken_card(action)
            rest = before.take_from & ~(1 << card)
            line = f"  {' ' * self.width}  takes {s.card(card)}"
            line += f", discards {s.hand(rest)}" if rest else ""
        else:
            line = f"  {who}  plays {s.combo(action)}"
        if PLAY_BITS[action] and before.hands[seat] == PLAY_BITS[action]:
            line += " and goes out"
        lines = [line]
        if len(after.history) > len(before.history):
            lines += self._hand_end(after)
        elif action == PASS and after.phase == LEAD:
            lines.append(
                f"  -> {self.labels[after.current]} wins the trick with {s.combo(before.table)}"
            )
            lines += self._trick_start(after)
        return lines

    def _hand_end(self, after: Game) -> list[str]:
        penalties = after.history[-1]
        out = penalties.index(0)
        parts = ", ".join(f"{self.labels[s]} {p}" for s, p in enumerate(penalties) if s != out)
        totals = " ".join(str(t) for t in after.totals)
        lines = [
            f"  Hand {len(after.history)} ends: {self.labels[out]} went out; cards left: {parts}",
            f"  totals {totals}",
        ]
        if not after.is_over:
            lines += ["", *self.opening(after)]
        return lines

    def ending(self, game: Game) -> list[str]:
        """The result (or, for an unfinished game, where it stopped)."""
        if not game.is_over:
            return [
                f"(unfinished: {self.labels[game.current]} was to play, hand {game.hand_number})"
            ]
        low = min(game.totals)
        names = " and ".join(self.labels[s] for s in game.winners)
        verb = "share the win" if len(game.winners) > 1 else "wins"
        hands = len(game.history)
        totals = ", ".join(f"{self.labels[s]} {t}" for s, t in enumerate(game.totals))
        return [
            "",
            self.style.bold(
                f"Game over after {hands} hand{'s' * (hands != 1)}: {names} {verb} with {low}."
            ),
            f"Totals: {totals}",
        ]


def tell_record(
    records: RecordsFile,
    index: int,
    seat: int | None = None,
    style: Style | None = None,
    source: str = "",
) -> Iterator[str]:
    """Game ``index`` of a loaded records file, told from the first deal to the result (from
    ``seat``'s view when given); ``source`` names the file in the heading. ``ValueError`` for
    a game index out of range or a record that does not replay (raised when the telling reaches
    the problem: collect the lines before printing them). The game is replayed a decision at a
    time, so its length bounds the text only (``limits.MAX_DECISIONS`` decisions at most)."""
    record = check_game_index(records, index)
    config = records.config
    steps = iter_steps(record, config)
    labels = seat_labels(records.specs, record.agents)
    where = f" of {source}" if source else ""
    seats = ", ".join(labels)
    view = "all hands open" if seat is None else f"as {labels[seat]} sees it"
    yield (style or Style(False)).bold(
        f"Game {index}{where}: deal {record.deal}, rotation {record.rotation}, seed {record.seed}"
    )
    yield (
        f"{config.players} players, threshold {config.threshold}, {config.colours} colours, "
        f"first player {config.first_player}; {view}"
    )
    yield f"Seats: {seats}"
    yield ""
    yield from tell_steps(steps, Narrator(config, labels, seat, style))


def tell_steps(steps: Iterable[Step], narrator: Narrator) -> Iterator[str]:
    """The whole story of a replayed game (``iter_steps``' or ``replay_steps``' output), read
    one step ahead: two steps are held at a time."""
    steps = iter(steps)
    step = next(steps)
    yield from narrator.opening(step.game)
    for following in steps:
        yield from narrator.tell(step.game, step.action, step.forced, following.game)
        step = following
    yield from narrator.ending(step.game)


__all__ = [
    "COLOUR_CODES", "Narrator", "Style", "seat_labels", "tell_record", "tell_steps", "use_colour",
]  # fmt: skip
