"""Games in progress between a person and the lab's agents, kept on the server.

A :class:`PlaySession` holds one game: the person sits in seat :data:`HUMAN`, agents
(``agents.make``) in the others. After every move of the person the session plays forced
decisions (exactly those ``Game.play_forced`` applies) and the agents' decisions until the
person has a real choice or the game is over, and returns those decisions as *events*: each
one's public account (:func:`odin_lab.webapp.views.describe`) and the person's view after it.
Nothing in an event or a view shows another seat's hidden cards.

A :class:`SessionStore` keeps at most ``max_games`` sessions under random, unguessable ids
(``secrets.token_urlsafe``); creating one more drops the one used least recently. One lock per
session serialises its moves, so two requests for one game never interleave. A game is saved
once as a records file (:func:`odin_lab.evaluation.records.write_person_game`) under the store's
folder, with the person as agent spec ``"human"``: when it is over, or, once the person has
moved, when it is dropped or the server stops (:meth:`SessionStore.close`), marked
``"unfinished": true`` with the moves so far, as ``play.py`` saves a game quit early.
"""

from __future__ import annotations

import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from agents.registry import agent_names, make
from odin_env.observation import observe
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, PHASE_NAMES, Config, Game, check_action
from odin_env.seeding import spawn_seed
from odin_lab.evaluation.limits import MAX_LIVE_GAMES
from odin_lab.evaluation.records import write_person_game
from odin_lab.evaluation.tournament import GameRecord
from odin_lab.webapp.errors import RequestError, check_fields, check_int, shown
from odin_lab.webapp.views import YOU, Moment, action_json, describe, legal_json, seat_view

HUMAN = 0
"""The person's seat; the agents sit in seats 1 .. players - 1."""
HUMAN_SPEC = "human"
"""The agent spec of the person in the records file."""
MAX_THRESHOLD = 100
"""The highest threshold the page may ask for (a game's length grows with it)."""
MAX_SEED = 2**63 - 1


@dataclass
class PlaySession:
    """One game in progress; every method that changes it runs under ``lock``."""

    id: str
    config: Config
    specs: tuple[str, ...]
    """One agent spec per seat, :data:`HUMAN_SPEC` in seat :data:`HUMAN`."""
    seed: int
    game: Game
    agents: list
    names: list[str]
    first_leader: int
    actions: list[int] = field(default_factory=list)
    """The action of every decision that was not forced, in play order (the record's)."""
    log: list[str] = field(default_factory=list)
    turn: int = 0
    """Decisions applied so far, forced ones included; a move must name it (see :meth:`move`)."""
    moves: int = 0
    """The person's moves so far."""
    seed_chosen: bool = False
    """The person chose the seed, so the deal was known in advance: the record says so."""
    saved: Path | None = None
    save_error: str | None = None
    """Why the finished game could not be saved (the game itself is unaffected)."""
    opening: list[dict] = field(default_factory=list)
    """The events before the person's first real decision."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @classmethod
    def start(cls, game_id: str, config: Config, opponents: list[str], seed: int) -> PlaySession:
        """A new game with ``opponents[k]`` in seat ``k + 1``, dealt from ``seed``; each agent
        is seeded from it as well (``spawn_seed(seed, seat)``), so a seed fixes the whole game
        given the person's moves."""
        specs = (HUMAN_SPEC, *opponents)
        agents: list = [None]
        for seat, spec in enumerate(opponents, start=1):
            agent = make(spec, seed=spawn_seed(seed, seat))
            reset = getattr(agent, "reset", None)
            if reset is not None:
                reset(seat, spawn_seed(seed, seat, 1))
            agents.append(agent)
        names = [YOU] + [f"{spec} (seat {s})" for s, spec in enumerate(opponents, start=1)]
        game = Game(config, seed=seed)
        return cls(game_id, config, specs, seed, game, agents, names, game.hand_leader)

    def view(self) -> dict:
        """The person's view now; ``legal`` (their legal actions) while they are to act."""
        view = seat_view(self.game, self.names, HUMAN)
        view["turn"] = self.turn
        waiting = not self.game.is_over and self.game.current == HUMAN
        view["legal"] = legal_json(self.game) if waiting else []
        return view

    def advance(self) -> list[dict]:
        """Play forced decisions and agents' decisions until the person has a real choice or
        the game is over; return the events, in order."""
        game, events = self.game, []
        while not game.is_over:
            forced = len(game.legal) == 1
            seat = game.current
            if not forced and seat == HUMAN:
                break
            if forced:
                action = game.legal[0]
            else:
                action = int(self.agents[seat].act(observe(game, seat), game.legal_mask()))
            events.append(self._apply(action, forced))
        return events

    def move(self, action: int, turn: int) -> list[dict]:
        """Apply the person's ``action`` at decision ``turn``, then :meth:`advance`.

        ``RequestError`` 409 when the game is over or ``turn`` is not the decision at hand (a
        stale or repeated request), 422 when the action is not legal; the game is unchanged."""
        game = self.game
        if game.is_over:
            raise RequestError(409, "the game is over: no more moves; start a new game")
        if turn != self.turn or game.current != HUMAN:
            raise RequestError(
                409,
                f"out of turn: this move answers decision {turn}, but the game is at decision "
                f"{self.turn} (reload the game to see it)",
            )
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
        self.moves += 1
        return events + self.advance()

    def _apply(self, action: int, forced: bool) -> dict:
        before = Moment.of(self.game)
        self.game.apply(action)
        if not forced:
            self.actions.append(action)
        self.turn += 1
        event = describe(before, action, self.game, self.names, forced)
        event["view"] = seat_view(self.game, self.names, HUMAN)
        self.log.append(event["text"])
        return event

    def record(self) -> GameRecord:
        """The game's record (winners empty while it is not over)."""
        game = self.game
        return GameRecord(
            deal=0,
            rotation=0,
            seed=self.seed,
            agents=tuple(range(self.config.players)),
            first_leader=self.first_leader,
            hands=tuple(game.history),
            totals=tuple(game.totals),
            winners=tuple(game.winners),
            actions=tuple(self.actions),
        )


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
    chosen seed is practice; its record says ``"seed_chosen": true``)."""
    body = check_fields(
        body, {"players": True, "opponents": True, "threshold": False, "seed": False}
    )
    players = check_int("players", body["players"], MIN_PLAYERS, MAX_PLAYERS)
    threshold = check_int("threshold", body.get("threshold", 15), 1, MAX_THRESHOLD)
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
    return Config(players=players, threshold=threshold), opponents, seed


def parse_move(body: object) -> tuple[int, int]:
    """``(action, turn)`` of a move request, or ``RequestError(400)``: ``action`` an integer
    action (``odin_env.spec.check_action``), ``turn`` the decision it answers (the view's)."""
    body = check_fields(body, {"action": True, "turn": True})
    try:
        action = check_action(body["action"])
    except ValueError as error:  # ActionTypeError is one too
        # The message names the value: a short form of it keeps the refusal one short line.
        given = body["action"]
        raise RequestError(400, str(error).replace(repr(given), shown(given), 1)) from None
    return action, check_int("turn", body["turn"], 0, 10**9)


class SessionStore:
    """The live games, at most ``max_games`` (the least recently used is dropped first)."""

    def __init__(self, out_dir: Path, max_games: int = 64):
        if not 1 <= max_games <= MAX_LIVE_GAMES:
            raise ValueError(f"max_games must be 1-{MAX_LIVE_GAMES}; got {max_games}")
        self.out_dir = Path(out_dir)
        self.max_games = max_games
        self._games: OrderedDict[str, PlaySession] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._games)

    def create(self, config: Config, opponents: list[str], seed: int | None) -> PlaySession:
        """Start a game (a fresh random seed when ``seed`` is ``None``) and play up to the
        person's first real decision (those events are in its ``opening``)."""
        chosen = seed is not None
        seed = secrets.randbits(63) if seed is None else seed
        session = PlaySession.start(secrets.token_urlsafe(18), config, opponents, seed)
        session.seed_chosen = chosen
        with session.lock:
            session.opening = session.advance()
            self.save_if_over(session)
        dropped = []
        with self._lock:
            while len(self._games) >= self.max_games:
                dropped.append(self._games.popitem(last=False)[1])
            self._games[session.id] = session
        for old in dropped:
            self._keep(old)
        return session

    def close(self) -> None:
        """Drop every game, saving those the person has moved in (the server is stopping)."""
        with self._lock:
            dropped = list(self._games.values())
            self._games.clear()
        for old in dropped:
            self._keep(old)

    def _keep(self, session: PlaySession) -> None:
        """Save a dropped game, unless the person never moved in it."""
        with session.lock:  # a move still being played ends first
            if session.moves:
                self.save(session)

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
            self.save(session)

    def save(self, session: PlaySession) -> None:
        """Save the game, once, as ``out_dir/game-<UTC time>-<random>.json`` (under the
        session's lock), marked ``"unfinished": true`` when it is not over. A write that fails
        is reported in ``save_error`` and not retried."""
        if session.saved is not None:
            return
        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        path = self.out_dir / f"game-{stamp}-{secrets.token_hex(3)}.json"
        try:
            write_person_game(
                path, session.config, session.specs, session.record(), "web",
                seed_chosen=session.seed_chosen,
            )  # fmt: skip
        except OSError as error:  # a full disk must not lose the end of the game on screen
            session.save_error = f"could not save the game in {self.out_dir}: {error.strerror}"
            return
        session.saved = path


__all__ = ["HUMAN", "HUMAN_SPEC", "PlaySession", "SessionStore", "parse_move", "parse_new_game"]
