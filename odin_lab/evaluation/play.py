"""A person plays Odin against the lab's agents in the terminal (``play.py``).

:class:`Session` deals ``Game(config, seed)``, seats the person at ``seat`` and an agent
(:func:`agents.make`) in every other seat (a :class:`odin_lab.evaluation.table.Table`, the game
the web app plays too: the same seed and moves give the same game in both), and tells every
decision as it happens, from the person's view (:mod:`odin_lab.evaluation.narrate`: the others'
cards stay hidden). On the person's turn it shows their hand, the table, the discards, the
others' hand sizes, totals and the cards known to be in their hands, and a numbered menu of the
legal moves, then reads a move (:mod:`odin_lab.evaluation.moves`); a refused move prints the
reason and asks again, and changes nothing. ``hint`` (or ``hint MS``) prints the search's
evaluation of every legal move from the person's observation (:mod:`odin_lab.evaluation.coach`);
the steps where hints were asked are saved with the game (``"hints"``).

The game is saved as a records file (docs/records.md; the person's agent spec is ``"human"``)
that ``evaluate.py replay`` reads: at its end, and also when the session stops early (Ctrl-C,
end of input, ``quit``), then marked ``"unfinished": true``, with the moves played so far.
The saved record is rebuilt from the seed and the moves (:func:`session_record`), so a Ctrl-C
that lands in the middle of a move cannot save a broken game.
"""

from __future__ import annotations

import os
import select
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from odin_env.cards import COLOUR_LETTERS, COLOUR_NAMES
from odin_env.combos import combo_index_of_bits
from odin_env.rules import PHASE_NAMES, TAKING, Config, Game
from odin_lab.evaluation.coach import DEFAULT_MS, MAX_MS, MIN_MS, check_budget
from odin_lab.evaluation.moves import HOW, MoveError, menu, move_name, parse_move
from odin_lab.evaluation.narrate import Narrator, Style, seat_labels
from odin_lab.evaluation.records import copy_game, write_person_game
from odin_lab.evaluation.results import NotWrittenError, describe_error, held_interrupts
from odin_lab.evaluation.table import HUMAN, Table, rebuild

_LETTERS = ", ".join(f"{a} {name}" for a, name in zip(COLOUR_LETTERS, COLOUR_NAMES))
HELP = f"""How to play (docs/rules.md has the rules):
  A card is a colour letter and a value 1-9: {_LETTERS}.
  To lead a trick, play one card (R3), or your whole hand if it is one combo.
  To follow, play a combo that beats the table: as many cards with a higher number, or
  exactly one card more; the cards of a combo share one colour or one value. Or pass.
  After beating a combo, take one of its cards (take Y5).
  Moves: a menu number, card names (R3 Y3), pass, take Y5. Also: help, quit (saves the game),
  hint (the search's view of each of your moves: your chance to win after it and your expected
  penalty this hand; hint 3000 thinks for 3 seconds, 100-5000 ms; asked hints are saved)."""


READ_POLL_S = 0.2
"""How often :func:`read_line` looks for a Ctrl-C that came while it was not yet waiting."""


class LineReader:
    """``input()`` that a Ctrl-C always stops. ``input()`` writes the prompt, then blocks in
    ``read()``: a SIGINT that lands between the two (the prompt is out, the read has not begun)
    only sets Python's flag, and the read waits for a line that may never come. Here the wait is
    a ``select`` of at most :data:`READ_POLL_S`, after which Python runs the pending handler
    (``KeyboardInterrupt``). Reads ``fd`` (stdin) itself, so that a line pasted with others is
    kept for the next call; end of input raises ``EOFError`` as ``input()`` does."""

    def __init__(self, fd: int | None = None, out=None):
        self.fd = sys.stdin.fileno() if fd is None else fd
        self.out = sys.stdout if out is None else out
        self.pending = b""

    def __call__(self, prompt: str) -> str:
        self.out.write(prompt)
        self.out.flush()
        while b"\n" not in self.pending:
            ready, _, _ = select.select([self.fd], [], [], READ_POLL_S)
            if not ready:
                continue
            chunk = os.read(self.fd, 4096)
            if not chunk:  # end of input (Ctrl-D, or the end of a piped file)
                line, self.pending = self.pending, b""
                if line:
                    return line.decode("utf-8", "replace")
                raise EOFError
            self.pending += chunk
        line, _, self.pending = self.pending.partition(b"\n")
        return line.decode("utf-8", "replace").rstrip("\r")


class QuitRequested(Exception):  # noqa: N818 (a request, not an error)
    """The person typed ``quit``."""


def session_record(config: Config, seed: int, seat_specs: Sequence[str], actions: Sequence[int]):
    """The record of a session's game from its seed and moves: finished when they end the
    game, else with ``winners`` empty (unfinished). Returns ``(record, finished)``."""
    return rebuild(config, seed, actions)


def save(
    path: Path,
    config: Config,
    seed: int,
    specs: Sequence[str],
    actions: Sequence[int],
    hints: Sequence[int] = (),
):
    """Write the session's records file (with the steps a hint was asked at); return whether
    the game was finished."""
    record, finished = session_record(config, seed, specs, actions)
    try:
        with held_interrupts():
            write_person_game(path, config, specs, record, "play", hints=hints)
    except OSError as e:
        raise NotWrittenError(
            f"cannot save the game to {path} ({describe_error(e)}); an earlier file there is "
            "unchanged"
        ) from e
    return finished


class Session:
    """One game between a person and agents, told in the terminal; see the module docstring.
    The game is a :class:`odin_lab.evaluation.table.Table` (the web app's too)."""

    def __init__(
        self,
        config: Config,
        seat: int,
        opponents: Sequence[str],
        seed: int,
        out: Path,
        style: Style,
        read: Callable[[str], str] | None = None,
        write: Callable[[str], None] = print,
    ):
        n = config.players
        self.config, self.seat, self.seed, self.out = config, seat, seed, Path(out)
        self.table = Table.against(config, seat, opponents, seed)
        self.specs = list(self.table.specs)
        self.style, self.write = style, write
        self.read = LineReader() if read is None else read  # default: stdin, as input()
        self.labels = seat_labels(self.specs, range(n), you=seat)
        # Hands are listed on each of the person's turns, not at every trick as well.
        self.narrator = Narrator(config, self.labels, seat, style, trick_hands=False)

    @property
    def game(self) -> Game:
        return self.table.game

    @property
    def actions(self) -> list[int]:
        """Every decision that was not forced, the agents' too (the record's moves)."""
        return self.table.actions

    @property
    def moves(self) -> int:
        """The person's own moves so far."""
        return self.table.moves

    def run(self) -> None:
        """Play to the end; :class:`QuitRequested`, ``EOFError`` and ``KeyboardInterrupt`` pass
        through (the caller saves)."""
        table, say = self.table, self.write
        say("\n".join(self.narrator.opening(table.game)))
        for note in table.notes:  # an agent at a table size it was not trained for
            say(f"note: {note}")
        while not table.is_over:
            chosen = table.next_move()
            action, forced = (self.ask(), False) if chosen is None else chosen
            before = copy_game(table.game)
            table.apply(action, forced)
            say("\n".join(self.narrator.tell(before, action, forced, table.game)))
        say("\n".join(self.narrator.ending(table.game)))

    def ask(self) -> int:
        """Show the position and the menu; read moves until one is legal (``hint`` and
        ``help`` answer and ask again)."""
        shown = menu(self.game)
        self.write(self.position(shown))
        while True:
            text = self.read("your move> ").strip()
            word = text.lower()
            if word == "help":
                self.write(HELP)
                continue
            if word == "quit":
                raise QuitRequested
            if word.split()[:1] == ["hint"]:
                self.write(self.hint(word.split()[1:], shown))
                continue
            try:
                return parse_move(text, self.game, shown)
            except MoveError as e:
                self.write(f"refused: {e}")

    def hint(self, words: list[str], shown: list[int]) -> str:
        """The coach's hint as lines (``hint`` or ``hint MS``), or why it cannot be given."""
        ms = DEFAULT_MS
        if len(words) > 1 or (words and not words[0].isdigit()):
            return f"refused: type hint, or hint and a budget in milliseconds {MIN_MS}-{MAX_MS}"
        try:
            ms = check_budget(int(words[0])) if words else ms
            answer = self.table.hint(ms)
        except ValueError as e:
            return f"refused: {e}"
        return hint_text(answer, shown, self.style)

    def position(self, shown: list[int]) -> str:
        """What the person sees before moving: the table, the others, their hand, the menu."""
        g, s = self.game, self.style
        lines = [s.bold(f"-- your turn: hand {g.hand_number}, {PHASE_NAMES[g.phase]} --")]
        if g.table >= 0:
            lines.append(f"table: {s.combo(g.table)} by {self.labels[g.owner]}")
        else:
            lines.append("you lead this trick")
        if g.phase == TAKING:
            # The table holds the combo just played; the one beaten is the one taken from.
            beaten = s.combo(combo_index_of_bits(g.take_from))
            lines.append(f"you beat {beaten}; take one of: {s.hand(g.take_from)}")
        lines.append(f"discard: {s.hand(g.discard)}")
        lines += self.narrator.hands(g)
        entries = [f"{k:>3}) {move_name(a)}" for k, a in enumerate(shown, 1)]
        width = max(len(e) for e in entries) + 2
        per_row = max(1, 96 // width)
        lines.append("moves:")
        for row in range(0, len(entries), per_row):
            lines.append("".join(e.ljust(width) for e in entries[row : row + per_row]).rstrip())
        lines.append(f"({HOW})")
        return "\n".join(lines)


HINT_LINES = 12
"""Candidates a terminal hint lists (the best first)."""


def hint_text(answer: dict, shown: list[int], style: Style) -> str:
    """A hint (:func:`odin_lab.evaluation.coach.hint`) as lines: each candidate's menu number,
    move, win chance and expected penalty, the best marked."""
    lines = [
        style.bold(
            f"hint: the search's view of your moves ({answer['worlds']} layout"
            f"{'s' * (answer['worlds'] != 1)} of the cards you have not seen, "
            f"{answer['elapsed_ms'] / 1000:.1f} s)"
        ),
        "  win: your chance to win the game after the move; points: your expected penalty "
        "this hand",
    ]
    candidates = answer["candidates"]
    for c in candidates[:HINT_LINES]:
        number = shown.index(c["action"]) + 1
        best = "  <- best" if c["best"] else ""
        odds = f"win {c['win']:>4.0%}  points {c['penalty']:4.1f}"
        lines.append(f"  {number:>3}) {c['label']:<16} {odds}{best}")
    if len(candidates) > HINT_LINES:
        lines.append(f"  ... and {len(candidates) - HINT_LINES} more, less likely to win")
    return "\n".join(lines)


def check_setup(config: Config, seat: int, opponents: Sequence[str]) -> None:
    """``ValueError`` with one line for a seat or opponent list that does not fit ``config``."""
    n = config.players
    if len(opponents) != n - 1:
        raise ValueError(
            f"{len(opponents)} opponents for {n} players: give players - 1 = {n - 1} agent specs"
        )
    if not 0 <= seat < n:
        raise ValueError(f"--seat must be 0-{n - 1} ({n} players); got {seat}")


__all__ = [
    "HELP", "HUMAN", "QuitRequested", "Session", "check_setup", "hint_text", "save",
    "session_record",
]  # fmt: skip
