"""The Goat in the web app (RULES G1-G5): a new game with ``"goat": true`` is played to its end
through the HTTP interface without the Goat ever shown where the person could not see it,
saved and replayed; requests a Goat game cannot take are refused in one line; and in a real
browser at phone size the Goat is a card of its own look, tapped like any other."""

from __future__ import annotations

import json

import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import sync_playwright
from test_webapp_browser import finish_game, launch, new_game, open_page, serving, settle
from test_webapp_phone import PHONE

from agents.registry import GOAT_AGENTS, agent_names, check_plays
from odin_env.cards import GOAT_BIT
from odin_env.rules import Config, Game
from odin_lab.evaluation.records import load_records, replay
from odin_lab.webapp.app import create_app

GOAT = Config(players=3, threshold=5, goat=True)


@pytest.fixture
def app(tmp_path):
    return create_app(tmp_path / "web", tmp_path / "records", max_games=4)


@pytest.fixture
def client(app):
    return TestClient(app)


def _goat_public(game: Game) -> bool:
    """Whether the person (seat 0) may see where the Goat is."""
    seen = game.hands[0] | game.take_from | game.discard
    seen |= game.known[1] | game.known[2]
    if game.table >= 0:
        from odin_env.spec import PLAY_BITS

        seen |= PLAY_BITS[game.table]
    return bool(seen & GOAT_BIT)


def test_a_goat_game_is_played_to_its_end_saved_and_replayed_without_a_leak(app, client):
    body = {"players": 3, "opponents": ["planner", "greedy"], "threshold": 5, "seed": 4,
            "goat": True}  # fmt: skip
    data = client.post("/api/games", json=body).json()
    session = app.state.store._games[data["game_id"]]
    assert data["view"]["goat"] is True and session.config.goat
    shown = goat_moves = 0
    while not data["over"]:
        legal = data["view"]["legal"]
        goat = [a for a in legal if "Goat" in a["cards"]]
        choice = goat[0] if goat else legal[0]  # the Goat whenever the person may move it
        goat_moves += bool(goat)
        move = {"action": choice["action"], "turn": data["view"]["turn"]}
        response = client.post(f"/api/games/{data['game_id']}/move", json=move)
        assert response.status_code == 200, response.text
        data = response.json()
        if not data["over"]:
            # The view names the Goat exactly where the person may see it.
            public = _goat_public(session.game)
            assert ('"Goat"' in json.dumps(data["view"])) == public
            shown += public
    assert shown and goat_moves
    saved = load_records(data["record"]["path"])
    assert saved.config.goat and replay(saved.games[0], saved.config).is_over
    frames = client.get("/api/replay", params={"file": data["record"]["file"], "seat": "all"})
    assert frames.status_code == 200 and '"Goat"' in frames.text


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"players": 2, "opponents": ["greedy"], "goat": "yes"}, 400, "goat must be true or false"),
        ({"players": 2, "opponents": ["ppo"], "goat": True}, 400, "agent 'ppo': goat: "),
        (
            {"players": 3, "opponents": ["greedy", "dmc"], "goat": True},
            400,
            "the lab's agents that do: random, greedy, shaper, planner, search",
        ),
    ],
)
def test_a_goat_game_the_opponents_cannot_play_is_refused(app, client, body, status, says):
    response = client.post("/api/games", json=body)
    assert response.status_code == status, response.text
    assert says in response.json()["error"] and not app.state.store._games


def test_moves_a_goat_game_cannot_take_are_refused_and_a_hint_scores_every_move(app, client):
    plain = client.post("/api/games", json={"players": 2, "opponents": ["greedy"]}).json()
    seed = next(
        s for s in range(100) if Game(Config(players=2, goat=True), seed=s).hands[0] & GOAT_BIT
    )
    body = {"players": 2, "opponents": ["greedy"], "goat": True, "seed": seed}
    goat = client.post("/api/games", json=body).json()
    assert any("Goat" in a["cards"] for a in goat["view"]["legal"])  # the hint scores its moves
    for data, action, says in ((plain, 3634, "out of range"), (goat, 6702, "out of range")):
        move = client.post(
            f"/api/games/{data['game_id']}/move",
            json={"action": action, "turn": data["view"]["turn"]},
        )
        assert move.status_code == 400 and says in move.json()["error"]
    hint = client.post(f"/api/games/{goat['game_id']}/hint", json={"ms": 300})
    assert hint.status_code == 200, hint.text  # the search plays the Goat: it hints too
    scored = {c["action"]: c["label"] for c in hint.json()["candidates"]}
    assert set(scored) == {a["action"] for a in goat["view"]["legal"]}
    assert all("Goat" in scored[a["action"]] for a in goat["view"]["legal"] if "Goat" in a["cards"])
    offered = client.get("/api/agents").json()
    assert offered["goat"] == [name for name in agent_names() if name in GOAT_AGENTS]


def test_the_goat_agents_are_the_lab_agents_that_play_it():
    playing = []
    for name in agent_names():
        try:
            check_plays(name, GOAT)
            playing.append(name)
        except ValueError as error:
            assert "goat" in str(error)
    assert playing == list(GOAT_AGENTS)


def test_the_goat_card_on_a_phone_and_a_whole_goat_game_by_tapping(tmp_path):
    config = Config(players=2, threshold=3, goat=True)
    seed = next(s for s in range(100) if Game(config, seed=s).hands[0] & GOAT_BIT)
    errors: list[str] = []
    with serving(tmp_path) as (url, _), sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, PHONE, errors, phone=True)
        page.goto(url)
        page.check("#goat")
        offered = page.eval_on_selector_all("#opponent-1 option", "o => o.map(x => x.value)")
        assert offered == list(GOAT_AGENTS)  # only the agents that play the Goat
        new_game(page, 2, ["planner"], 3, seed)
        view = settle(page)
        assert view["goat"] and "Goat" in view["seats"][0]["hand"]
        tile = page.locator('#me .card[data-card="Goat"]')
        assert "c-goat" in tile.get_attribute("class")
        assert "Grumpy Goat" in tile.get_attribute("title")
        assert tile.inner_text().startswith("0")
        box = page.eval_on_selector("#me", "e => e.getBoundingClientRect().right")
        assert tile.bounding_box()["x"] + tile.bounding_box()["width"] <= box
        assert finish_game(page, tap=True) > 0
        browser.close()
    assert errors == []
