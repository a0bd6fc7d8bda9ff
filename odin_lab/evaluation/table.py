"""One table where a person plays against the lab's agents: the game both front ends drive.

The terminal (``odin_lab.evaluation.play``, ``play.py``) and the web app
(``odin_lab.webapp.sessions``) each show the game their own way, but the game itself is a
:class:`Table`: the deal is ``Game(config, seed)``, the agent in seat ``s`` is built and reset
with :func:`odin_lab.evaluation.tournament.agent_seed` ``(seed, 0, 0, s)`` (as a tournament's
deal 0, rotation 0 seeds it), so the same seed and the same moves of the person give the same
game in both front ends.

A front end asks :meth:`Table.next_move` for the next decision: a forced one or an agent's
choice (the agent is asked then), or ``None`` when the person has a real choice (or the game is
over); it shows the position, applies the decision with :meth:`Table.apply` and goes on.
:meth:`Table.hint` asks the coach (:func:`odin_lab.evaluation.coach.hint`) about the person's
decision at hand, from their observation only, and keeps the step it was asked at: the saved
record (:meth:`Table.save`) lists them as ``"hints"``, so a review can tell those decisions apart.
:attr:`Table.notes` says which agents play a table size they were not trained for (the bundled
``ppo`` at 3, 5 or 6 players), for the front end to show instead of a Python warning.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from agents import make
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.seeding import spawn_seed
from odin_lab.evaluation import failures
from odin_lab.evaluation.coach import DEFAULT_MS, hint, warm_up_in_background
from odin_lab.evaluation.records import write_person_game
from odin_lab.evaluation.tournament import GameRecord, agent_seed

HUMAN = "human"
"""The agent spec a person has in a records file."""
_HINT_KEY = 2
"""The seed stream of hints: ``spawn_seed(seed, 2, step)`` (the deal and agents use others)."""


class Table:
    """A game between a person in seat ``seat`` and agents; see the module docstring.

    ``specs``: one agent spec per seat, :data:`HUMAN` in the person's. Keeps ``game`` (the
    state), ``actions`` (every decision that was not forced, in order: the record's),
    ``turn`` (decisions applied, forced ones included), ``moves`` (the person's own moves),
    ``hints`` (the steps at which a hint was asked), ``first_leader`` and ``notes``."""

    def __init__(self, config: Config, seat: int, specs: Sequence[str], seed: int):
        n = config.players
        if len(specs) != n or not 0 <= seat < n or specs[seat] != HUMAN:
            raise ValueError(
                f"specs must name one agent per seat ({n}) with {HUMAN!r} in seat {seat}"
            )
        self.config, self.seat, self.seed, self.specs = config, seat, seed, tuple(specs)
        self.agents: list = []
        for s, spec in enumerate(self.specs):
            if s == seat:
                self.agents.append(None)
                continue
            agent = make(spec, seed=agent_seed(seed, 0, 0, s))
            reset = getattr(agent, "reset", None)
            if reset is not None:
                limit, seeded = failures.decision_limit(), agent_seed(seed, 0, 0, s)
                failures.ask(limit, (spec, s, 0, 0), reset, s, seeded, doing="in reset")
            self.agents.append(agent)
        self.notes = table_notes(self.specs, self.agents, n)
        """One line per agent spec that plays a table size it was not trained for (its seats
        named); the agents then warn no more."""
        self.game = Game(config, seed=seed)
        self.first_leader = self.game.hand_leader
        self.actions: list[int] = []
        self.hints: list[int] = []
        self.turn = 0
        self.moves = 0
        # The first search of a process loads its compiled code (about a second): done now,
        # while the person looks at the deal, so that a first hint keeps its budget.
        warm_up_in_background()

    @classmethod
    def against(cls, config: Config, seat: int, opponents: Sequence[str], seed: int) -> Table:
        """A table with the person in ``seat`` and ``opponents`` in the other seats, in order."""
        return cls(config, seat, [*opponents[:seat], HUMAN, *opponents[seat:]], seed)

    @property
    def is_over(self) -> bool:
        return self.game.is_over

    @property
    def person_to_move(self) -> bool:
        """The person has a real choice now (the game is not over, it is their decision and more
        than one action is legal)."""
        game = self.game
        return not game.is_over and game.current == self.seat and len(game.legal) > 1

    def next_move(self) -> tuple[int, bool] | None:
        """``(action, forced)`` of the decision at hand when it is not the person's to make: the
        only legal action (forced), or the choice of the agent to act (asked now, from its
        observation); ``None`` when the person has a real choice or the game is over. Nothing
        is applied. An agent that fails (raises, answers a non-integer or an illegal action, or
        outlasts the decision limit in the main thread) raises :class:`~odin_lab.evaluation.
        failures.AgentFailed` naming it (a ``ValueError`` of one line; the game is unchanged)."""
        game = self.game
        if game.is_over or self.person_to_move:
            return None
        if len(game.legal) == 1:
            return game.legal[0], True
        seat = game.current
        place = (self.specs[seat], seat, 0, 0)  # the table's game is deal 0, rotation 0
        agent, mask = self.agents[seat], game.legal_mask()
        chosen = failures.ask(
            failures.decision_limit(), place, agent.act, observe(game, seat), mask
        )
        try:
            action = failures.as_action(chosen)
        except ValueError as error:
            raise failures.failed(place, f"chose {chosen!r:.60}: {error}") from None
        if not (0 <= action < mask.shape[0] and mask[action]):
            raise failures.failed(place, f"chose {action}: an illegal action")
        return action, False

    def apply(self, action: int, forced: bool = False) -> None:
        """Apply the decision at hand (``ValueError``, nothing changed, when it is illegal)."""
        game = self.game
        if action not in game.legal:
            raise ValueError(f"action {action} is not legal here ({len(game.legal)} are)")
        mine = game.current == self.seat and not forced
        if not forced:
            self.actions.append(action)  # first: a Ctrl-C now still saves this move
        game.apply(action)
        self.turn += 1
        self.moves += mine

    def hint(self, ms: int = DEFAULT_MS, *, rollouts: int | None = None) -> dict:
        """The coach's hint for the person's decision at hand (``coach.hint``, from the person's
        observation; seeded by the table's seed and the step), and the step kept in
        ``hints``. ``ValueError`` when the person has no choice to make now or for a bad
        budget (nothing is kept then)."""
        if not self.person_to_move:
            raise ValueError("no decision of yours to hint at: wait for your turn")
        game, step = self.game, len(self.actions)
        answer = hint(
            observe(game, self.seat),
            self.config,
            ms=ms,
            mask=game.legal_mask(),
            seed=spawn_seed(self.seed, _HINT_KEY, step),
            rollouts=rollouts,
        )
        if step not in self.hints:
            self.hints.append(step)
        return answer

    def record(self) -> GameRecord:
        """The game's record (``winners`` empty while it is not over), rebuilt from the seed
        and ``actions`` (:func:`rebuild`): a Ctrl-C that lands inside :meth:`apply` cannot make
        a record that does not replay."""
        return rebuild(self.config, self.seed, self.actions)[0]

    def save(self, path: Path, source: str, *, seed_chosen: bool = False) -> None:
        """Write the game as a records file of one game (``write_person_game``: unfinished when
        not over, with the hints asked); ``OSError`` when it cannot be written (an earlier file
        there is unchanged)."""
        write_person_game(
            Path(path),
            self.config,
            self.specs,
            self.record(),
            source,
            seed_chosen=seed_chosen,
            hints=self.hints,
        )


def table_notes(specs: Sequence[str], agents: Sequence, players: int) -> list[str]:
    """The agents' ``table_note(players)`` (an agent that has the method: ``agents.ppo``'s),
    one line per spec and note, its seats named: ``ppo (seats 1, 2): its model was ...``."""
    seats: dict[tuple[str, str], list[int]] = {}
    for s, (spec, agent) in enumerate(zip(specs, agents)):
        note = getattr(agent, "table_note", None)
        line = note(players) if callable(note) else None
        if line:
            seats.setdefault((spec, str(line)), []).append(s)
    return [
        f"{spec} (seat{'s' * (len(at) > 1)} {', '.join(map(str, at))}): {line}"
        for (spec, line), at in seats.items()
    ]


def rebuild(config: Config, seed: int, actions: Sequence[int]) -> tuple[GameRecord, bool]:
    """The record of a person's game from its seed and moves, and whether they finish it (else
    ``winners`` is empty: unfinished). The forced decisions after the last move are played."""
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
        winners=tuple(game.winners),
        actions=tuple(actions),
    )
    return record, game.is_over


__all__ = ["HUMAN", "Table", "rebuild", "table_notes"]
