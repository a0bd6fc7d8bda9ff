"""The web app's HTTP interface (FastAPI's TestClient, no browser): bad requests are refused with
one-line 4xx messages and leave the game unchanged, no response in play carries another seat's
hidden cards, games are kept apart and capped, finished games are saved and replay."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from odin_env.cards import card_name, cards_of
from odin_env.combos import combo_index
from odin_env.rules import PASS, TAKE, Config, Game
from odin_lab.evaluation.records import load_records, replay, write_records
from odin_lab.evaluation.tournament import play_deals
from odin_lab.webapp.__main__ import main
from odin_lab.webapp.app import create_app
from odin_lab.webapp.views import seat_view

ROOT = Path(__file__).resolve().parents[1]
CARD = re.compile(r"\b[RYGBPO][1-9]\b")
JSON = {"Content-Type": "application/json"}


@pytest.fixture
def app(tmp_path):
    return create_app(tmp_path / "web", tmp_path / "records", max_games=4)


@pytest.fixture
def client(app):
    return TestClient(app)


def start(client, players=2, opponents=("random",), threshold=5, seed=3) -> dict:
    body = {"players": players, "opponents": list(opponents), "threshold": threshold}
    if seed is not None:
        body["seed"] = seed
    response = client.post("/api/games", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def state(app, game_id: str) -> tuple:
    """Everything the server keeps of a game: a refused request must change none of it."""
    session = app.state.store._games[game_id]
    return session.game.snapshot(), session.turn, tuple(session.actions), tuple(session.log)


def refused(response, status: int) -> str:
    assert response.status_code == status, response.text
    message = response.json()["error"]
    assert isinstance(message, str) and message and "\n" not in message
    return message


def first_legal(data: dict) -> dict:
    return {"action": data["view"]["legal"][0]["action"], "turn": data["view"]["turn"]}


# -- refusals ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"{not json", "malformed JSON"),
        (b"", "malformed JSON"),
        (b"\xff\xfe", "malformed JSON"),
        (b"[12, 0]", "JSON object"),
        (b'{"turn": 0}', "missing field 'action'"),
        (b'{"action": 12}', "missing field 'turn'"),
        (b'{"action": 12, "turn": 0, "seat": 1}', "unknown field 'seat'"),
        (b'{"action": "12", "turn": 0}', "not an integer"),
        (b'{"action": 12.0, "turn": 0}', "not an integer"),
        (b'{"action": true, "turn": 0}', "not an integer"),
        (b'{"action": null, "turn": 0}', "not an integer"),
        (b'{"action": -1, "turn": 0}', "out of range"),
        (b'{"action": 3634, "turn": 0}', "out of range"),
        (b'{"action": 12, "turn": "0"}', "turn must be an integer"),
    ],
)
def test_malformed_moves_are_refused_with_400_and_change_nothing(app, client, body, says):
    data = start(client)
    before = state(app, data["game_id"])
    response = client.post(f"/api/games/{data['game_id']}/move", content=body, headers=JSON)
    assert says in refused(response, 400)
    assert state(app, data["game_id"]) == before


def test_an_oversized_body_is_refused_with_413(app, client):
    data = start(client)
    before = state(app, data["game_id"])
    response = client.post(
        f"/api/games/{data['game_id']}/move", content=b" " * 20_000, headers=JSON
    )
    refused(response, 413)
    assert state(app, data["game_id"]) == before


def test_unknown_game_ids_get_404_and_other_games_are_unchanged(app, client):
    data = start(client)
    before = state(app, data["game_id"])
    for game_id in ("nope", data["game_id"][:-1], data["game_id"] + "x"):
        assert "unknown game id" in refused(client.get(f"/api/games/{game_id}"), 404)
        move = client.post(f"/api/games/{game_id}/move", json=first_legal(data))
        assert "unknown game id" in refused(move, 404)
    refused(client.get("/api/no/such/path"), 404)
    assert state(app, data["game_id"]) == before


def test_illegal_moves_get_422_and_change_nothing(app, client):
    data = start(client, seed=1)  # seed 1: the person leads the first trick
    game_id, view = data["game_id"], data["view"]
    game = app.state.store._games[game_id].game
    assert view["phase"] == "lead" and game.current == 0
    other_hand = next(c for c in cards_of(game.hands[1]))
    illegal = [
        PASS,  # a leader cannot pass
        TAKE + 0,  # nothing to take
        combo_index([other_hand]),  # a card of the other seat's hand
    ]
    before = state(app, game_id)
    for action in illegal:
        assert action not in game.legal
        response = client.post(
            f"/api/games/{game_id}/move", json={"action": action, "turn": view["turn"]}
        )
        message = refused(response, 422)
        assert f"action {action}" in message and "legal are" in message
        assert state(app, game_id) == before


def test_moves_out_of_turn_get_409_and_change_nothing(app, client):
    data = start(client)
    game_id = data["game_id"]
    move = first_legal(data)
    before = state(app, game_id)
    for turn in (move["turn"] - 1, move["turn"] + 1, 10**6):
        response = client.post(f"/api/games/{game_id}/move", json={**move, "turn": turn})
        assert "out of turn" in refused(response, 409)
        assert state(app, game_id) == before
    assert client.post(f"/api/games/{game_id}/move", json=move).status_code == 200
    # The same request again (a double click, a second tab) answers a decision already taken.
    after = state(app, game_id)
    assert "out of turn" in refused(client.post(f"/api/games/{game_id}/move", json=move), 409)
    assert state(app, game_id) == after


def play_out(client, data: dict, check=None) -> dict:
    """Play the person's first legal action until the game ends; ``check(response)`` each."""
    while not data["over"]:
        response = client.post(f"/api/games/{data['game_id']}/move", json=first_legal(data))
        assert response.status_code == 200, response.text
        data = response.json()
        if check is not None:
            check(data)
    return data


def test_an_agent_at_a_table_size_it_was_not_trained_for_is_noted_not_warned(client):
    # The bundled ppo has models for 2 and 4 players: at 6 it plays the 4-player one.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")  # every warning of any thread, not once per place
        opening = start(client, players=6, opponents=["ppo", "random", "ppo", "ppo", "greedy"])
        data = play_out(client, opening)
    note = "its model was trained for 4 players, not 6: expect weaker play"
    assert opening["notes"] == [f"ppo (seats 1, 3, 4): {note}"] == data["notes"]
    assert [str(w.message) for w in caught] == []  # the console is told nothing more
    assert start(client, players=4, opponents=["ppo"] * 3)["notes"] == []
    assert start(client, players=3, opponents=["ppo", "random"])["notes"] == [
        f"ppo (seat 1): {note.replace('not 6', 'not 3')}"
    ]


def test_the_form_first_shows_the_search_and_the_dmc_network_and_they_play_every_size(client):
    offered = client.get("/api/agents").json()
    defaults = offered["defaults"]
    assert defaults[:2] == ["search", "dmc"] and len(defaults) == max(offered["players"]) - 1
    assert set(defaults) <= set(offered["agents"])
    for players in offered["players"]:
        opening = start(client, players=players, opponents=defaults[: players - 1], seed=players)
        names = [seat["name"] for seat in opening["view"]["seats"][1:]]
        assert names == [f"{spec} (seat {s})" for s, spec in enumerate(defaults[: players - 1], 1)]
        assert opening["notes"] == []  # dmc is one network for every table size


def test_moves_after_the_end_get_409(app, client):
    data = play_out(client, start(client))
    before = state(app, data["game_id"])
    response = client.post(
        f"/api/games/{data['game_id']}/move", json={"action": PASS, "turn": data["view"]["turn"]}
    )
    assert "the game is over" in refused(response, 409)
    assert state(app, data["game_id"]) == before


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"players": 7, "opponents": ["random"] * 6}, "players must be an integer 2-6"),
        ({"players": "2", "opponents": ["random"]}, "players must be an integer 2-6"),
        ({"players": 3, "opponents": ["random"]}, "a list of 2 agent names"),
        ({"players": 2, "opponents": "random"}, "a list of 1 agent names"),
        ({"players": 2, "opponents": ["ppo:/etc/passwd"]}, "unknown opponent"),
        ({"players": 2, "opponents": ["human"]}, "allowed are random"),
        ({"players": 2, "opponents": ["random"], "threshold": 0}, "threshold must be"),
        ({"players": 2, "opponents": ["random"], "threshold": 1e9}, "threshold must be"),
        ({"players": 2, "opponents": ["random"], "seed": -1}, "seed must be"),
        ({"players": 2, "opponents": ["random"], "colours": 6}, "unknown field 'colours'"),
        ({"opponents": ["random"]}, "missing field 'players'"),
    ],
)
def test_bad_new_game_settings_get_400_and_start_nothing(app, client, body, says):
    response = client.post("/api/games", json=body)
    assert says in refused(response, 400)
    assert len(app.state.store) == 0


# -- what the page is sent during play ---------------------------------------------------------


def hidden_names(game: Game, person: int = 0) -> set[str]:
    """The cards of other seats that are not publicly known."""
    hidden = 0
    for seat, hand in enumerate(game.hands):
        if seat != person:
            hidden |= hand & ~game.known[seat]
    return {card_name(c) for c in cards_of(hidden)}


def shown(obj: object) -> set[str]:
    return set(CARD.findall(json.dumps(obj)))


def test_the_leak_check_catches_a_view_with_every_hand_open():
    game = Game(Config(players=4), seed=1)
    names = ["You", "a", "b", "c"]
    assert not shown(seat_view(game, names, 0)) & hidden_names(game)
    assert shown(seat_view(game, names, None)) & hidden_names(game)


@pytest.mark.parametrize(
    ("players", "opponents", "seed"),
    [(2, ["random"], 11), (4, ["greedy", "planner", "random"], 12), (6, ["random"] * 5, 13)],
)
def test_no_response_during_play_holds_another_seats_hidden_cards(
    app, client, players, opponents, seed
):
    """Every response is compared with the true game on the server, and every event with the
    same game rebuilt decision by decision beside it."""
    data = start(client, players, opponents, threshold=10, seed=seed)
    session = app.state.store._games[data["game_id"]]
    shadow = Game(session.config, seed=session.seed)
    checked = {"events": 0}

    def check(data: dict) -> None:
        body = {k: v for k, v in data.items() if k not in ("game_id", "events")}
        assert not shown(body) & hidden_names(session.game)
        for event in data["events"]:
            account = {k: v for k, v in event.items() if k != "view"}
            revealed = set(event["cards"]) if event["kind"] == "play" else set()
            assert not shown(account) & (hidden_names(shadow) - revealed)
            shadow.apply(event["action"])
            assert not shown(event["view"]) & hidden_names(shadow)
            assert event["view"]["seats"][0]["hand"] == [
                card_name(c) for c in cards_of(shadow.hands[0])
            ]
            checked["events"] += 1
        assert shadow.snapshot()[:-1] == session.game.snapshot()[:-1]

    check(data)
    data = play_out(client, data, check)
    assert checked["events"] == session.turn  # every decision of the game was looked at
    # The reload answer: the view now, and the log, whose lines are the accounts checked above
    # (cards played in earlier hands may be in the hands of the current one).
    now = client.get(f"/api/games/{data['game_id']}").json()
    assert now["log"] == [text for text in session.log]
    assert not shown(now["view"]) & hidden_names(session.game)


# -- games apart, capped, saved ----------------------------------------------------------------


def test_two_games_are_kept_apart(app, client):
    a = start(client, seed=5)
    b = start(client, players=3, opponents=["greedy", "random"], seed=6)
    assert a["game_id"] != b["game_id"] and min(len(a["game_id"]), len(b["game_id"])) >= 24
    before_b = state(app, b["game_id"])
    moved = client.post(f"/api/games/{a['game_id']}/move", json=first_legal(a))
    assert moved.status_code == 200
    assert state(app, b["game_id"]) == before_b
    # B's move, sent to A, is judged against A's own game.
    before_a = state(app, a["game_id"])
    response = client.post(f"/api/games/{a['game_id']}/move", json=first_legal(b))
    assert response.status_code in (409, 422)
    assert state(app, a["game_id"]) == before_a
    assert client.get(f"/api/games/{b['game_id']}").json()["view"]["players"] == 3


def test_the_number_of_live_games_is_capped_and_the_least_recent_goes(app, client):
    ids = [start(client, seed=s)["game_id"] for s in range(4)]
    client.get(f"/api/games/{ids[0]}")  # used again: now the most recent
    fifth = start(client, seed=9)["game_id"]
    assert len(app.state.store) == 4
    refused(client.get(f"/api/games/{ids[1]}"), 404)
    for game_id in (ids[0], ids[2], ids[3], fifth):
        assert client.get(f"/api/games/{game_id}").status_code == 200


def test_a_game_dropped_or_live_at_shutdown_is_saved_unfinished_once_the_person_moved(tmp_path):
    """A dropped game with a move of the person's is saved as unfinished and replays to the
    decision pending; one without is not saved; the games live when the server stops are."""
    out = tmp_path / "web"
    with TestClient(create_app(out, max_games=2)) as client:
        moved = start(client, seed=5)
        after = client.post(f"/api/games/{moved['game_id']}/move", json=first_legal(moved))
        assert after.status_code == 200 and not after.json()["over"]
        session = client.app.state.store._games[moved["game_id"]]
        untouched = start(client, seed=6)["game_id"]
        assert list(out.glob("*.json")) == []
        live = start(client, seed=7)  # drops the first game
        [dropped] = out.glob("*.json")
        saved = load_records(dropped)
        assert saved.unfinished and saved.extra["unfinished"] is True
        assert saved.games[0].actions == tuple(session.actions) and saved.games[0].winners == ()
        game = replay(saved.games[0], saved.config)
        assert game.snapshot() == session.game.snapshot()
        start(client, seed=8)  # drops the untouched game: the person never moved, nothing saved
        assert list(out.glob("*.json")) == [dropped]
        refused(client.get(f"/api/games/{untouched}"), 404)
        client.post(f"/api/games/{live['game_id']}/move", json=first_legal(live))
        live_actions = tuple(client.app.state.store._games[live["game_id"]].actions)
    # The server stopped: the live game the person had moved in is saved too.
    [stopped] = [p for p in out.glob("*.json") if p != dropped]
    assert load_records(stopped).games[0].actions == live_actions


def test_a_finished_game_is_saved_as_a_records_file_that_replays(app, client, tmp_path):
    data = play_out(client, start(client, seed=21))
    session = app.state.store._games[data["game_id"]]
    key = data["record"]["file"]
    assert key.startswith("saved/game-") and data["record"]["game"] == 0
    # The path the game-over panel names is the file itself, under the folder the app saves in.
    path = Path(data["record"]["path"])
    assert path == tmp_path / "web" / key.removeprefix("saved/") and path.is_file()
    saved = load_records(path)
    assert saved.specs == ("human", "random") and saved.config.threshold == 5
    game = replay(saved.games[0], saved.config)
    assert list(game.totals) == [s["total"] for s in data["view"]["seats"]]
    assert list(game.winners) == data["view"]["winners"]
    assert saved.games[0].actions == tuple(session.actions)

    listed = client.get("/api/records").json()["files"]
    assert [(f["file"], f["games"], f["error"]) for f in listed] == [(key, 1, None)]
    frames = client.get("/api/replay", params={"file": key, "game": 0, "seat": "1"}).json()
    assert len(frames["frames"]) == session.turn + 1  # the deal, then every decision
    chosen = [f["event"]["action"] for f in frames["frames"][1:] if not f["event"]["forced"]]
    assert chosen == session.actions
    for frame in frames["frames"]:
        assert frame["view"]["seats"][0]["hand"] is None  # seat 0's cards hidden from seat 1
        assert frame["view"]["seats"][1]["hand"] is not None
    open_view = client.get("/api/replay", params={"file": key, "game": 0, "seat": "all"}).json()
    assert all(s["hand"] is not None for s in open_view["frames"][0]["view"]["seats"])
    last = open_view["frames"][-1]["view"]
    assert [s["total"] for s in last["seats"]] == list(game.totals) and last["phase"] == "over"


def test_the_replay_lists_tournament_files_and_refuses_bad_requests(client, tmp_path):
    config = Config(players=2, threshold=5)
    from agents import make

    games = play_deals([make("random", seed=1), make("greedy")], config, 1, seed=4)
    folder = tmp_path / "records" / "t1"
    write_records(folder / "tournament.json", config, ["random", "greedy"], games)
    (folder / "seating.json").write_text('{"not": "records"}')
    (folder / "broken.json").write_text('{"format": "odin-lab-games", "version": 1}')
    listed = {f["file"]: f for f in client.get("/api/records").json()["files"]}
    assert set(listed) == {"records/t1/tournament.json", "records/t1/broken.json"}
    assert listed["records/t1/tournament.json"]["games"] == 2
    assert "version" in listed["records/t1/broken.json"]["error"]

    good = {"file": "records/t1/tournament.json", "game": "1", "seat": "0"}
    frames = client.get("/api/replay", params=good).json()["frames"]
    assert frames[-1]["view"]["phase"] == "over"
    assert [s["total"] for s in frames[-1]["view"]["seats"]] == list(games[1].totals)
    for params, status, says in [
        ({**good, "file": "records/t1/../../../etc/passwd"}, 404, "no records file"),
        ({**good, "file": str(folder / "tournament.json")}, 404, "no records file"),
        ({**good, "file": "records/t1/seating.json"}, 404, "no records file"),
        ({**good, "file": "records/t1/broken.json"}, 422, "version"),
        ({**good, "game": "2"}, 400, "game must be 0-1"),
        ({**good, "game": "-1"}, 400, "game must be"),
        ({**good, "seat": "2"}, 400, "seat must be 'all' or a seat 0-1"),
        ({**good, "seat": "north"}, 400, "seat must be"),
    ]:
        assert says in refused(client.get("/api/replay", params=params), status)


# -- the command line --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--host", "0.0.0.0"], "--allow-remote"),
        (["--port", "70000"], "--port must be 0-65535"),
        (["--max-games", "0"], "--max-games must be 1-1000"),
        (["--max-games", str(10**23)], "--max-games must be 1-1000"),
        (["--records", "/no/such/folder"], "is not a folder"),
        (["--colour", "red"], "unrecognized arguments"),
    ],
)
def test_the_command_refuses_bad_input_with_one_line(capsys, argv, says):
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own refusals exit from inside parse_args
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    assert (
        says in err and err.count("\n") == 1 and err.startswith("python -m odin_lab.webapp: error:")
    )


def test_python_m_webapp_refuses_a_public_host_before_serving():
    done = subprocess.run(
        [sys.executable, "-m", "odin_lab.webapp", "--host", "0.0.0.0", "--port", "0"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip().count("\n") == 0 and "--allow-remote" in done.stderr


def test_a_game_that_cannot_be_saved_still_ends_on_screen_with_the_reason(tmp_path):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    client = TestClient(create_app(blocked / "web"))
    data = play_out(client, start(client))
    assert data["over"] and data["record"] is None
    assert data["save_error"].startswith("could not save the game in")


def test_requests_naming_another_host_are_refused(tmp_path):
    """A page of another site whose name resolves to 127.0.0.1 reaches no game."""
    app = create_app(tmp_path / "web", allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1").get("/api/agents").status_code == 200
    outside = TestClient(app, base_url="http://attacker.example")
    assert outside.get("/api/agents").status_code == 400
    assert (
        outside.post("/api/games", json={"players": 2, "opponents": ["random"]}).status_code == 400
    )
    assert len(app.state.store) == 0


# -- the coach: hints and reviews ------------------------------------------------------------


def test_a_hint_scores_the_persons_legal_moves_from_their_view_only(app, client, tmp_path):
    data = start(client, players=4, opponents=["random", "greedy", "planner"], seed=12)
    game_id = data["game_id"]
    session = app.state.store._games[game_id]
    before = state(app, game_id)
    response = client.post(f"/api/games/{game_id}/hint", json={"ms": 150})
    assert response.status_code == 200, response.text
    hint = response.json()
    assert {"candidates", "best", "elapsed_ms", "budget_ms", "turn"} <= set(hint)
    assert hint["budget_ms"] == 150 and hint["turn"] == data["view"]["turn"]
    legal = {a["action"]: a for a in data["view"]["legal"]}
    candidates = hint["candidates"]
    assert sorted(c["action"] for c in candidates) == sorted(legal)
    assert hint["best"] == candidates[0]["action"] and candidates[0]["best"]
    assert sum(c["best"] for c in candidates) == 1
    for c in candidates:
        assert (c["kind"], c["cards"]) == (legal[c["action"]]["kind"], legal[c["action"]]["cards"])
        assert c["label"] == (
            " ".join(c["cards"]) if c["kind"] == "play" else " ".join([c["kind"], *c["cards"]])
        )
        assert 0 <= c["win"] <= 1 and c["penalty"] >= 0
    assert not shown(hint) & hidden_names(session.game)
    assert state(app, game_id) == before  # a hint moves nothing
    assert session.hints == [len(session.actions)]
    # An empty body asks with the default budget; the record lists the step once.
    empty = client.post(f"/api/games/{game_id}/hint", content=b"", headers=JSON)
    assert empty.status_code == 200 and empty.json()["budget_ms"] == 1000
    data = play_out(client, data)
    assert session.hints == [len(before[2])]  # asked twice at one decision: kept once
    saved = load_records(tmp_path / "web" / data["record"]["file"].removeprefix("saved/"))
    assert saved.extra["hints"] == session.hints


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        (b'{"ms": 99}', 400, "ms must be an integer 100-5000"),
        (b'{"ms": 5001}', 400, "ms must be an integer 100-5000"),
        (b'{"ms": "300"}', 400, "ms must be an integer 100-5000"),
        (b'{"ms": 300.0}', 400, "ms must be an integer 100-5000"),
        (b'{"budget": 300}', 400, "unknown field 'budget'"),
        (b"[300]", 400, "JSON object"),
        (b"{nope", 400, "malformed JSON"),
        (b'{"ms": 100, "turn": 999}', 409, "out of turn"),
    ],
)
def test_bad_hint_requests_are_refused_and_change_nothing(app, client, body, status, says):
    data = start(client)
    game_id = data["game_id"]
    before = state(app, game_id)
    response = client.post(f"/api/games/{game_id}/hint", content=body, headers=JSON)
    assert says in refused(response, status)
    assert state(app, game_id) == before and app.state.store._games[game_id].hints == []


def test_no_hint_after_the_end_or_for_an_unknown_game(app, client):
    data = play_out(client, start(client))
    response = client.post(f"/api/games/{data['game_id']}/hint", json={"ms": 100})
    assert "the game is over" in refused(response, 409)
    assert "unknown game id" in refused(client.post("/api/games/nope/hint", json={}), 404)


def test_a_review_of_a_saved_game_and_bad_review_requests(app, client, tmp_path):
    data = play_out(client, start(client, players=3, opponents=["random", "greedy"], seed=4))
    key = data["record"]["file"]
    session = app.state.store._games[data["game_id"]]
    response = client.post("/api/review", json={"file": key, "game": 0, "seat": 0})
    assert response.status_code == 200, response.text
    review = response.json()
    from odin_lab.evaluation.review import review_record

    saved = load_records(tmp_path / "web" / key.removeprefix("saved/"))
    assert review == {"file": key, **review_record(saved, 0, 0)}  # as evaluate.py review says
    assert {"game", "seat", "decisions", "costliest", "summary"} <= set(review)
    assert all(d["action"] == session.actions[d["step"]] for d in review["decisions"])
    assert review["summary"]["decisions"] == session.moves
    for d in review["decisions"]:
        assert {
            "step",
            "hand",
            "action",
            "label",
            "best_action",
            "best_label",
            "value",
            "best_value",
            "loss",
        } <= set(d)
    assert client.post("/api/review", json={"file": key, "game": 0, "seat": 0}).json() == review
    for body, status, says in [
        ({"file": "saved/../../etc/passwd", "game": 0, "seat": 0}, 404, "no records file"),
        (
            {"file": str(tmp_path / "web" / key.removeprefix("saved/")), "game": 0, "seat": 0},
            404,
            "no records file",
        ),
        ({"file": key, "game": 1, "seat": 0}, 400, "game must be 0-0 (the file holds 1 game)"),
        ({"file": key, "game": 0, "seat": 3}, 400, "seat must be 0-2 (3 players)"),
        ({"file": key, "game": "0", "seat": 0}, 400, "game must be 0-0"),
        ({"file": key, "game": 0}, 400, "missing field 'seat'"),
        ({"file": 7, "game": 0, "seat": 0}, 400, "file must be"),
        ({"file": key, "game": 0, "seat": 0, "rollouts": 9}, 400, "unknown field 'rollouts'"),
    ]:
        assert says in refused(client.post("/api/review", json=body), status)
