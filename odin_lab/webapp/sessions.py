"""Games in progress between a person and the lab's agents, kept on the server.

A :class:`PlaySession` holds one game, a :class:`odin_lab.evaluation.table.Table` (the table
``play.py`` drives too, seeded the same way: the same seed and moves give the same game): the
person sits in seat :data:`HUMAN`, agents (``agents.make``) in the others. After every move of
the person the session plays forced decisions (exactly those ``Game.play_forced`` applies) and
the agents' decisions until the person has a real choice or the game is over, and returns those
decisions as *events*: each one's public account (:func:`odin_lab.webapp.views.describe`) and
the person's view after it. Nothing in an event or a view shows another seat's hidden cards.
On the person's decision, :meth:`PlaySession.hint` gives the coach's evaluation of each legal
move (:func:`odin_lab.evaluation.coach.hint`, from the person's observation only); the steps
at which hints were asked are saved with the game (``"hints"``).

A :class:`SessionStore` keeps at most ``max_games`` sessions under random, unguessable ids
(``secrets.token_urlsafe``); creating one more drops the one used least recently. One lock per
session serialises its moves, so two requests for one game never interleave. A game is saved
once as a records file (:func:`odin_lab.evaluation.records.write_person_game`) under the store's
folder, with the person as agent spec ``"human"``: when it is over, or, once the person has
moved, when it is dropped or the server stops (:meth:`SessionStore.close`), marked
``"unfinished": true`` with the moves so far, as ``play.py`` saves a game quit early.

No game is lost silently. A save that fails (a full disk) is said in the game's
``save_error`` and in one line of the log (logger ``odin_lab.webapp``; once per game, reason
and state), and tried again whenever the game would be dropped: a game that still cannot be
saved is not dropped but kept live, the next game in line goes instead, and when every live
game is such a game a new one is refused (``RequestError`` 503 naming the folder and why). At
shutdown a game that cannot be saved is named in the log as lost.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.registry import GOAT_AGENTS, agent_names, check_plays
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, PHASE_NAMES, Config, Game, check_action
from odin_lab.evaluation.coach import DEFAULT_MS, MAX_MS, MIN_MS
from odin_lab.evaluation.failures import AgentFailed
from odin_lab.evaluation.limits import MAX_LIVE_GAMES
from odin_lab.evaluation.table import HUMAN as HUMAN_SPEC
from odin_lab.evaluation.table import Table
from odin_lab.evaluation.tournament import GameRecord
from odin_lab.webapp.errors import RequestError, check_fields, check_int, shown
from odin_lab.webapp.views import YOU, Moment, action_json, describe, legal_json, seat_view

HUMAN = 0
"""The person's seat; the agents sit in seats 1 .. players - 1."""
MAX_THRESHOLD = 100
"""The highest threshold the page may ask for (a game's length grows with it)."""
MAX_SEED = 2**63 - 1
LOG = logging.getLogger("odin_lab.webapp")
"""Where a game that could not be saved is told (``python -m odin_lab.webapp`` prints it)."""


@dataclass
class PlaySession:
    """One game in progress, a :class:`odin_lab.evaluation.table.Table` (the terminal's too)
    with the person in seat :data:`HUMAN`; every method that changes it runs under ``lock``."""

    id: str
    table: Table
    names: list[str]
    log: list[str] = field(default_factory=list)
    seed_chosen: bool = False
    """The person chose the seed, so the deal was known in advance: the record says so."""
    saved: Path | None = None
    save_error: str | None = None
    """Why the game could not be saved when last tried (the game itself is unaffected)."""
    dropped: bool = False
    """The store let the game go (saved, or with nothing to save): no more moves or hints."""
    told: str = ""
    """The last failed save said in the log."""
    opening: list[dict] = field(default_factory=list)
    """The events before the person's first real decision."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, game_id: str, config: Config, opponents: list[str], seed: int) -> PlaySession:
        """A new game with ``opponents[k]`` in seat ``k + 1``, dealt from ``seed``; each agent
        is seeded from it as well (as :class:`~odin_lab.evaluation.table.Table` seeds them, the
        same as ``play.py``), so a seed fixes the whole game given the person's moves."""
        table = Table.against(config, HUMAN, opponents, seed)
        names = [YOU] + [f"{spec} (seat {s})" for s, spec in enumerate(opponents, start=1)]
        return cls(game_id, table, names)

    @property
    def config(self) -> Config:
        return self.table.config

    @property
    def specs(self) -> tuple[str, ...]:
        """One agent spec per seat, :data:`HUMAN_SPEC` in seat :data:`HUMAN`."""
        return self.table.specs

    @property
    def seed(self) -> int:
        return self.table.seed

    @property
    def game(self) -> Game:
        return self.table.game

    @property
    def actions(self) -> list[int]:
        """The action of every decision that was not forced, in play order (the record's)."""
        return self.table.actions

    @property
    def turn(self) -> int:
        """Decisions applied so far, forced ones included; a move must name it (:meth:`move`)."""
        return self.table.turn

    @property
    def moves(self) -> int:
        """The person's moves so far."""
        return self.table.moves

    @property
    def hints(self) -> list[int]:
        """The steps (indices in :attr:`actions`) at which the person asked for a hint."""
        return self.table.hints

    def view(self) -> dict:
        """The person's view now; ``legal`` (their legal actions) while they are to act."""
        view = seat_view(self.game, self.names, HUMAN)
        view["turn"] = self.turn
        waiting = not self.game.is_over and self.game.current == HUMAN
        view["legal"] = legal_json(self.game) if waiting else []
        return view

    def advance(self) -> list[dict]:
        """Play forced decisions and agents' decisions until the person has a real choice or
        the game is over; return the events, in order. An agent that fails (an outside one:
        :class:`~odin_lab.evaluation.failures.AgentFailed`) is ``RequestError`` 500 naming it
        and what it did, said in one line of the log too; the game stays as it was before that
        decision (kept, saved as any unfinished game)."""
        events = []
        try:
            while (chosen := self.table.next_move()) is not None:
                events.append(self._apply(*chosen))
        except AgentFailed as failure:
            LOG.warning("game %s: %s", self.id, failure)
            raise RequestError(500, f"{failure}: the game cannot go on") from None
        return events

    def move(self, action: int, turn: int) -> list[dict]:
        """Apply the person's ``action`` at decision ``turn``, then :meth:`advance`.

        ``RequestError`` 409 when the game is over or ``turn`` is not the decision at hand (a
        stale or repeated request), 422 when the action is not legal; the game is unchanged."""
        game = self.game
        self._check_turn(turn)
        if action not in game.legal:
            moved = action_json(action)
            allowed = [_short(a) for a in legal_json(game)]
            shown = ", ".join(allowed[:8]) + (
                f" and {len(allowed) - 8} more" if len(allowed) > 8 else ""
            )
            raise RequestError(
                422,
                f"illegal move {_short(moved)} (action {action}) in phase "
                f"{PHASE_NAMES[game.phase]}: legal are {shown}",
            )
        events = [self._apply(action, forced=False)]
        return events + self.advance()

    def hint(self, ms: int, turn: int | None = None) -> dict:
        """The coach's hint for the person's decision at hand (``Table.hint``: from the
        person's observation only), kept in the record's ``hints``, with ``turn`` (the decision
        it is about) added. ``RequestError`` 409 when the game is over or it is not the
        person's decision (or not decision ``turn``, when given)."""
        self._check_turn(self.turn if turn is None else turn)
        try:
            answer = self.table.hint(ms)
        except ValueError as error:
            raise RequestError(409, str(error)) from None
        return {**answer, "turn": self.turn}

    @property
    def unsaved(self) -> bool:
        """Dropping the game now would lose something: the person moved, or it is over, and it
        is not saved."""
        return self.saved is None and (self.moves > 0 or self.game.is_over)

    def _check_turn(self, turn: int) -> None:
        if self.dropped:  # a request that found the game just before the store let it go
            raise RequestError(404, "this game was closed: start a new game")
        if self.game.is_over:
            raise RequestError(409, "the game is over: no more moves; start a new game")
        if turn != self.turn or self.game.current != HUMAN:
            raise RequestError(
                409,
                f"out of turn: this request answers decision {turn}, but the game is at decision "
                f"{self.turn} (reload the game to see it)",
            )

    def _apply(self, action: int, forced: bool) -> dict:
        before = Moment.of(self.game)
        self.table.apply(action, forced)
        event = describe(before, action, self.game, self.names, forced)
        event["view"] = seat_view(self.game, self.names, HUMAN)
        self.log.append(event["text"])
        return event

    def record(self) -> GameRecord:
        """The game's record (winners empty while it is not over)."""
        return self.table.record()


def _short(moved: dict) -> str:
    """``play R3 B3``, ``pass``, ``take B7``."""
    return " ".join([moved["kind"], *moved["cards"]])


def parse_new_game(
    body: object, names: Sequence[str] | None = None
) -> tuple[Config, list[str], int | None]:
    """The settings of a new-game request, or ``RequestError(400)`` naming the bad field.

    Fields: ``players`` (2-6), ``opponents`` (one agent name per other seat, from ``names``,
    default ``agents.registry.agent_names()``: no model paths), ``threshold`` (1-100, default
    15), ``seed`` (optional integer >= 0: the same seed deals the same cards, so a game with a
    chosen seed is practice; its record says ``"seed_chosen": true``), ``goat`` (optional
    ``true``: play with the Grumpy Goat, RULES G1-G5; every opponent must play it)."""
    body = check_fields(
        body,
        {"players": True, "opponents": True, "threshold": False, "seed": False, "goat": False},
    )
    players = check_int("players", body["players"], MIN_PLAYERS, MAX_PLAYERS)
    threshold = check_int("threshold", body.get("threshold", 15), 1, MAX_THRESHOLD)
    goat = body.get("goat", False)
    if not isinstance(goat, bool):
        raise RequestError(400, f"goat must be true or false; got {shown(goat)}")
    seed = body.get("seed")
    if seed is not None:
        seed = check_int("seed", seed, 0, MAX_SEED)
    opponents = body["opponents"]
    names = agent_names() if names is None else list(names)
    if not isinstance(opponents, list) or len(opponents) != players - 1:
        raise RequestError(
            400, f"opponents must be a list of {players - 1} agent names (one per other seat)"
        )
    for spec in opponents:
        if spec not in names:
            raise RequestError(
                400, f"unknown opponent {shown(spec)}: allowed are {', '.join(names)}"
            )
    config = Config(players=players, threshold=threshold, goat=goat)
    if goat:
        for spec in dict.fromkeys(opponents):
            if spec not in GOAT_AGENTS:
                try:
                    check_plays(spec, config)  # an outside agent may play it: ask it
                except ValueError as error:
                    raise RequestError(
                        400, f"{error} (the lab's agents that do: {', '.join(GOAT_AGENTS)})"
                    ) from None
    return config, opponents, seed


def parse_move(body: object, goat: bool = False) -> tuple[int, int]:
    """``(action, turn)`` of a move request, or ``RequestError(400)``: ``action`` an integer
    action (``odin_env.spec.check_action``; of a Goat game with ``goat``), ``turn`` the decision
    it answers (the view's)."""
    body = check_fields(body, {"action": True, "turn": True})
    try:
        action = check_action(body["action"], goat=goat)
    except ValueError as error:  # ActionTypeError is one too
        # The message names the value: a short form of it keeps the refusal one short line.
        given = body["action"]
        raise RequestError(400, str(error).replace(repr(given), shown(given), 1)) from None
    return action, check_int("turn", body["turn"], 0, 10**9)


def parse_hint(body: object) -> tuple[int, int | None]:
    """``(ms, turn)`` of a hint request, or ``RequestError(400)``: an optional ``ms`` (the time
    budget, :data:`~odin_lab.evaluation.coach.MIN_MS`-:data:`~odin_lab.evaluation.coach.MAX_MS`,
    default :data:`~odin_lab.evaluation.coach.DEFAULT_MS`) and an optional ``turn`` (the
    decision the hint is about, the view's: a stale one is refused with 409)."""
    body = check_fields(body, {"ms": False, "turn": False})
    ms = check_int("ms", body.get("ms", DEFAULT_MS), MIN_MS, MAX_MS)
    turn = body.get("turn")
    return ms, None if turn is None else check_int("turn", turn, 0, 10**9)


class SessionStore:
    """The live games, at most ``max_games`` (the least recently used is dropped first, unless
    it cannot be saved: see the module docstring)."""

    def __init__(self, out_dir: Path, max_games: int = 64):
        if not 1 <= max_games <= MAX_LIVE_GAMES:
            raise ValueError(f"max_games must be 1-{MAX_LIVE_GAMES}; got {max_games}")
        self.out_dir = Path(out_dir)
        self.max_games = max_games
        self._games: OrderedDict[str, PlaySession] = OrderedDict()
        self._lock = threading.Lock()
        self.failure = "no save tried"
        """The reason the last failed save gave (its ``strerror``)."""

    def __len__(self) -> int:
        return len(self._games)

    def create(self, config: Config, opponents: list[str], seed: int | None) -> PlaySession:
        """Start a game (a fresh random seed when ``seed`` is ``None``) and play up to the
        person's first real decision (those events are in its ``opening``). ``RequestError``
        503 when the store is full of games that cannot be saved (none is dropped)."""
        chosen = seed is not None
        seed = secrets.randbits(63) if seed is None else seed
        try:
            session = PlaySession.start(secrets.token_urlsafe(18), config, opponents, seed)
        except AgentFailed as failure:  # in its reset
            LOG.warning("new game: %s", failure)
            raise RequestError(500, f"{failure}: the game cannot start") from None
        session.seed_chosen = chosen
        with session.lock:
            session.opening = session.advance()
            self.save_if_over(session)
        self._admit(session)
        return session

    def _admit(self, session: PlaySession) -> None:
        """Keep ``session``, dropping games least recently used first until it fits; a game
        that cannot be saved is kept and the next one tried."""
        tried: set[str] = set()
        while True:
            with self._lock:
                if len(self._games) < self.max_games:
                    self._games[session.id] = session
                    return
                old = next((s for s in self._games.values() if s.id not in tried), None)
            if old is None:
                raise RequestError(
                    503,
                    f"no room for a new game: the server keeps {self.max_games} games, and "
                    f"each holds moves that could not be saved in {self.out_dir} "
                    f"({self.failure}); make room there, then try again",
                )
            tried.add(old.id)
            self._drop(old, "it stays live until it can be saved")

    def _drop(self, session: PlaySession, kept: str, final: bool = False) -> bool:
        """Let ``session`` go once it is saved (or holds nothing to save); ``False``, and the
        game stays, when its save fails (``kept`` and ``final`` as :meth:`save` takes them)."""
        with session.lock:  # a move still being played ends first, and none starts after
            if session.unsaved:
                self.save(session, kept, final)
                if session.saved is None:
                    return False
            with self._lock:
                if self._games.get(session.id) is session:
                    del self._games[session.id]
            session.dropped = True
            return True

    def close(self) -> None:
        """Drop every game, saving those the person has moved in (the server is stopping); a
        game that cannot be saved is named in the log as lost."""
        with self._lock:
            games = list(self._games.values())
        for old in games:
            self._drop(old, "it is lost, as the server is stopping", final=True)
        with self._lock:
            self._games.clear()

    def get(self, game_id: str) -> PlaySession:
        """The session of ``game_id``; ``RequestError(404)`` for an unknown (or dropped) id."""
        with self._lock:
            session = self._games.get(game_id)
            if session is None:
                raise RequestError(404, f"unknown game id {game_id[:40]!r}: start a new game")
            self._games.move_to_end(game_id)
            return session

    def save_if_over(self, session: PlaySession) -> None:
        """Save a game that is over (call it under the session's lock, after each move)."""
        if session.game.is_over:
            self.save(session, "tried again before the game is dropped")

    def save(self, session: PlaySession, kept: str = "", final: bool = False) -> None:
        """Save the game, once, as ``out_dir/game-<UTC time>-<random>.json`` (under the
        session's lock), marked ``"unfinished": true`` when it is not over. A write that fails
        is reported in ``save_error`` and in one line of the log, which ends with ``kept``
        (what becomes of the game): once per game, reason and state (its moves, its end), and
        always when ``final`` (the last try). A later call tries again."""
        if session.saved is not None:
            return
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        path = self.out_dir / f"game-{stamp}-{secrets.token_hex(3)}.json"
        try:
            session.table.save(path, "web", seed_chosen=session.seed_chosen)
        except OSError as error:  # a full disk must not lose the end of the game on screen
            self.failure = error.strerror or type(error).__name__
            session.save_error = f"could not save the game in {self.out_dir}: {self.failure}"
            moves = f"{session.moves} move{'s' * (session.moves != 1)} by the person"
            state = "over" if session.game.is_over else moves
            told = f"{session.save_error} (game {session.id[:6]}..., {state})"
            if told != session.told or final:  # a full disk refuses each new game: said once
                LOG.warning(told + (f"; {kept}" if kept else ""))
                session.told = told
            return
        session.saved, session.save_error = path, None


__all__ = [
    "HUMAN", "HUMAN_SPEC", "PlaySession", "SessionStore", "parse_hint", "parse_move",
    "parse_new_game",
]  # fmt: skip
