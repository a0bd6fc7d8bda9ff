"""A person plays Odin against the lab's agents in the terminal (``play.py``).

:func:`play_session` deals ``Game(config, seed)``, seats the person at ``seat`` and an agent
(:func:`agents.make`) in every other seat, and tells every decision as it happens, from the
person's view (:mod:`odin_lab.evaluation.narrate`: the others' cards stay hidden). On the person's
turn it shows their hand, the table, the discards, the others' hand sizes, totals and the cards
known to be in their hands, and a numbered menu of the legal moves, then reads a move
(:mod:`odin_lab.evaluation.moves`); a refused move prints the reason and asks again, and changes
nothing.

The game is saved as a records file (docs/records.md; the person's agent spec is ``"human"``)
that ``evaluate.py replay`` reads: at its end, and also when the session stops early (Ctrl-C,
end of input, ``quit``), then marked ``"unfinished": true``, with the moves played so far.
The saved record is rebuilt from the seed and the moves (:func:`session_record`), so a Ctrl-C
that lands in the middle of a move cannot save a broken game.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from agents import make
from odin_env.cards import COLOUR_LETTERS, COLOUR_NAMES
from odin_env.observation import observe
from odin_env.rules import PHASE_NAMES, TAKING, Config, Game
from odin_lab.evaluation.moves import HOW, MoveError, menu, move_name, parse_move
from odin_lab.evaluation.narrate import Narrator, Style, seat_labels
from odin_lab.evaluation.records import copy_game, write_person_game
from odin_lab.evaluation.results import NotWrittenError, describe_error, held_interrupts
from odin_lab.evaluation.tournament import GameRecord, agent_seed

HUMAN = "human"
"""The agent spec a person has in a records file."""

_LETTERS = ", ".join(f"{a} {name}" for a, name in zip(COLOUR_LETTERS, COLOUR_NAMES))
HELP = f"""How to play (docs/rules.md has the rules):
  A card is a colour letter and a value 1-9: {_LETTERS}.
  To lead a trick, play one card (R3), or your whole hand if it is one combo.
  To follow, play a combo that beats the table: as many cards with a higher number, or
  exactly one card more; the cards of a combo share one colour or one value. Or pass.
  After beating a combo, take one of its cards (take Y5).
  Moves: a menu number, card names (R3 Y3), pass, take Y5. Also: help, quit (saves the game)."""


class QuitRequested(Exception):  # noqa: N818 (a request, not an error)
    """The person typed ``quit``."""


def session_record(config: Config, seed: int, seat_specs: Sequence[str], actions: Sequence[int]):
    """The record of a session's game from its seed and moves: finished when they end the
    game, else with ``winners`` empty (unfinished). Returns ``(record, finished)``."""
    game = Game(config, seed=seed)
    first = game.hand_leader
    for action in actions:
        game.play_forced()
        game.apply(action)
    game.play_forced()
    record = GameRecord(
        deal=0,
        rotation=0,
        seed=seed,
        agents=tuple(range(config.players)),
        first_leader=first,
        hands=tuple(game.history),
        totals=tuple(game.totals),
        winners=game.winners,
        actions=tuple(actions),
    )
    return record, game.is_over


def save(path: Path, config: Config, seed: int, specs: Sequence[str], actions: Sequence[int]):
    """Write the session's records file; return whether the game was finished."""
    record, finished = session_record(config, seed, specs, actions)
    try:
        with held_interrupts():
            write_person_game(path, config, specs, record, "play")
    except OSError as e:
        raise NotWrittenError(
            f"cannot save the game to {path} ({describe_error(e)}); an earlier file there is "
            "unchanged"
        ) from e
    return finished


class Session:
    """One game between a person and agents; see the module docstring."""

    def __init__(
        self,
        config: Config,
        seat: int,
        opponents: Sequence[str],
        seed: int,
        out: Path,
        style: Style,
        read: Callable[[str], str] = input,
        write: Callable[[str], None] = print,
    ):
        n = config.players
        self.config, self.seat, self.seed, self.out = config, seat, seed, Path(out)
        self.specs = [*opponents[:seat], HUMAN, *opponents[seat:]]
        assert len(self.specs) == n
        self.agents: list = [None if s == seat else make(self.specs[s]) for s in range(n)]
        for s, agent in enumerate(self.agents):
            reset = getattr(agent, "reset", None)
            if reset is not None:
                reset(s, agent_seed(seed, 0, 0, s))
        self.style, self.read, self.write = style, read, write
        self.labels = seat_labels(self.specs, range(n), you=seat)
        # Hands are listed on each of the person's turns, not at every trick as well.
        self.narrator = Narrator(config, self.labels, seat, style, trick_hands=False)
        self.game = Game(config, seed=seed)
        self.actions: list[int] = []

    def run(self) -> None:
        """Play to the end; :class:`QuitRequested`, ``EOFError`` and ``KeyboardInterrupt`` pass
        through (the caller saves)."""
        game, say = self.game, self.write
        say("\n".join(self.narrator.opening(game)))
        while not game.is_over:
            forced = len(game.legal) == 1
            seat = game.current
            if forced:
                action = game.legal[0]
            elif seat == self.seat:
                action = self.ask()
            else:
                action = int(self.agents[seat].act(observe(game, seat), game.legal_mask()))
            before = copy_game(game)
            if not forced:
                self.actions.append(action)  # first: a Ctrl-C now still saves this move
            game.apply(action)
            say("\n".join(self.narrator.tell(before, action, forced, game)))
        say("\n".join(self.narrator.ending(game)))

    def ask(self) -> int:
        """Show the position and the menu; read moves until one is legal."""
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
            try:
                return parse_move(text, self.game, shown)
            except MoveError as e:
                self.write(f"refused: {e}")

    def position(self, shown: list[int]) -> str:
        """What the person sees before moving: the table, the others, their hand, the menu."""
        g, s = self.game, self.style
        lines = [s.bold(f"-- your turn: hand {g.hand_number}, {PHASE_NAMES[g.phase]} --")]
        if g.phase == TAKING:
            lines.append(f"you beat {s.combo(g.table)}; take one of: {s.hand(g.take_from)}")
        elif g.table >= 0:
            lines.append(f"table: {s.combo(g.table)} by {self.labels[g.owner]}")
        else:
            lines.append("you lead this trick")
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


def check_setup(config: Config, seat: int, opponents: Sequence[str]) -> None:
    """``ValueError`` with one line for a seat or opponent list that does not fit ``config``."""
    n = config.players
    if len(opponents) != n - 1:
        raise ValueError(
            f"{len(opponents)} opponents for {n} players: give players - 1 = {n - 1} agent specs"
        )
    if not 0 <= seat < n:
        raise ValueError(f"--seat must be 0-{n - 1} ({n} players); got {seat}")


__all__ = ["HELP", "HUMAN", "QuitRequested", "Session", "check_setup", "save", "session_record"]
