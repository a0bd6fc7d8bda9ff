"""The web app in a real browser: Debian's Chromium driven by Playwright plays a whole game by
clicking, finds that an illegal selection cannot be submitted, opens the game's replay and steps
through it forwards and backwards, from every hand open and from one seat's view. It saves a
screenshot of the game in progress under the test's temporary folder, or to the path in
``ODIN_SCREENSHOT`` (``make screenshot`` renews ``docs/webapp.png``, which the README shows): a
test run never rewrites a tracked file.

The server runs as ``python -m odin_lab.webapp --port 0`` in a subprocess. Chromium comes from the
system (``make test`` installs Debian's ``chromium``); Playwright downloads no browser. Without
Chromium the test fails, saying how to install it.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from agents.files import write_atomic
from odin_lab.evaluation.records import load_records

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
WAIT_MS = 20_000
SETTLED = """() => {
    const s = window.odin;
    return Boolean(s && s.view && !s.busy &&
        (s.view.legal.length > 0 || !document.getElementById("over").hidden));
}"""
"""The page has shown every event and waits for the person, or shows the end of the game."""


@pytest.fixture
def server(tmp_path):
    """``(url, out folder)`` of a server started as a person would start it."""
    out = tmp_path / "web"
    proc = subprocess.Popen(
        [sys.executable, "-m", "odin_lab.webapp", "--port", "0", "--out", str(out),
         "--records", str(tmp_path)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with selectors.DefaultSelector() as waiting:
            waiting.register(proc.stdout, selectors.EVENT_READ)
            ready = waiting.select(timeout=60)
        line = proc.stdout.readline() if ready else ""
        assert "http://127.0.0.1:" in line, f"the server did not start: {line!r}"
        yield line.split()[4], out
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def launch(playwright):
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium is missing at {CHROMIUM}: the browser test needs Debian's chromium "
            "(`make test` installs it; by hand: apt-get install -y chromium)"
        )
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def illegal_pair(view: dict) -> list[str] | None:
    """Two cards of the hand that together are no legal action, if there are such."""
    legal = {" ".join(sorted(a["cards"])) for a in view["legal"]}
    hand = view["seats"][0]["hand"]
    for i, a in enumerate(hand):
        for b in hand[i + 1 :]:
            if " ".join(sorted([a, b])) not in legal:
                return [a, b]
    return None


def click_move(page, choice: dict) -> None:
    """Select the cards of ``choice`` (a legal action of the view) by clicking them."""
    where = ".pickable" if choice["kind"] == "take" else "#me .card"
    for name in choice["cards"]:
        page.click(f'{where}[data-card="{name}"]')


def screenshot_of_a_four_player_game(page, path: Path) -> None:
    """A few moves of a game against the bundled agents, then the picture, a play selected."""
    page.select_option("#players", "4")
    for seat, agent in ((1, "ppo"), (2, "planner"), (3, "greedy")):
        page.select_option(f"#opponent-{seat}", agent)
    page.fill("#seed", "5")
    page.click("#start")
    page.select_option("#speed", "0")
    moves = 0
    while True:
        page.wait_for_function(SETTLED)
        view = page.evaluate("() => window.odin.view")
        plays = [a for a in view["legal"] if a["kind"] != "pass"]
        if moves >= 3 and view["phase"] == "follow" and any(len(a["cards"]) > 1 for a in plays):
            click_move(page, max(plays, key=lambda a: len(a["cards"])))
            assert page.is_enabled("#submit")
            write_atomic(path, page.screenshot())
            page.click("#clear")
            return
        assert moves < 60, "no follow with a play of several cards to show"
        if plays:
            click_move(page, plays[0])
            page.click("#submit")
        else:
            page.click("#pass")
        moves += 1


def test_a_whole_game_by_clicking_then_its_replay_forwards_and_backwards(server, tmp_path):
    url, out = server
    with sync_playwright() as playwright:
        browser = launch(playwright)
        # Playwright's waiting functions evaluate strings, which the page's CSP forbids.
        page = browser.new_page(viewport={"width": 1280, "height": 800}, bypass_csp=True)
        page.set_default_timeout(WAIT_MS)
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(url)
        picture = Path(os.environ.get("ODIN_SCREENSHOT") or tmp_path / "webapp.png")
        screenshot_of_a_four_player_game(page, picture)
        assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        page.click("#nav-new")
        page.select_option("#players", "2")
        page.select_option("#opponent-1", "random")
        page.fill("#threshold", "5")
        page.fill("#seed", "11")
        page.click("#start")
        page.select_option("#speed", "0")  # show the others' moves without pauses

        moves, refused_illegal = 0, False
        while True:
            page.wait_for_function(SETTLED)
            if page.is_visible("#over"):
                break
            view = page.evaluate("() => window.odin.view")
            assert view["players"] == 2 and view["current"] == 0 and view["legal"]
            pair = illegal_pair(view) if view["phase"] != "take" else None
            if pair and not refused_illegal:
                for name in pair:
                    page.click(f'#me .card[data-card="{name}"]')
                assert page.is_disabled("#submit")
                assert "Not a legal move" in page.inner_text("#hint")
                page.click("#clear")
                refused_illegal = True
            # The largest play sheds cards fastest; pass only when nothing else is legal.
            choice = max(view["legal"], key=lambda a: (a["kind"] != "pass", len(a["cards"])))
            if choice["kind"] == "pass":
                page.click("#pass")
            else:
                click_move(page, choice)
                assert page.is_enabled("#submit")
                assert page.inner_text("#submit").endswith(" ".join(choice["cards"]))
                page.click("#submit")
            moves += 1
        assert refused_illegal, "no turn offered an illegal pair of cards"

        assert page.inner_text("#over-title").startswith("Game over")
        saved = page.inner_text("#over-saved").removeprefix("Saved as ")
        assert saved.startswith("saved/game-")
        record = load_records(out / saved.removeprefix("saved/"))
        assert record.specs == ("human", "random") and len(record.games) == 1

        page.click("#watch")
        page.wait_for_selector("#replay:not([hidden])")
        counter = page.inner_text("#rp-counter")
        last = int(counter.split(" / ")[1])
        assert counter == f"0 / {last}" and page.inner_text("#rp-caption") == "The deal"
        assert last >= 2 * moves  # the person's decisions and at least as many of the other's
        for _ in range(3):
            page.click("#rp-next")
        assert page.inner_text("#rp-counter") == f"3 / {last}"
        third = page.inner_text("#rp-caption")
        page.click("#rp-prev")
        assert page.inner_text("#rp-counter") == f"2 / {last}"
        assert page.inner_text("#rp-caption") not in ("The deal", third)
        page.click("#rp-next")
        assert page.inner_text("#rp-caption") == third
        # Every hand open: both seats' cards are drawn; from seat 1's view, seat 0's are not.
        assert page.locator('#rp-seats .seat[data-seat="0"] > .cards .card').count() > 0
        page.select_option("#rec-seat", "1")
        page.wait_for_function("() => window.odin.replay.viewer === 1")
        assert page.inner_text("#rp-counter") == f"3 / {last}"  # the same decision
        assert page.locator('#rp-seats .seat[data-seat="0"] > .cards').count() == 0
        assert page.locator('#rp-seats .seat[data-seat="0"] .back').count() > 0
        assert page.locator('#rp-seats .seat[data-seat="1"] > .cards .card').count() > 0
        page.click("#rp-last")
        assert page.inner_text("#rp-counter") == f"{last} / {last}"
        assert page.is_disabled("#rp-next") and "Game over" in page.inner_text("#rp-caption")
        page.keyboard.press("ArrowLeft")
        assert page.inner_text("#rp-counter") == f"{last - 1} / {last}"
        browser.close()
    assert errors == []


ATTACK = """
<!doctype html><meta charset="utf-8"><title>another site</title>
<iframe name="sink" hidden></iframe>
<form id="form" method="post" enctype="text/plain" target="sink"><input name="x"></form>
<script>
window.attack = async (app, gameId, move) => {
  const game = JSON.stringify({players: 2, opponents: ["random"], threshold: 5});
  const sent = (r) => "answered " + r.status;
  const failed = () => "blocked";
  const tries = [];
  // Issue 24's attack: 70 no-cors POSTs (more than the 64 games the server keeps) ...
  for (let i = 0; i < 70; i++) {
    tries.push(fetch(app + "api/games", {method: "POST", mode: "no-cors", body: game,
      headers: {"Content-Type": "text/plain"}}).then(sent, failed));
  }
  // ... a JSON one, which the browser must first ask the server about (CORS) ...
  tries.push(fetch(app + "api/games", {method: "POST", body: game,
    headers: {"Content-Type": "application/json"}}).then(sent, failed));
  // ... and the person's own move, as if the page had learned the game's id.
  tries.push(fetch(app + "api/games/" + gameId + "/move", {method: "POST", mode: "no-cors",
    body: JSON.stringify(move), headers: {"Content-Type": "text/plain"}}).then(sent, failed));
  const form = document.getElementById("form");
  form.action = app + "api/games/" + gameId + "/move";
  form.elements.x.value = JSON.stringify(move);
  form.submit();
  return await Promise.all(tries);
};
</script>
"""


@pytest.fixture
def other_site():
    """The URL of a page served on another local port (another origin) that attacks the app."""
    import http.server
    import threading

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - the handler's name in http.server
            body = ATTACK.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):  # quiet
            pass

    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}/"
    finally:
        httpd.shutdown()
        httpd.server_close()


def test_a_page_of_another_origin_cannot_create_games_or_move_in_the_persons_game(
    server, other_site
):
    url, out = server
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = browser.new_page(bypass_csp=True)
        page.set_default_timeout(WAIT_MS)
        page.goto(url)
        page.select_option("#players", "2")
        page.select_option("#opponent-1", "random")
        page.fill("#threshold", "5")
        page.click("#start")
        page.select_option("#speed", "0")
        page.wait_for_function(SETTLED)
        game_id = page.evaluate("() => window.odin.game")
        view = page.evaluate("() => window.odin.view")
        move = {"action": view["legal"][0]["action"], "turn": view["turn"]}

        evil = browser.new_page()
        evil.set_default_timeout(WAIT_MS)
        evil.goto(other_site)
        outcomes = evil.evaluate("([app, id, move]) => window.attack(app, id, move)",
                                 [url, game_id, move])  # fmt: skip
        assert len(outcomes) == 72
        # The JSON request needs the server's leave (CORS), which it never gives.
        assert outcomes[70] == "blocked"
        evil.wait_for_timeout(500)  # the form's navigation
        evil.close()

        # The person's game is still there, unmoved, and plays on from its own page.
        now = page.evaluate(f"async () => (await fetch('/api/games/{game_id}')).status")
        assert now == 200
        kept = page.evaluate(f"async () => (await (await fetch('/api/games/{game_id}')).json())")
        assert kept["view"]["turn"] == move["turn"]
        choice = max(view["legal"], key=lambda a: (a["kind"] != "pass", len(a["cards"])))
        if choice["kind"] == "pass":
            page.click("#pass")
        else:
            click_move(page, choice)
            page.click("#submit")
        page.wait_for_function(f"() => window.odin.view.turn > {move['turn']}")
        browser.close()
    assert not list(out.glob("*.json"))  # no game of the other site was saved either
