"""Records files: games saved so that each one can be replayed decision by decision.

A records file is JSON (``docs/records.md`` is the format's reference)::

    {"format": "odin-lab-games", "version": 2,
     "config": {...the odin_env.rules.Config fields but seed...},
     "agents_specs": [one agent spec per agent index],
     ...any other keys (a tournament's summary, "unfinished"),
     "game_records": [GameRecord.to_dict(), ...]}

A game is its deal seed and the action of every decision that was not forced
(:attr:`~evaluation.tournament.GameRecord.actions`). Replaying it::

    game = Game(config, seed=record.seed)
    for a in record.actions:
        game.play_forced()
        game.apply(a)
    game.play_forced()

gives the finished game, whose totals and winners are the record's. A record whose ``winners``
are empty is an unfinished game (a play session stopped midway): its replay ends at a decision
still to be made, with the totals and hands of the record.

Loading reads JSON only and never runs anything from the file; every way a file can be wrong
(missing, unreadable, not a regular file, over a limit, an older version, malformed, nested too
deep) is one ``ValueError`` with one clear line. The limits (:mod:`odin_lab.evaluation.limits`):
a file of at most ``MAX_RECORDS_BYTES`` (256 MiB), ``MAX_RECORDS_GAMES`` games, each of at most
``MAX_ACTIONS`` actions; a replay walks at most ``MAX_DECISIONS`` decisions, and
:func:`iter_steps` holds two states at a time whatever the game's length.
"""

from __future__ import annotations

import copy
import json
import reprlib
from collections.abc import Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from odin_env.cards import GOAT_BIT, GOAT_PENALTY, MAX_HAND, names
from odin_env.rules import PHASE_NAMES, Config, Game
from odin_env.spec import PASS, PLAY_BITS, is_take, taken_card
from odin_lab.evaluation.limits import (
    MAX_ACTIONS,
    MAX_DECISIONS,
    MAX_RECORDS_BYTES,
    MAX_RECORDS_GAMES,
    MAX_SPEC_CHARS,
    parse_json,
    read_bounded,
)
from odin_lab.evaluation.tournament import GameRecord
from odin_lab.files import write_atomic

RECORDS_FORMAT = "odin-lab-games"
"""The ``"format"`` value of every records file (tournament.json included)."""
RECORDS_VERSION = 2
"""The version this lab writes and reads. Version 1 (tournament.json before the format was
named) kept no moves, so its games cannot be replayed."""


@dataclass(frozen=True)
class RecordsFile:
    """A loaded records file: the game settings, one agent spec per agent index (``"human"``
    for a person), the games; ``extra`` holds the file's other top-level keys (a tournament's
    summary, ``"unfinished"``), as read."""

    config: Config
    specs: tuple[str, ...]
    games: tuple[GameRecord, ...]
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def unfinished(self) -> bool:
        """The file holds a game stopped before its end (a play session interrupted)."""
        return any(not game.winners for game in self.games)


@dataclass(frozen=True)
class Step:
    """One decision of a replayed game: ``game`` is a copy of the state just before it (its
    ``current`` is ``seat``), ``action`` what ``seat`` did, ``forced`` whether it was the only
    legal action (applied by ``play_forced``, not in the record). The last step of
    :func:`replay_steps` is the state after the game's last decision, with ``action`` -1:
    ``seat`` is -1 when the game is over, else the seat whose decision is pending (an
    unfinished game)."""

    game: Game
    seat: int
    action: int
    forced: bool


# -- writing -----------------------------------------------------------------------------------


def config_dict(config: Config) -> dict:
    """The game settings as written in a records file (every ``Config`` field but ``seed``;
    ``goat`` only when set, so a file of a game without the Goat is as it always was)."""
    return {k: v for k, v in asdict(config).items() if k != "seed" and (k != "goat" or v)}


def records_text(document: Mapping[str, Any]) -> str:
    """``document`` (a dict whose last key is ``"game_records"``) as JSON text: indented, with
    each game record on one line, so that a file of thousands of games stays readable."""
    games = document["game_records"]
    head = {k: v for k, v in document.items() if k != "game_records"}
    text = json.dumps({**head, "game_records": []}, indent=1)
    if not games:
        return text + "\n"
    body = ",\n  ".join(json.dumps(g, separators=(", ", ": ")) for g in games)
    # The empty list is the document's last item: json escapes quotes inside strings, so the
    # last occurrence of the key is the real one.
    before, key, after = text.rpartition('"game_records": []')
    return f'{before}"game_records": [\n  {body}\n ]{after}\n'


def write_records(
    path: Path,
    config: Config,
    specs: Sequence[str],
    games: Iterable[GameRecord],
    *,
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Write a records file (atomically: a half-written file never replaces the old one).
    ``extra``: more top-level keys (not ``format``, ``version``, ``config``, ``agents_specs``
    or ``game_records``)."""
    document = records_document(config, specs, games, extra=extra)
    write_atomic(Path(path), records_text(document).encode())


def write_person_game(
    path: Path,
    config: Config,
    specs: Sequence[str],
    record: GameRecord,
    source: str,
    *,
    seed_chosen: bool = False,
    hints: Sequence[int] = (),
) -> None:
    """Write the game of a person against agents (``source``: ``"play"``, ``"web"``) as a
    records file of one game, marked ``"unfinished": true`` when it has no winners yet and
    ``"seed_chosen": true`` when the person chose the deal's seed (they could know every hand:
    a practice game, not a fair one). ``hints``: the steps (indices in ``record.actions``) at
    which the person asked the coach for a hint, kept as ``"hints"`` (sorted, each once)."""
    extra: dict[str, Any] = {"source": source}
    if not record.winners:
        extra["unfinished"] = True
    if seed_chosen:
        extra["seed_chosen"] = True
    if hints:
        extra["hints"] = sorted(set(hints))
    write_records(path, config, specs, [record], extra=extra)


def records_document(
    config: Config,
    specs: Sequence[str],
    games: Iterable[GameRecord],
    *,
    extra: Mapping[str, Any] | None = None,
) -> dict:
    """The dict :func:`write_records` writes."""
    head = {
        "format": RECORDS_FORMAT,
        "version": RECORDS_VERSION,
        "config": config_dict(config),
        "agents_specs": list(specs),
    }
    clash = sorted(set(extra or {}) & {*head, "game_records"})
    if clash:
        raise ValueError(f"extra keys may not replace the format's own keys; got {clash}")
    return {**head, **(extra or {}), "game_records": [g.to_dict() for g in games]}


# -- loading -----------------------------------------------------------------------------------


def load_records(path: Path | str, limit: int = MAX_RECORDS_BYTES) -> RecordsFile:
    """Read a records file (or ``tournament.json``); a folder means its ``tournament.json``.

    ``ValueError`` with one line naming the file and the problem when it is missing,
    unreadable, not a regular file (a FIFO or a device is refused at once, never waited on),
    over ``limit`` bytes (default ``MAX_RECORDS_BYTES``), not JSON or nested too deep, of
    another format or version, or malformed (a bad config, a spec that is not a string, a game
    record with missing or wrong fields, over ``MAX_RECORDS_GAMES`` games or ``MAX_ACTIONS``
    actions in a game)."""
    path = Path(path)
    if path.is_dir():
        path = path / "tournament.json"
    try:
        raw = read_bounded(path, limit)
    except FileNotFoundError:
        raise ValueError(f"{path}: no such records file") from None
    except OSError as e:
        raise ValueError(f"{path}: cannot read it ({e.strerror or type(e).__name__})") from None
    return parse_records(raw, str(path))


def parse_records(raw: bytes, name: str = "records", most: int | None = None) -> RecordsFile:
    """The records in ``raw`` (a records file's bytes); ``ValueError`` as :func:`load_records`
    gives it, starting with ``name``. ``most``: the most memory its parse may take, beside the
    readers' own bound (:func:`odin_lab.evaluation.limits.parse_json`)."""
    data = parse_json(raw, name, "a JSON records file", most)
    try:
        return _parse(data)
    except ValueError as e:
        raise ValueError(f"{name}: {e}") from None


def _parse(data: object) -> RecordsFile:
    if not isinstance(data, dict):
        raise ValueError(f"a records file holds a JSON object; got {type(data).__name__}")
    fmt, version = data.get("format"), data.get("version")
    if fmt is None and "game_records" in data:
        raise ValueError(
            "a version 1 tournament file: its games keep no moves and cannot be replayed "
            f"(re-run the tournament to write version {RECORDS_VERSION})"
        )
    if fmt != RECORDS_FORMAT:
        raise ValueError(
            f"not an odin-lab records file (format {_shown(fmt)}, not {RECORDS_FORMAT!r})"
        )
    if version != RECORDS_VERSION:
        raise ValueError(
            f"records version {_shown(version)}; this odin-lab reads version {RECORDS_VERSION} only"
        )
    for key in ("config", "agents_specs", "game_records"):
        if key not in data:
            raise ValueError(f"missing key {key!r}")
    config = _config(data["config"])
    specs = data["agents_specs"]
    if not isinstance(specs, list) or not specs or not all(isinstance(s, str) for s in specs):
        raise ValueError(f"agents_specs must be a non-empty list of strings; got {_shown(specs)}")
    if max(map(len, specs)) > MAX_SPEC_CHARS:
        raise ValueError(f"agents_specs: a spec over the limit of {MAX_SPEC_CHARS:,} characters")
    games = data["game_records"]
    if not isinstance(games, list):
        raise ValueError("game_records must be a list of game records")
    if len(games) > MAX_RECORDS_GAMES:
        raise ValueError(
            f"{len(games):,} games, over the limit of {MAX_RECORDS_GAMES:,} games in one file"
        )
    records = tuple(_record(g, k, config, len(specs)) for k, g in enumerate(games))
    extra = {k: v for k, v in data.items() if k not in _OWN_KEYS}
    return RecordsFile(config, tuple(specs), records, extra)


_OWN_KEYS = {"format", "version", "config", "agents_specs", "game_records"}
_CONFIG_FIELDS = [f.name for f in fields(Config) if f.name != "seed"]


def _config(data: object) -> Config:
    if not isinstance(data, dict):
        raise ValueError(f"config must be an object of Config fields; got {_shown(data)}")
    unknown = sorted(set(data) - set(_CONFIG_FIELDS))
    if unknown:
        raise ValueError(
            f"config: unknown field {_shown(unknown[0])}; allowed are {', '.join(_CONFIG_FIELDS)}"
        )
    for name, value in data.items():  # Config names a bad value whole: keep it short here
        if isinstance(value, (list, dict)) or len(repr(value)) > 40:
            raise ValueError(
                f"config: {name} must be a number or a short name; got {_shown(value)}"
            )
    try:
        return Config(**data)
    except (TypeError, ValueError) as e:
        raise ValueError(f"config: {e}") from None


def _ints(value: object, what: str, low: int, high: int | None, length: int | None = None) -> tuple:
    """``value`` as a tuple of ints ``>= low`` and ``<= high`` when given (``length`` of them
    when given); bools and floats are refused."""
    ok = isinstance(value, list) and all(
        type(v) is int and v >= low and (high is None or v <= high) for v in value
    )
    if not ok or (length is not None and len(value) != length):
        count = f"{length} " if length is not None else ""
        allowed = f"{low}-{high}" if high is not None else f">= {low}"
        raise ValueError(f"{what} must be a list of {count}integers {allowed}; got {_shown(value)}")
    return tuple(value)


def _record(data: object, k: int, config: Config, agents: int) -> GameRecord:
    where = f"game_records[{k}]"
    if not isinstance(data, dict):
        raise ValueError(f"{where} must be an object; got {_shown(data)}")
    required = [f.name for f in fields(GameRecord) if f.name != "actions"]
    missing = [name for name in required if name not in data]
    if missing:
        raise ValueError(f"{where}: missing field {missing[0]!r}")
    n = config.players
    for name in ("deal", "rotation", "seed"):
        value = data[name]
        if type(value) is not int or value < 0:
            raise ValueError(f"{where}.{name} must be an integer >= 0; got {_shown(value)}")
    if type(data["first_leader"]) is not int or not 0 <= data["first_leader"] < n:
        raise ValueError(f"{where}.first_leader must be a seat 0-{n - 1}")
    hands = data["hands"]
    if not isinstance(hands, list):
        raise ValueError(f"{where}.hands must be a list of per-hand penalties")
    most = MAX_HAND + (GOAT_PENALTY - 1) * config.goat  # the Goat costs 5 (G4)
    for h, hand in enumerate(hands):
        _ints(hand, f"{where}.hands[{h}]", 0, most, n)
    _ints(data["agents"], f"{where}.agents", 0, agents - 1, n)
    _ints(data["totals"], f"{where}.totals", 0, None, n)
    winners = _ints(data["winners"], f"{where}.winners", 0, n - 1)
    if len(set(winners)) != len(winners):
        raise ValueError(f"{where}.winners repeats a seat: {_shown(list(winners))}")
    actions = data.get("actions", [])
    if isinstance(actions, list) and len(actions) > MAX_ACTIONS:
        raise ValueError(
            f"{where}.actions: {len(actions):,} actions, over the limit of {MAX_ACTIONS:,} "
            "in one game"
        )
    _ints(actions, f"{where}.actions", 0, config.num_actions - 1)
    return GameRecord.from_dict(data)


_REPR = reprlib.Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlong = 2, 40, 40, 40


def _shown(value: object) -> str:
    """``value`` in a message: a short repr, whatever its size or nesting."""
    return _REPR.repr(value)[:80]


# -- replaying ---------------------------------------------------------------------------------


def describe_action(game: Game, action: int) -> str:
    """A short readable name of ``action`` in ``game``'s phase: ``pass``, ``play R3 Y3``,
    ``take Y5``."""
    if action == PASS:
        return "pass"
    if is_take(action):
        return f"take {names(1 << taken_card(action))}"
    if 0 <= action < len(PLAY_BITS) and PLAY_BITS[action]:
        return f"play {names(PLAY_BITS[action])}"
    return f"no action ({action})"


def _decisions(record: GameRecord, config: Config) -> Generator[tuple[Game, int, bool], None, Game]:
    """Replay ``record``: yield ``(game, action, forced)`` before each decision is applied
    (``game`` is the live state: copy it to keep it), at most :data:`MAX_DECISIONS` of them;
    return the last state. ``ValueError`` naming the action's index in ``record.actions`` when
    one is illegal or comes after the game's end, and when the game runs past the limit."""
    game = Game(config, seed=record.seed)
    deal, rotation, seed = map(_shown, (record.deal, record.rotation, record.seed))
    name = f"game (deal {deal}, rotation {rotation}, seed {seed})"
    if game.hand_leader != record.first_leader:
        raise ValueError(
            f"{name}: seat {game.hand_leader} leads the first hand, not seat "
            f"{record.first_leader} as the record says (another config or seed?)"
        )
    walked = 0

    def counted() -> None:
        nonlocal walked
        walked += 1
        if walked > MAX_DECISIONS:
            raise ValueError(
                f"{name}: over {MAX_DECISIONS:,} decisions, the limit of one replayed game"
            )

    for k, action in enumerate(record.actions):
        while len(game.legal) == 1:
            counted()
            yield game, game.legal[0], True
            game.apply(game.legal[0])
        if game.is_over:
            raise ValueError(
                f"{name}: actions[{k}] = {action} comes after the end of the game "
                f"({len(record.actions) - k} actions too many)"
            )
        if action not in game.legal:
            raise ValueError(
                f"{name}: actions[{k}] = {action} ({describe_action(game, action)}) is illegal "
                f"for seat {game.current} in phase {PHASE_NAMES[game.phase]} of hand "
                f"{game.hand_number}; {len(game.legal)} actions are legal there"
            )
        counted()
        yield game, action, False
        game.apply(action)
    while len(game.legal) == 1:
        counted()
        yield game, game.legal[0], True
        game.apply(game.legal[0])
    _check_outcome(record, game, name)
    return game


def _check_outcome(record: GameRecord, game: Game, name: str) -> None:
    if record.winners and not game.is_over:
        raise ValueError(
            f"{name}: the record's {len(record.actions)} actions stop before the end of the "
            f"game (seat {game.current} to {PHASE_NAMES[game.phase]} in hand {game.hand_number})"
        )
    if not record.winners and game.is_over:
        raise ValueError(f"{name}: recorded as unfinished, but its actions finish the game")
    for what, replayed, recorded in (
        ("hand penalties", [list(h) for h in game.history], [list(h) for h in record.hands]),
        ("totals", list(game.totals), list(record.totals)),
        ("winners", list(game.winners), list(record.winners)),
    ):
        if replayed != recorded:
            raise ValueError(
                f"{name}: the replay ends with {what} {_shown(replayed)}, the record says "
                f"{_shown(recorded)}"
            )


def replay(record: GameRecord, config: Config) -> Game:
    """Rebuild ``record``'s game from its seed and actions; return the last state (the game
    over, or for an unfinished record the decision pending). ``ValueError`` naming the
    action's index and value when an action is illegal, when the record's hands, totals or
    winners disagree with the replay, and past :data:`MAX_DECISIONS` decisions."""
    walk = _decisions(record, config)
    while True:
        try:
            next(walk)
        except StopIteration as end:
            return end.value


def iter_steps(record: GameRecord, config: Config) -> Iterator[Step]:
    """Every decision of ``record``'s game, forced ones included, each with a copy of the state
    before it, then one last :class:`Step` (action -1) holding the final state; made one at a
    time, so a reader that keeps only the last two holds two states whatever the game's length.
    Checked as :func:`replay` checks (the error comes when the walk reaches the problem)."""
    walk = _decisions(record, config)
    while True:
        try:
            game, action, forced = next(walk)
        except StopIteration as end:
            final = end.value
            break
        yield Step(copy_game(game), game.current, int(action), forced)
    yield Step(copy_game(final), -1 if final.is_over else final.current, -1, False)


def replay_steps(record: GameRecord, config: Config) -> list[Step]:
    """:func:`iter_steps` as a list (the game checked whole before it is returned)."""
    return list(iter_steps(record, config))


def goat_hands(record: GameRecord, config: Config) -> list[tuple[int, bool]]:
    """Per hand of ``record``'s Goat game: the seat the Goat was dealt to (G1), and whether it
    was still in a hand when the hand ended (costing 5, G4; not when its holder went out with
    it, nor when it lay on the table or in the discard). Checked as :func:`replay` checks."""
    hands: list[tuple[int, bool]] = []
    before: tuple[int, list[int]] = (0, [])  # the seat and hands before the latest decision

    def ended() -> None:  # the hand's last decision is its winner's going out
        seat, held = before
        hands[-1] = (hands[-1][0], any(h & GOAT_BIT for s, h in enumerate(held) if s != seat))

    for game, _, _ in _decisions(record, config):
        if len(game.history) == len(hands):  # the first decision of a hand
            if hands:
                ended()
            hands.append((next(s for s, h in enumerate(game.hands) if h & GOAT_BIT), False))
        before = (game.current, list(game.hands))
    if hands:
        ended()
    return hands


def copy_game(game: Game) -> Game:
    """An independent copy of ``game`` (its generator included; the frozen config shared)."""
    return copy.deepcopy(game, {id(game.config): game.config})


def check_game_index(records: RecordsFile, index: int) -> GameRecord:
    """Game ``index`` (0-based) of ``records``; ``ValueError`` naming the allowed range."""
    count = len(records.games)
    if not count:
        raise ValueError("the records file holds no games")
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
        raise ValueError(
            f"--game must be 0-{count - 1} (the file holds {count} game{'s' * (count > 1)}); "
            f"got {index}"
        )
    return records.games[index]


__all__ = [
    "RECORDS_FORMAT", "RECORDS_VERSION", "RecordsFile", "Step", "check_game_index",
    "config_dict", "copy_game", "describe_action", "goat_hands", "iter_steps", "load_records",
    "parse_records", "records_document", "records_text", "replay", "replay_steps",
    "write_person_game", "write_records",
]  # fmt: skip
