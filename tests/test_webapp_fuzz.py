"""Random bad values at every endpoint of the web app (hypothesis): each is refused with a 4xx
``{"error": "one line"}``, never a 500, and a refused request changes no game."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from urllib.parse import quote

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agents import make
from agents.registry import agent_names
from odin_env.rules import Config
from odin_lab.evaluation.records import write_records
from odin_lab.evaluation.tournament import play_deals
from odin_lab.webapp.app import create_app
from odin_lab.webapp.sessions import MAX_SEED, MAX_THRESHOLD

JSON = {"Content-Type": "application/json"}
FUZZ = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=10**18, max_value=10**4000)
    | st.floats()
    | st.text(max_size=30)
    | st.sampled_from(["²", "٣", "1e3", "NaN", "-0", " 2", "random", "ppo:/etc/passwd"])
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
deep = st.integers(min_value=1, max_value=20_000).map(lambda n: "[" * n + "]" * n)
"""Nesting from 1 level to far past the interpreter's recursion limit."""


def is_int(value: object, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def new_game_is_valid(body: dict) -> bool:
    """The rules of ``POST /api/games`` (sessions.parse_new_game), written out independently."""
    if set(body) - {"players", "opponents", "threshold", "seed"}:
        return False
    players = body.get("players")
    if not is_int(players, 2, 6) or "opponents" not in body:
        return False
    opponents = body["opponents"]
    if not (isinstance(opponents, list) and len(opponents) == players - 1):
        return False
    if not all(isinstance(o, str) and o in agent_names() for o in opponents):
        return False
    if "threshold" in body and not is_int(body["threshold"], 1, MAX_THRESHOLD):
        return False
    return "seed" not in body or body["seed"] is None or is_int(body["seed"], 0, MAX_SEED)


@st.composite
def bad_new_games(draw) -> dict:
    body = {"players": 2, "opponents": ["random"], "threshold": 5, "seed": 1}
    for _ in range(draw(st.integers(1, 3))):
        key = draw(st.sampled_from(["players", "opponents", "threshold", "seed", "extra"]))
        if draw(st.booleans()) and key in body:
            del body[key]
        else:
            body[key] = draw(values)
    assume(not new_game_is_valid(body))
    return body


def one_line_error(response, *, allow_ok: bool = False) -> None:
    if allow_ok and response.status_code == 200:
        return
    assert 400 <= response.status_code < 500, (response.status_code, response.text[:300])
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert isinstance(error, str) and error and "\n" not in error and len(error) < 1000


@pytest.fixture(scope="module")
def served():
    """An app with one records file of two games and a live game, and that game's id."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        config = Config(players=2, threshold=5)
        games = play_deals([make("random", seed=1), make("greedy")], config, 1, seed=4)
        write_records(root / "records" / "t.json", config, ["random", "greedy"], games)
        app = create_app(root / "web", root / "records", max_games=4)
        client = TestClient(app, raise_server_exceptions=False)
        response = client.post("/api/games", json={"players": 2, "opponents": ["random"]})
        assert response.status_code == 200
        yield app, client, response.json()["game_id"]


def unchanged(app, game_id: str):
    session = app.state.store._games[game_id]
    return session.game.snapshot(), session.turn, tuple(session.actions)


@FUZZ
@given(body=bad_new_games())
def test_bad_new_games_are_4xx_and_start_nothing(served, body):
    app, client, _ = served
    before = len(app.state.store)
    one_line_error(client.post("/api/games", content=json.dumps(body), headers=JSON))
    assert len(app.state.store) == before


@FUZZ
@given(
    body=st.binary(max_size=300)
    | deep.map(str.encode)
    | values.map(lambda v: json.dumps(v).encode())
)
def test_any_body_is_4xx_or_a_game_never_a_500(served, body):
    app, client, game_id = served
    before = unchanged(app, game_id)
    one_line_error(client.post("/api/games", content=body, headers=JSON), allow_ok=True)
    move = client.post(f"/api/games/{game_id}/move", content=body, headers=JSON)
    if move.status_code != 200:
        one_line_error(move)
        assert unchanged(app, game_id) == before


@FUZZ
@given(action=values, turn=values, extra=st.none() | st.tuples(st.text(max_size=8), values))
def test_bad_moves_are_4xx_and_change_nothing(served, action, turn, extra):
    app, client, game_id = served
    session = app.state.store._games[game_id]
    legal = [a["action"] for a in session.view()["legal"]]
    assume(
        extra is not None or not (type(action) is int and action in legal and turn == session.turn)
    )
    body = {"action": action, "turn": turn}
    if extra is not None:
        body[extra[0]] = extra[1]
    before = unchanged(app, game_id)
    one_line_error(
        client.post(f"/api/games/{game_id}/move", content=json.dumps(body), headers=JSON)
    )
    assert unchanged(app, game_id) == before


@FUZZ
@given(
    file=st.sampled_from(["records/t.json"]) | st.text(max_size=40),
    game=st.sampled_from(["0", "1", "2", "²", "9" * 5000]) | st.text(max_size=12),
    seat=st.sampled_from(["all", "0", "1", "²", "-1"]) | st.text(max_size=12),
)
def test_bad_replay_queries_are_4xx(served, file, game, seat):
    _, client, _ = served
    response = client.get("/api/replay", params={"file": file, "game": game, "seat": seat})
    valid = file == "records/t.json" and game in ("0", "1") and seat in ("all", "0", "1")
    one_line_error(response, allow_ok=valid)
    assert (response.status_code == 200) == valid


printable = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0x7E), max_size=24)


@FUZZ
@given(
    game_id=st.text(min_size=1, max_size=200).map(lambda s: quote(s, safe="")),
    kind=st.sampled_from(["text/plain", "", "application/jsonx", "multipart/form-data"])
    | printable,
    origin=st.none() | st.sampled_from(["null", "http://evil.example"]) | printable,
)
def test_bad_ids_types_and_origins_are_4xx(served, game_id, kind, origin):
    app, client, live = served
    assume(game_id != live)
    headers = {"Content-Type": kind} | ({} if origin is None else {"Origin": origin})
    before = unchanged(app, live)
    body = json.dumps({"action": 0, "turn": 0})
    one_line_error(client.get(f"/api/games/{game_id}"))
    one_line_error(client.post(f"/api/games/{game_id}/move", content=body, headers=headers))
    json_type = kind.split(";")[0].strip().lower() == "application/json"
    if not json_type or origin not in (None, "http://testserver"):
        one_line_error(client.post(f"/api/games/{live}/move", content=body, headers=headers))
    assert unchanged(app, live) == before
