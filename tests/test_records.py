"""Records files (``odin_lab.evaluation.records``, docs/records.md): every recorded game replays,
from its seed and its non-forced actions, to the totals and winners it had, on both tournament
engines, for every agent kind and 2-6 players; corrupted records and files are refused with one
clear line; the file format round-trips."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from probe_agents import ObsHash

from agents.registry import agent_names, has_batch_form, make, make_batch_agent
from odin_env.rules import PASS, Config, Game
from odin_lab.evaluation import resume, studies
from odin_lab.evaluation.records import (
    RECORDS_FORMAT,
    RECORDS_VERSION,
    load_records,
    replay,
    replay_steps,
    write_records,
)
from odin_lab.evaluation.tournament import GameRecord, play_deals

_CHEAP = {"search": "search:1"}
"""Cheaper settings of slow agents (the same code, fewer playouts): the test is about records."""


def _kinds(batched: bool) -> list[str]:
    """Every agent kind (on the batched engine: those with a batched form), cheap settings."""
    names = [s for s in agent_names() if has_batch_form(s) or not batched]
    return [_CHEAP.get(s, s) for s in names]


_SINGLE: dict[tuple[str, int], object] = {}
_BATCHED: dict[str, object] = {}


def _agents(specs: list[str], batched: bool) -> list:
    """The agent objects of ``specs``, built once per test session (a PPO model loads once):
    one object per (spec, seat) on the single engine, as ``play_tournament`` builds them."""
    if batched:
        return [_BATCHED.setdefault(s, make_batch_agent(s, seed=0)) for s in specs]
    return [_SINGLE.setdefault((s, i), make(s, seed=0)) for i, s in enumerate(specs)]


@st.composite
def tables(draw) -> tuple[Config, list[str], bool, int]:
    players = draw(st.integers(2, 6))
    batched = draw(st.booleans())
    specs = draw(st.lists(st.sampled_from(_kinds(batched)), min_size=players, max_size=players))
    config = Config(
        players=players,
        threshold=draw(st.integers(1, 10)),
        first_player=draw(st.sampled_from(["rotate", "winner", "random", "fixed"])),
    )
    return config, specs, batched, draw(st.integers(0, 2**32))


def _check_replays(record: GameRecord, config: Config) -> None:
    game = replay(record, config)
    assert game.is_over
    assert tuple(game.totals) == record.totals and game.winners == record.winners
    assert tuple(game.history) == record.hands
    steps = replay_steps(record, config)
    # The record holds exactly the decisions with a choice; the others had one legal action.
    chosen = [s for s in steps[:-1] if not s.forced]
    assert [s.action for s in chosen] == list(record.actions)
    assert all(len(s.game.legal) >= 2 for s in chosen)
    assert all(s.game.legal == [s.action] for s in steps[:-1] if s.forced)
    last = steps[-1]
    assert last.action == -1 and last.seat == -1 and last.game.totals == game.totals


_PPO_ELSEWHERE = "ignore:PPO model .* was trained for 4 players"


@pytest.mark.filterwarnings(_PPO_ELSEWHERE)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_every_recorded_game_replays_to_its_totals_and_winners(table):
    config, specs, batched, seed = table
    engine = "batched" if batched else "single"
    deal = seed % 1000  # a deal other than 0: the record's seed is the deal's, not 0's
    agents = _agents(specs, batched)
    [record] = play_deals(agents, config, range(deal, deal + 1), seed, rotate=False, engine=engine)
    assert record.actions and record.deal == deal
    _check_replays(record, config)


@pytest.mark.filterwarnings(_PPO_ELSEWHERE)
@pytest.mark.parametrize("batched", [False, True], ids=["single", "batched"])
def test_every_agent_kind_at_one_table_replays(batched):
    """Every kind once, whatever hypothesis draws: all on the single engine, the
    batched kinds on the batched engine (at tables of at most 6, the last one filled up with
    the first kinds)."""
    kinds = _kinds(batched)
    engine = "batched" if batched else "single"
    for start in range(0, len(kinds), 6):
        specs = (kinds[start : start + 6] + kinds)[: max(2, min(6, len(kinds) - start))]
        config = Config(players=len(specs), threshold=10)
        for record in play_deals(_agents(specs, batched), config, 1, seed=11, engine=engine):
            _check_replays(record, config)


def test_both_engines_record_the_same_actions():
    """A deterministic agent plays the same games on both engines, so the records (actions
    included) are equal; the batched engine applies forced decisions itself and records
    only the others."""
    config = Config(players=3, threshold=10)
    table = [ObsHash(salt) for salt in range(3)]
    single = play_deals(table, config, 4, seed=5, engine="single")
    batched = play_deals(table, config, 4, seed=5, engine="batched", batch=5)
    assert [r.actions for r in batched] == [r.actions for r in single]
    assert all(len(r.actions) > 10 for r in single)


@pytest.fixture(scope="module")
def game() -> tuple[GameRecord, Config]:
    config = Config(players=3, threshold=8)
    record = play_deals([make("greedy")] * 3, config, 1, seed=3, rotate=False)[0]
    return record, config


def _refusal(record: GameRecord, config: Config) -> str:
    with pytest.raises(ValueError) as caught:
        replay(record, config)
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_an_illegal_action_is_refused_naming_its_index_and_value(game):
    record, config = game
    # A pass where the seat leads a trick (the first decision of a hand is a lead).
    bad = replace(record, actions=(PASS, *record.actions[1:]))
    message = _refusal(bad, config)
    assert "actions[0] = 3579 (pass) is illegal" in message and "phase lead" in message
    k = len(record.actions) // 2
    steps = [s for s in replay_steps(record, config) if not s.forced]
    wrong = next(a for a in range(3634) if a not in steps[k].game.legal)
    message = _refusal(replace(record, actions=(*record.actions[:k], wrong)), config)
    assert f"actions[{k}] = {wrong}" in message


def test_wrong_outcomes_and_wrong_lengths_are_refused(game):
    record, config = game
    totals = (record.totals[0] + 1, *record.totals[1:])
    assert "totals" in _refusal(replace(record, totals=totals), config)
    others = tuple(s for s in range(3) if s not in record.winners)
    assert "winners" in _refusal(replace(record, winners=others), config)
    hands = (tuple(reversed(record.hands[0])), *record.hands[1:])
    if hands != record.hands:
        assert "hand penalties" in _refusal(replace(record, hands=hands), config)
    message = _refusal(replace(record, actions=record.actions + (PASS,)), config)
    assert "comes after the end of the game" in message
    message = _refusal(replace(record, actions=record.actions[:-3]), config)
    assert "stop before the end of the game" in message
    message = _refusal(record, replace(config, players=4))
    assert "leads the first hand" in message or "illegal" in message


def test_an_unfinished_game_replays_to_its_pending_decision(game):
    record, config = game
    k = len(record.actions) // 2
    partial = Game(config, seed=record.seed)
    for action in record.actions[:k]:
        partial.play_forced()
        partial.apply(action)
    partial.play_forced()
    unfinished = replace(
        record,
        actions=record.actions[:k],
        hands=tuple(partial.history),
        totals=tuple(partial.totals),
        winners=(),
    )
    rebuilt = replay(unfinished, config)
    assert not rebuilt.is_over and rebuilt.snapshot() == partial.snapshot()
    last = replay_steps(unfinished, config)[-1]
    assert last.action == -1 and last.seat == partial.current
    # Claiming a finished game is unfinished is refused too.
    message = _refusal(replace(record, winners=()), config)
    assert "unfinished" in message


def test_steps_are_independent_copies_before_each_decision(game):
    record, config = game
    steps = replay_steps(record, config)
    for before, after in zip(steps, steps[1:]):
        assert before.game.current == before.seat
        snapshot = before.game.snapshot()
        # Applying the step's action to its own copy gives the next step's state, and
        # changes no other step.
        before.game.apply(before.action)
        assert before.game.snapshot() == after.game.snapshot()
        assert snapshot != after.game.snapshot()
    assert steps[-1].game.is_over


# -- files -------------------------------------------------------------------------------------


def test_a_records_file_round_trips_and_has_the_documented_keys(game, tmp_path):
    record, config = game
    path = tmp_path / "g.json"
    write_records(path, config, ["greedy"] * 3, [record], extra={"source": "test"})
    data = json.loads(path.read_text())
    assert list(data)[:4] == ["format", "version", "config", "agents_specs"]
    assert data["format"] == RECORDS_FORMAT and data["version"] == RECORDS_VERSION == 2
    assert data["game_records"][0]["actions"] == list(record.actions)
    loaded = load_records(path)
    assert loaded.config == config and loaded.specs == ("greedy",) * 3
    assert loaded.games == (record,) and loaded.extra == {"source": "test"}
    assert not loaded.unfinished
    before = path.read_bytes()
    with pytest.raises(ValueError, match="format's own keys"):
        write_records(path, config, ["greedy"] * 3, [record], extra={"version": 3})
    assert path.read_bytes() == before


def test_tournament_json_is_a_records_file_whose_games_replay(tmp_path):
    config = Config(players=2, threshold=5)
    studies.tournament(["greedy", "random"], config, 4, 1, tmp_path, progress=False)
    loaded = load_records(tmp_path)  # a folder means its tournament.json
    assert loaded.extra["study"] == "tournament" and loaded.extra["games"] == 4
    assert len(loaded.games) == 4 and loaded.specs == ("greedy", "random")
    for record in loaded.games:
        _check_replays(record, loaded.config)
    data = json.loads((tmp_path / "tournament.json").read_text())
    data.pop("format"), data.pop("version")
    data["partial"] = True
    (tmp_path / "tournament.json").write_text(json.dumps(data))
    key = {k: data[k] for k in ("agents_specs", "config", "seed", "deals")}
    with pytest.raises(ValueError, match="version 1 tournament file: its games keep no moves"):
        resume.partial_records(tmp_path, key)


def _doctored(game, tmp_path, change) -> str:
    record, config = game
    path = tmp_path / "bad.json"
    write_records(path, config, ["greedy"] * 3, [record])
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data) if not isinstance(data, str) else data)
    with pytest.raises(ValueError) as caught:
        load_records(path)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(str(path))
    return message


def _set(*keys, value=None, drop=False):
    def change(data):
        for key in keys[:-1]:
            data = data[key]
        if drop:
            del data[keys[-1]]
        else:
            data[keys[-1]] = value

    return change


@pytest.mark.parametrize(
    ("change", "says"),
    [
        (_set("format", drop=True), "version 1 tournament file"),
        (_set("format", value="other"), "not an odin-lab records file"),
        (_set("version", value=3), "reads version 2 only"),
        (_set("config", "players", value=7), "config: players must be 2-6"),
        (_set("config", "speed", value=1), "unknown field 'speed'"),
        (_set("agents_specs", value=[1, 2, 3]), "agents_specs must be"),
        (_set("game_records", value={}), "game_records must be a list"),
        (_set("game_records", 0, "totals", drop=True), "missing field 'totals'"),
        (_set("game_records", 0, "actions", 0, value=5000), "actions must be a list"),
        (_set("game_records", 0, "actions", 0, value=True), "actions must be a list"),
        (_set("game_records", 0, "agents", value=[0, 1, 3]), "agents must be a list of 3"),
        (_set("game_records", 0, "seed", value=-1), "seed must be an integer >= 0"),
        (_set("game_records", 0, "winners", value=[1, 1]), "repeats a seat"),
        (_set("game_records", 0, "hands", 0, value=[1, 2]), "hands[0] must be a list of 3"),
    ],
)
def test_a_malformed_file_is_refused_with_one_line(game, tmp_path, change, says):
    assert says in _doctored(game, tmp_path, change)


def test_missing_and_unreadable_files_are_refused(tmp_path):
    for path, says in (
        (tmp_path / "none.json", "no such records file"),
        (tmp_path / "empty", "no such records file"),  # a folder without tournament.json
    ):
        (tmp_path / "empty").mkdir(exist_ok=True)
        with pytest.raises(ValueError, match=says):
            load_records(path)
    (tmp_path / "junk.json").write_text("{not json")
    with pytest.raises(ValueError, match="not a JSON records file"):
        load_records(tmp_path / "junk.json")
    (tmp_path / "list.json").write_text("[1, 2]")
    with pytest.raises(ValueError, match="holds a JSON object"):
        load_records(tmp_path / "list.json")
