"""The web app against other sites, odd files and large games (issue 24, classes 1, 2, 6, 7):
requests from another origin change nothing, a state-changing request must be JSON, every
refusal is a one-line ``{"error"}`` (the ``Host`` refusal too), the records folders yield only
regular files inside them (a FIFO, a link loop, a link out are neither listed nor replayed), and
a replay has bounded frames and bytes."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from agents import make
from odin_env.rules import Config
from odin_lab.evaluation.records import iter_steps, load_records, write_records
from odin_lab.evaluation.tournament import GameRecord, play_deals
from odin_lab.webapp import replays
from odin_lab.webapp.app import MAX_DEPTH, create_app

JSON = {"Content-Type": "application/json"}
NEW_GAME = {"players": 2, "opponents": ["random"], "threshold": 5, "seed": 3}


@pytest.fixture
def app(tmp_path):
    return create_app(tmp_path / "web", tmp_path / "records", max_games=4)


@pytest.fixture
def client(app):
    return TestClient(app, raise_server_exceptions=False)


def refused(response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    message = response.json()["error"]
    assert isinstance(message, str) and message and "\n" not in message
    return message


def live_game(client) -> dict:
    response = client.post("/api/games", json=NEW_GAME)
    assert response.status_code == 200, response.text
    return response.json()


def snapshot(app) -> dict:
    return {k: (s.turn, tuple(s.actions)) for k, s in app.state.store._games.items()}


# -- other sites -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("headers", "status", "says"),
    [
        ({"Origin": "http://evil.example", **JSON}, 403, "another origin"),
        ({"Origin": "null", **JSON}, 403, "another origin"),
        ({"Origin": "http://testserver:8001", **JSON}, 403, "another origin"),
        ({"Origin": "https://testserver", **JSON}, 403, "another origin"),
        ({"Sec-Fetch-Site": "cross-site", **JSON}, 403, "another site"),
        ({"Sec-Fetch-Site": "same-site", **JSON}, 403, "another site"),
        ({"Content-Type": "text/plain"}, 415, "application/json"),
        ({"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"),
        ({"Content-Type": "multipart/form-data; boundary=x"}, 415, "application/json"),
        ({}, 415, "no type"),
        # What the 70 no-cors POSTs of issue 24 sent: refused for the origin before the type.
        ({"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403, "another origin"),
    ],
)
def test_state_changing_requests_from_another_site_change_nothing(
    app, client, headers, status, says
):
    data = live_game(client)
    before = snapshot(app)
    body = json.dumps(NEW_GAME).encode()
    assert says in refused(client.post("/api/games", content=body, headers=headers), status)
    move = json.dumps({"action": data["view"]["legal"][0]["action"], "turn": 0}).encode()
    path = f"/api/games/{data['game_id']}/move"
    assert says in refused(client.post(path, content=move, headers=headers), status)
    assert snapshot(app) == before  # no game created, none evicted, no move made


def test_many_cross_site_posts_cannot_evict_the_persons_game(app, client):
    """Issue 24's attack: more new-game POSTs than the store keeps, from another origin."""
    data = live_game(client)
    evil = {"Origin": "http://127.0.0.1:9999", "Content-Type": "text/plain"}
    for _ in range(3 * app.state.store.max_games):
        client.post("/api/games", content=json.dumps(NEW_GAME), headers=evil)
    assert client.get(f"/api/games/{data['game_id']}").status_code == 200
    assert len(app.state.store) == 1


def test_the_apps_own_page_requests_are_served(client):
    own = {"Origin": "http://testserver", "Sec-Fetch-Site": "same-origin", **JSON}
    response = client.post("/api/games", content=json.dumps(NEW_GAME), headers=own)
    assert response.status_code == 200, response.text
    typed = {"Content-Type": "application/json; charset=utf-8"}
    assert client.post("/api/games", content=json.dumps(NEW_GAME), headers=typed).status_code == 200
    # The page may be opened from a link on any site; its API reads may not.
    assert client.get("/", headers={"Sec-Fetch-Site": "cross-site"}).status_code == 200
    refused(client.get("/api/records", headers={"Sec-Fetch-Site": "cross-site"}), 403)
    refused(client.get("/api/agents", headers={"Origin": "http://evil.example"}), 403)


def test_a_host_refusal_is_the_apps_json_error(tmp_path):
    app = create_app(tmp_path / "web", allowed_hosts=["127.0.0.1", "localhost", "[::1]"])
    for base in ("http://127.0.0.1:8000", "http://localhost", "http://[::1]:8000"):
        assert TestClient(app, base_url=base).get("/api/agents").status_code == 200
    for base in ("http://attacker.example", "http://127.0.0.1.evil.example:8000"):
        outside = TestClient(app, base_url=base)
        assert "is not served here" in refused(outside.get("/api/agents"), 400)
        refused(outside.get("/"), 400)
        refused(outside.post("/api/games", json=NEW_GAME), 400)
    assert len(app.state.store) == 0


# -- malformed requests: 4xx, never 500 ----------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"[" * 16_000,
        b'{"players": ' + b"[" * 5_000 + b"]" * 5_000 + b"}",
        b'{"players": ' + b"[" * 900 + b"]" * 900 + b', "opponents": ["random"]}',
        b'{"players": ' + b"9" * 5_000 + b', "opponents": ["random"]}',
        b'{"players": 2, "opponents": [' + b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1) + b"]}",
    ],
)
def test_deep_or_huge_bodies_are_400(client, body):
    refused(client.post("/api/games", content=body, headers=JSON), 400)


@pytest.mark.parametrize("length", [b"abc", "²".encode(), b"9" * 5_000, b"-1"])
def test_a_bad_content_length_is_4xx(client, length):
    headers = {**JSON, "Content-Length": length}
    response = client.post("/api/games", content=json.dumps(NEW_GAME), headers=headers)
    assert 400 <= response.status_code < 500


def write_tournament(folder: Path, games: int = 1) -> list[GameRecord]:
    config = Config(players=2, threshold=5)
    records = play_deals([make("random", seed=1), make("greedy")], config, games, seed=4)
    write_records(folder / "tournament.json", config, ["random", "greedy"], records)
    return records


@pytest.mark.parametrize(
    ("params", "says"),
    [
        ({"game": "²"}, "game must be a game number"),
        ({"game": "٣"}, "game must be a game number"),  # an Arabic-Indic three
        ({"game": "9" * 5_000}, "game must be a game number"),
        ({"game": "1e3"}, "game must be a game number"),
        ({"game": " 1"}, "game must be a game number"),
        ({"game": "0", "seat": "²"}, "seat must be"),
        ({"game": "0", "seat": "9" * 5_000}, "seat must be"),
        ({"game": "0", "seat": "-0"}, "seat must be"),
        ({"game": "123456789"}, "game must be 0-1"),
    ],
)
def test_replay_numbers_that_are_no_numbers_are_400(client, tmp_path, params, says):
    write_tournament(tmp_path / "records")
    query = {"file": "records/tournament.json", "seat": "all", **params}
    assert says in refused(client.get("/api/replay", params=query), 400)


# -- files that are not regular files, links out of the folders --------------------------------


def test_fifos_devices_loops_and_links_out_are_neither_listed_nor_replayed(client, tmp_path):
    records = tmp_path / "records"
    write_tournament(records)
    outside = tmp_path / "elsewhere"
    write_tournament(outside)
    os.mkfifo(records / "pipe.json")
    (records / "zero.json").symlink_to("/dev/zero")
    (records / "loop.json").symlink_to(records / "loop.json")
    (records / "out.json").symlink_to(outside / "tournament.json")
    (records / "linked").symlink_to(outside, target_is_directory=True)
    (records / "dangling.json").symlink_to(tmp_path / "nothing.json")
    (records / "inside.json").symlink_to(records / "tournament.json")  # a duplicate: skipped

    answer: dict = {}
    reader = threading.Thread(target=lambda: answer.update(r=client.get("/api/records")))
    reader.start()
    reader.join(timeout=30)
    assert not reader.is_alive(), "/api/records hangs on a FIFO"
    listed = [f["file"] for f in answer["r"].json()["files"]]
    assert listed == ["records/tournament.json"]
    for name in ("pipe.json", "zero.json", "loop.json", "out.json", "linked/tournament.json"):
        query = {"file": f"records/{name}", "game": "0", "seat": "all"}
        assert "no records file" in refused(client.get("/api/replay", params=query), 404)


def test_an_oversized_records_file_is_listed_with_the_limit_and_not_replayed(
    client, tmp_path, monkeypatch
):
    write_tournament(tmp_path / "records", games=2)
    size = (tmp_path / "records" / "tournament.json").stat().st_size
    monkeypatch.setattr(replays, "MAX_FILE_BYTES", size - 1)
    (entry,) = client.get("/api/records").json()["files"]
    assert "over the limit" in entry["error"] and "evaluate.py replay" in entry["error"]
    query = {"file": "records/tournament.json", "game": "0"}
    assert "over the limit" in refused(client.get("/api/replay", params=query), 422)


# -- replays: bounded frames and bytes ---------------------------------------------------------


def long_game_file(folder: Path, threshold: int = 300) -> tuple[GameRecord, int]:
    """A 2-player game of random players to ``threshold`` (300: about 7,700 decisions)."""
    config = Config(players=2, threshold=threshold)
    (record,) = play_deals([make("random", seed=5), make("random", seed=6)], config, 1, 7,
                           rotate=False, engine="single")  # fmt: skip
    write_records(folder / "long.json", config, ["random", "random"], [record])
    return record, len(record.actions)


def test_a_replay_over_the_frame_limit_is_refused(client, tmp_path, monkeypatch):
    # The limits are set from this game's length: a game of a few hundred decisions will do.
    record, actions = long_game_file(tmp_path / "records", threshold=40)
    frames = sum(1 for _ in iter_steps(record, Config(players=2, threshold=40)))
    query = {"file": "records/long.json", "game": "0", "seat": "all"}
    # More actions than frames allowed: refused from the record's length, before any replay.
    monkeypatch.setattr(replays, "MAX_FRAMES", actions)
    monkeypatch.setattr(replays, "iter_steps", None)  # not called
    says = refused(client.get("/api/replay", params=query), 422)
    assert f"{actions:,} frames" in says and "evaluate.py replay" in says
    # Fewer actions, but the forced decisions make more frames: refused during the walk.
    monkeypatch.undo()
    monkeypatch.setattr(replays, "MAX_FRAMES", (actions + frames) // 2)
    assert "too long for the web replay" in refused(client.get("/api/replay", params=query), 422)
    monkeypatch.setattr(replays, "MAX_FRAMES", frames)
    assert len(client.get("/api/replay", params=query).json()["frames"]) == frames


def test_a_replay_over_the_byte_limit_is_refused(client, tmp_path, monkeypatch):
    long_game_file(tmp_path / "records")
    query = {"file": "records/long.json", "game": "0", "seat": "all"}
    monkeypatch.setattr(replays, "MAX_REPLAY_BYTES", 2**20)
    assert "1 MiB" in refused(client.get("/api/replay", params=query), 422)


def test_a_replay_within_the_limits_answers_every_frame_within_the_byte_limit(client, tmp_path):
    """The largest game the page can start (6 players, threshold 100, random players) replays,
    inside both limits."""
    config = Config(players=6, threshold=100)
    agents = [make("random", seed=s) for s in range(6)]
    (record,) = play_deals(agents, config, 1, 11, rotate=False, engine="single")
    write_records(tmp_path / "records" / "big.json", config, ["random"] * 6, [record])
    query = {"file": "records/big.json", "game": "0", "seat": "all"}
    response = client.get("/api/replay", params=query)
    assert response.status_code == 200
    frames = response.json()["frames"]
    assert len(response.content) <= replays.MAX_REPLAY_BYTES
    assert len(record.actions) < len(frames) <= replays.MAX_FRAMES
    assert frames[-1]["view"]["phase"] == "over"


def test_replays_built_at_once_are_capped(client, tmp_path, monkeypatch):
    write_tournament(tmp_path / "records")
    catalogue = client.app.state.catalogue
    for _ in range(replays.REPLAYS_AT_ONCE):
        catalogue._building.acquire()
    query = {"file": "records/tournament.json", "game": "0", "seat": "all"}
    try:
        assert "try again" in refused(client.get("/api/replay", params=query), 503)
    finally:
        for _ in range(replays.REPLAYS_AT_ONCE):
            catalogue._building.release()
    assert client.get("/api/replay", params=query).status_code == 200


# -- the seed a person picks -------------------------------------------------------------------


def test_a_game_with_a_chosen_seed_is_marked_in_its_record(app, client, tmp_path):
    store = app.state.store
    chosen = store.create(Config(players=2, threshold=5), ["random"], 3)
    drawn = store.create(Config(players=2, threshold=5), ["random"], None)
    for session in (chosen, drawn):
        store.save(session)
    assert load_records(chosen.saved).extra.get("seed_chosen") is True
    assert "seed_chosen" not in load_records(drawn.saved).extra
    page = client.get("/").text
    assert "chosen seed" in page


def test_a_listing_reads_a_bounded_number_of_new_bytes_and_the_next_goes_on(
    client, tmp_path, monkeypatch
):
    write_tournament(tmp_path / "records" / "a")
    write_tournament(tmp_path / "records" / "b")
    size = (tmp_path / "records" / "a" / "tournament.json").stat().st_size
    monkeypatch.setattr(replays, "LIST_BYTES", size + size // 2)  # room for one file
    first = client.get("/api/records").json()["files"]
    assert sorted(bool(f["error"]) for f in first) == [False, True]
    assert "not read yet" in next(f["error"] for f in first if f["error"])
    second = client.get("/api/records").json()["files"]  # the first file's entry is kept
    assert [f["error"] for f in second] == [None, None]
    assert all(f["games"] == 2 for f in second)


def test_a_scan_walks_a_bounded_number_of_names(client, tmp_path, monkeypatch):
    records = tmp_path / "records"
    write_tournament(records / "z")  # walked after the many names of folder a
    (records / "a").mkdir()
    for k in range(40):
        (records / "a" / f"note-{k}.txt").write_text("")
    assert [f["file"] for f in client.get("/api/records").json()["files"]] == [
        "records/z/tournament.json"
    ]
    monkeypatch.setattr(replays, "MAX_SCAN_ENTRIES", 30)
    assert client.get("/api/records").json()["files"] == []


def test_a_fault_of_the_server_is_still_a_one_line_json_error(client, monkeypatch):
    def broken() -> list:
        raise RuntimeError("a bug\nwith a second line")

    monkeypatch.setattr(client.app.state.catalogue, "files", broken)
    response = client.get("/api/records")
    assert response.status_code == 500
    assert response.json() == {"error": "the server failed on this request (RuntimeError)"}


def test_the_running_server_refuses_other_sites_over_http(tmp_path):
    """As curl would send them, to ``python -m odin_lab.webapp``: the attack's requests are
    refused with JSON, the app's own are served."""
    import http.client
    import selectors
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "odin_lab.webapp", "--port", "0", "--out", str(tmp_path / "web")],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        with selectors.DefaultSelector() as waiting:
            waiting.register(proc.stdout, selectors.EVENT_READ)
            assert waiting.select(timeout=60), "the server did not start"
        port = int(proc.stdout.readline().split()[4].rstrip("/").rsplit(":", 1)[1])

        def send(method: str, path: str, body: bytes | None, headers: dict) -> tuple:
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                connection.request(method, path, body=body, headers=headers)
                answer = connection.getresponse()
                return answer.status, answer.getheader("content-type"), answer.read()
            finally:
                connection.close()

        game = json.dumps(NEW_GAME).encode()
        own = f"http://127.0.0.1:{port}"
        for headers, status in [
            ({"Origin": "http://evil.example", "Content-Type": "text/plain"}, 403),
            ({"Origin": "http://127.0.0.1:1", "Content-Type": "application/json"}, 403),
            ({"Sec-Fetch-Site": "cross-site", "Content-Type": "application/json"}, 403),
            ({"Content-Type": "text/plain"}, 415),
            ({"Host": "attacker.example", "Content-Type": "application/json"}, 400),
        ]:
            code, kind, body = send("POST", "/api/games", game, headers)
            assert (code, kind) == (status, "application/json"), body
            assert set(json.loads(body)) == {"error"}
        page = {"Origin": own, "Sec-Fetch-Site": "same-origin", "Content-Type": "application/json"}
        code, _, body = send("POST", "/api/games", game, page)
        assert code == 200 and json.loads(body)["game_id"]
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_a_listing_entry_stays_small_whatever_the_specs(client, tmp_path):
    config = Config(players=2, threshold=5)
    games = play_deals([make("random", seed=1), make("greedy")], config, 1, seed=4)
    specs = ["s" * 4000 for _ in range(40)]
    games = [replace(g, agents=(39, 38)) for g in games]
    write_records(tmp_path / "records" / "many.json", config, specs, games)
    (entry,) = client.get("/api/records").json()["files"]
    assert entry["error"] is None and len(json.dumps(entry)) < 2000
