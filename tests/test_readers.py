"""Every reader of the lab has a bound (issue 24, classes 1, 6, 7): records files are read only
when they are regular files within ``limits.MAX_RECORDS_BYTES``, with at most
``MAX_RECORDS_GAMES`` games of ``MAX_ACTIONS`` actions; a replay walks one decision at a time;
``evaluate.py`` refuses game counts and thresholds over the limits with one line and exit 2,
before any game is played."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import make
from odin_env.rules import Config
from odin_lab.commands import evaluate
from odin_lab.evaluation import limits, records
from odin_lab.evaluation.limits import read_bounded
from odin_lab.evaluation.records import iter_steps, load_records, records_document, write_records
from odin_lab.evaluation.tournament import play_deals, play_tournament

ROOT = Path(__file__).resolve().parents[1]


def one_game(path: Path, threshold: int = 5) -> None:
    config = Config(players=2, threshold=threshold)
    games = play_deals([make("random", seed=1), make("greedy")], config, 1, seed=4, rotate=False)
    write_records(path, config, ["random", "greedy"], games)


def returns_within(seconds: float, call) -> object:
    """``call()``'s result, failing the test when it has not returned after ``seconds``."""
    out: dict = {}

    def run() -> None:
        try:
            out["value"] = call()
        except BaseException as error:  # noqa: BLE001 - handed to the test
            out["error"] = error

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "the reader blocks"
    if "error" in out:
        raise out["error"]
    return out["value"]


# -- read_bounded: regular files only, a size limit ------------------------------------------


def test_a_fifo_a_device_and_a_folder_are_refused_at_once(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    for path, kind in [
        (tmp_path / "pipe.json", "a FIFO"),
        ("/dev/zero", "a character device"),
        (tmp_path, "a folder"),
    ]:
        with pytest.raises(ValueError, match=f"not a regular file \\({kind}\\)"):
            returns_within(10, lambda p=path: read_bounded(p, 1000))


def test_a_file_over_the_limit_is_refused_naming_it(tmp_path):
    (tmp_path / "big").write_bytes(b"x" * 2049)
    assert read_bounded(tmp_path / "big", 2049) == b"x" * 2049
    with pytest.raises(ValueError, match="2,049 bytes, over the limit of 2 KiB"):
        read_bounded(tmp_path / "big", 2048)


# -- load_records ------------------------------------------------------------------------------


def test_load_records_refuses_what_is_no_regular_file_without_blocking(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "loop.json").symlink_to(tmp_path / "loop.json")
    for path, says in [
        (tmp_path / "pipe.json", "not a regular file"),
        (Path("/dev/zero"), "not a regular file"),
        (tmp_path / "loop.json", "cannot read it"),
    ]:
        with pytest.raises(ValueError, match=says):
            returns_within(10, lambda p=path: load_records(p))


@pytest.mark.parametrize("depth", [999, 1_000, 100_000])
def test_deeply_nested_json_is_one_valueerror(tmp_path, depth):
    for text in ("[" * depth, "[" * depth + "]" * depth, '{"config": ' + "[" * depth + "]" * depth):
        (tmp_path / "deep.json").write_text(text)
        with pytest.raises(ValueError) as error:
            load_records(tmp_path / "deep.json")
        assert "\n" not in str(error.value) and len(str(error.value)) < 300


def test_a_records_file_over_the_byte_limit_is_refused(tmp_path):
    one_game(tmp_path / "g.json")
    size = (tmp_path / "g.json").stat().st_size
    assert load_records(tmp_path / "g.json", limit=size).games
    with pytest.raises(ValueError, match="over the limit of"):
        load_records(tmp_path / "g.json", limit=size - 1)


def test_games_and_actions_over_the_limits_are_refused(tmp_path, monkeypatch):
    one_game(tmp_path / "g.json")
    data = json.loads((tmp_path / "g.json").read_text())
    actions = len(data["game_records"][0]["actions"])
    monkeypatch.setattr(records, "MAX_ACTIONS", actions - 1)
    with pytest.raises(ValueError, match=f"{actions:,} actions, over the limit of {actions - 1}"):
        load_records(tmp_path / "g.json")
    monkeypatch.setattr(records, "MAX_ACTIONS", actions)
    monkeypatch.setattr(records, "MAX_RECORDS_GAMES", 0)
    with pytest.raises(ValueError, match="1 games, over the limit of 0 games"):
        load_records(tmp_path / "g.json")


def test_a_replay_past_the_decision_limit_stops(monkeypatch):
    config = Config(players=2, threshold=5)
    (record,) = play_deals([make("random", seed=1), make("greedy")], config, 1, 4, rotate=False)
    decisions = len(list(iter_steps(record, config))) - 1
    monkeypatch.setattr(records, "MAX_DECISIONS", decisions - 1)
    with pytest.raises(ValueError, match=f"over {decisions - 1:,} decisions"):
        records.replay(record, config)
    monkeypatch.setattr(records, "MAX_DECISIONS", decisions)
    assert records.replay(record, config).is_over


def test_a_long_game_is_told_holding_two_states_at_a_time():
    """iter_steps makes its steps one at a time: after the first step is taken, the game's
    later states have not been built yet (a list of 55,783 copies was issue 24's 11 GB)."""
    config = Config(players=2, threshold=100)
    (record,) = play_deals([make("random", seed=2), make("random", seed=3)], config, 1, 9,
                           rotate=False)  # fmt: skip
    made = []
    real_copy = records.copy_game

    def counting(game):
        made.append(1)
        return real_copy(game)

    records.copy_game = counting
    try:
        steps = iter_steps(record, config)
        next(steps)
        assert len(made) == 1
        total = sum(1 for _ in steps) + 1
    finally:
        records.copy_game = real_copy
    assert total == len(made) > len(record.actions)


def test_the_limits_hold_the_longest_game_the_lab_plays():
    """A game to the highest threshold fits every limit that bounds a game record."""
    config = Config(players=2, threshold=1000)
    (record,) = play_deals([make("random", seed=2), make("random", seed=3)], config, 1, 5,
                           rotate=False)  # fmt: skip
    assert len(record.actions) < limits.MAX_ACTIONS
    document = records_document(config, ["random", "random"], [record])
    assert len(json.dumps(document)) < limits.MAX_RECORDS_BYTES


# -- the command line: one line and exit 2, before any game ---------------------------------


HUGE = str(10**30)
TWO = ["--agents", "random", "random"]
GAMES = "--games must be 1-1,000,000"
THRESHOLD = "threshold must be 1-1000"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["tournament", *TWO, "--games", HUGE], GAMES),
        (["tournament", *TWO, "--games", "1000001"], GAMES),
        (["seating", "--agent", "random", "--games", HUGE], GAMES),
        (["leaderboard", "--agents", "random", "greedy", "--games", HUGE], GAMES),
        (["showcase", "--games", HUGE], GAMES),
        (["tournament", *TWO, "--threshold", HUGE], THRESHOLD),
        (["watch", *TWO, "--threshold", HUGE], THRESHOLD),
        (["thresholds", *TWO, "--thresholds", "5", HUGE], THRESHOLD),
        (["tournament", *TWO, "--workers", HUGE], "--workers must be 1-256"),
        (["leaderboard", "--agents", "random", "greedy", "--workers", "257"], "--workers must be"),
        (["replay", "/dev/zero"], "not a regular file"),
    ],
)
def test_evaluate_refuses_counts_and_thresholds_over_the_limits(capsys, tmp_path, argv, says):
    if argv[0] not in ("replay", "watch"):
        argv = [*argv, "--out", str(tmp_path / "out"), "--no-progress"]
    code = returns_within(60, lambda: evaluate.main(argv))
    err = capsys.readouterr().err
    assert code == 2 and says in err and err.count("\n") == 1, err
    assert not (tmp_path / "out").exists()


def test_play_tournament_refuses_more_deals_than_the_limit_before_playing():
    with pytest.raises(ValueError, match="deals must be 1-1,000,000"):
        play_tournament(["random", "random"], Config(players=2), 10**30, progress=False)


@pytest.mark.parametrize("kind", ["fifo", "deep"])
def test_evaluate_replay_of_a_fifo_or_a_deep_file_is_one_line(tmp_path, kind):
    path = tmp_path / "x.json"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.write_text("[" * 200_000)
    done = subprocess.run(
        [sys.executable, "evaluate.py", "replay", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def nest(depth: int) -> object:
    value: object = 0
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(
    "change",
    [
        lambda d: d.update(format="x" * 100_000),
        lambda d: d.update(format=nest(900)),
        lambda d: d.update(version=nest(900)),
        lambda d: d["config"].update(players=nest(900)),
        lambda d: d["config"].update(first_player="x" * 100_000),
        lambda d: d["config"].update({"y" * 100_000: 1}),
        lambda d: d.update(agents_specs=[nest(900)]),
        lambda d: d["game_records"][0].update(winners=[0] * 100_000),
        lambda d: d["game_records"][0].update(totals=[10**4000, 0]),
        lambda d: d["game_records"][0].update(actions=list(range(3000)) * 30),
        lambda d: d["game_records"][0].update(hands=[[0, 1]] * 100_000),
        lambda d: d["game_records"][0].update(seed=nest(900)),
    ],
)
def test_a_huge_or_deep_value_in_a_records_file_is_one_short_line(tmp_path, change):
    one_game(tmp_path / "g.json")
    data = json.loads((tmp_path / "g.json").read_text())
    change(data)
    (tmp_path / "g.json").write_text(json.dumps(data))
    with pytest.raises(ValueError) as error:
        loaded = load_records(tmp_path / "g.json")
        records.replay(loaded.games[0], loaded.config)  # what evaluate.py replay does next
    message = str(error.value)
    assert "\n" not in message and len(message) < 400, message[:500]


def test_an_agent_spec_over_the_limit_is_refused(tmp_path):
    one_game(tmp_path / "g.json")
    data = json.loads((tmp_path / "g.json").read_text())
    data["agents_specs"][1] = "x" * limits.MAX_SPEC_CHARS
    (tmp_path / "g.json").write_text(json.dumps(data))
    assert load_records(tmp_path / "g.json").specs[1] == "x" * limits.MAX_SPEC_CHARS
    data["agents_specs"][1] += "x"
    (tmp_path / "g.json").write_text(json.dumps(data))
    with pytest.raises(ValueError, match="a spec over the limit of 4,096 characters"):
        load_records(tmp_path / "g.json")


junk = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**30, max_value=10**4000)
    | st.floats(allow_nan=False)
    | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=10,
)


def paths_of(value: object, here: tuple = ()) -> list[tuple]:
    """Every place in a JSON document, as the keys and indexes that reach it."""
    found = [here]
    if isinstance(value, dict):
        for key, item in value.items():
            found += paths_of(item, (*here, key))
    elif isinstance(value, list):
        for k, item in enumerate(value[:3]):
            found += paths_of(item, (*here, k))
    return found


@pytest.fixture(scope="module")
def document(tmp_path_factory) -> dict:
    path = tmp_path_factory.mktemp("doc") / "g.json"
    one_game(path)
    return json.loads(path.read_text())


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_any_value_anywhere_in_a_records_file_is_read_or_one_valueerror(document, data):
    """A value replaced anywhere in a valid file: loading and replaying it either works or
    raises one ``ValueError`` of one short line, never anything else."""
    changed = copy.deepcopy(document)
    where = data.draw(st.sampled_from(paths_of(changed)[1:]))
    parent = changed
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = data.draw(junk)
    raw = json.dumps(changed).encode()
    try:
        loaded = records.parse_records(raw, "g.json")
        for game in loaded.games:
            records.replay(game, loaded.config)
    except ValueError as error:
        assert "\n" not in str(error) and len(str(error)) < 400, str(error)[:500]
