"""The web app in a real browser: Debian's Chromium driven by Playwright plays whole games by
clicking and by the keyboard at a desktop's size, finds that an illegal selection cannot be
submitted and is explained, opens the game's replay and steps through it forwards and backwards
and along its move log, from every hand open and from one seat's view (which Open keeps), asks for
a hint and opens the game's review and checks what the page shows against the API's answers,
and checks that nothing is wider than the window or its panel (1400x900, and 1024 px wide with 6
players). ``test_webapp_phone.py`` does the same at a phone's size. The first test saves a
screenshot of the game in progress under the test's temporary folder, or to the path in
``ODIN_SCREENSHOT`` (``make screenshot`` renews ``docs/webapp.png``, which the README shows): a
test run never rewrites a tracked file.

The server runs as ``python -m odin_lab.webapp --port 0`` in a subprocess. Chromium comes from the
system (``make test`` installs Debian's ``chromium``); Playwright downloads no browser. Without
Chromium the test fails, saying how to install it.
"""

from __future__ import annotations

import os
import re
import selectors
import subprocess
import sys
from contextlib import contextmanager
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright

from odin_lab.evaluation.records import load_records
from odin_lab.files import write_atomic

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]  # fmt: skip
WAIT_MS = 20_000
REVIEW_MS = 180_000
"""A review scores every decision of a seat with the search: up to a minute on a 2-core machine."""
DESKTOP = {"width": 1400, "height": 900}
SETTLED = """() => {
    const s = window.odin;
    return Boolean(s && s.view && !s.busy &&
        (s.view.legal.length > 0 || !document.getElementById("over").hidden));
}"""
"""The page has shown every event and waits for the person, or shows the end of the game."""
OVERFLOW = """() => {
    // The page wider than the window, and every box that is wider than its own width.
    const boxes = `.panel, .felt, .side, .seat, .zone, .me, .controls, .score-box, .coach, .log,
        .topbar`;
    const over = [...document.querySelectorAll(boxes)]
        .filter((e) => e.offsetParent !== null && e.scrollWidth > e.clientWidth + 1)
        .map((e) => `${e.id || e.className}: ${e.scrollWidth} > ${e.clientWidth}`);
    return {page: document.documentElement.scrollWidth, window: window.innerWidth, over};
}"""


@contextmanager
def serving(tmp_path: Path):
    """``(url, out folder)`` of a server started as a person would start it, stopped after."""
    out = tmp_path / "web"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "odin_lab.webapp",
            "--port",
            "0",
            "--out",
            str(out),
            "--records",
            str(tmp_path),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
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
    # The console of the server: no Python warning (an agent's note goes to the page).
    console = proc.stderr.read()
    assert "Warning" not in console, console[-2000:]


@pytest.fixture
def server(tmp_path):
    with serving(tmp_path) as found:
        yield found


def launch(playwright):
    if not CHROMIUM.exists():
        pytest.fail(
            f"Chromium is missing at {CHROMIUM}: the browser test needs Debian's chromium "
            "(`make test` installs it; by hand: apt-get install -y chromium)"
        )
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def open_page(browser, size: dict, errors: list[str], phone: bool = False):
    """A page of ``size`` (a phone's: touch, mobile viewport) whose script errors and console
    errors go to ``errors``."""
    context = browser.new_context(
        viewport=size, bypass_csp=True, has_touch=phone, is_mobile=phone
    )  # Playwright's waiting functions evaluate strings, which the page's CSP forbids.
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return page


def assert_fits(page, where: str) -> None:
    """Nothing on the page is wider than the window, and no panel is wider than itself."""
    seen = page.evaluate(OVERFLOW)
    assert seen["page"] <= seen["window"], f"{where}: the page is {seen['page']} px wide"
    assert seen["over"] == [], f"{where}: {seen['over']}"


def new_game(page, players: int, opponents: list[str], threshold: int, seed: int) -> None:
    page.select_option("#players", str(players))
    for seat, agent in enumerate(opponents, 1):
        page.select_option(f"#opponent-{seat}", agent)
    page.fill("#threshold", str(threshold))
    page.fill("#seed", str(seed))
    page.click("#start")
    page.select_option("#speed", "0")  # show the others' moves without pauses


def settle(page) -> dict:
    """The view once the page waits for the person (or shows the end of the game)."""
    page.wait_for_function(SETTLED)
    return page.evaluate("() => window.odin.view")


def illegal_pair(view: dict) -> list[str] | None:
    """Two cards of the hand that together are no legal action, if there are such."""
    legal = {" ".join(sorted(a["cards"])) for a in view["legal"]}
    hand = view["seats"][0]["hand"]
    for i, a in enumerate(hand):
        for b in hand[i + 1 :]:
            if " ".join(sorted([a, b])) not in legal:
                return [a, b]
    return None


def is_combo(cards: list[str]) -> bool:
    """Rule R4: one colour or one value."""
    return len({c[0] for c in cards}) == 1 or len({c[1:] for c in cards}) == 1


def largest(view: dict) -> dict:
    """The largest play sheds cards fastest; pass only when nothing else is legal."""
    return max(view["legal"], key=lambda a: (a["kind"] != "pass", len(a["cards"])))


def click_move(page, choice: dict, tap: bool = False) -> None:
    """Select the cards of ``choice`` (a legal action of the view) by clicking (tapping) them."""
    where = ".pickable" if choice["kind"] == "take" else "#me .card"
    for name in choice["cards"]:
        (page.tap if tap else page.click)(f'{where}[data-card="{name}"]')


def make_move(page, choice: dict, tap: bool = False) -> None:
    """Play ``choice`` with the page's buttons, checking that Play names its cards."""
    press = page.tap if tap else page.click
    if choice["kind"] == "pass":
        press("#pass")
        return
    click_move(page, choice, tap)
    assert page.is_enabled("#submit")
    assert page.inner_text("#submit").endswith(" ".join(choice["cards"]))
    press("#submit")


def finish_game(page, tap: bool = False, each_turn=None) -> int:
    """Plays the person's turns with the largest play until the game is over; the moves made.
    ``each_turn(page, view)`` runs first on every turn."""
    moves = 0
    while True:
        view = settle(page)
        if page.is_visible("#over"):
            return moves
        assert view["current"] == 0 and view["legal"]
        if each_turn:
            each_turn(page, view)
        make_move(page, largest(view), tap)
        moves += 1
        assert moves < 400, "the game does not end"


def saved_record(page, out: Path):
    """The game-over panel's record: it names the file, which holds the one game played."""
    key = page.evaluate("() => window.odin.record.file")
    shown = page.inner_text("#over-saved")
    assert key.startswith("saved/game-") and key in shown
    path = out / key.removeprefix("saved/")
    # The panel names the file where it is on the server's disk (the server's --out folder).
    assert shown.startswith(f"Saved as {path} (") and path.is_file()
    return load_records(path)


def check_move_log(page) -> int:
    """The replay's move log lists every decision, in order, as the frames tell it; clicking one
    shows its frame and marks its trick, which starts with a lead. Returns the last frame."""
    frames = page.evaluate("() => window.odin.replay.frames.map((f) => f.event)")
    last = len(frames) - 1
    texts = page.eval_on_selector_all("#rp-log li.move .text", "li => li.map(i => i.textContent)")
    assert len(texts) == last > 0
    for k, (text, event) in enumerate(zip(texts, frames[1:], strict=True), 1):
        assert text.startswith(event["text"]), k
    k = min(5, last)
    page.click(f'#rp-log li.move[data-frame="{k}"]')
    assert page.inner_text("#rp-counter") == f"{k} / {last}"
    assert "current" in page.get_attribute(f'#rp-log li[data-frame="{k}"]', "class").split()
    trick = page.eval_on_selector_all(".this-trick", "li => li.map(i => +i.dataset.frame)")
    assert k in trick and trick == list(range(trick[0], trick[-1] + 1))
    assert re.search(r" leads? ", frames[trick[0]]["text"]), frames[trick[0]]["text"]
    return last


# -- hints and reviews: what the page shows is what the API answered --------------------------


def fixed(x: float, digits: int) -> str:
    """``x.toFixed(digits)`` as JavaScript writes it: the exact value, a tie rounded up."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def shown_percent(x: float) -> str:
    """A chance as the page shows it (JavaScript's Math.round of the percent)."""
    return f"{int(x * 100 + 0.5)}%"


def check_hint(page, key: bool = False, tap: bool = False) -> dict:
    """Asks for a hint on the person's turn (the button, or the key H) and checks the page
    against the API's answer: every candidate listed with its label, chance to win and expected
    penalty, the best first and starred, the chance on each lone card. Then plays the best move
    by choosing it in the list. Returns the answer."""
    view = settle(page)
    with page.expect_response(lambda r: r.url.endswith("/hint")) as answer:
        if key:
            page.keyboard.press("h")
        else:
            (page.tap if tap else page.click)("#hint-button")
    data = answer.value.json()
    assert answer.value.status == 200, data
    page.wait_for_selector("#coach:not([hidden])")
    legal = {a["action"] for a in view["legal"]}
    candidates = data["candidates"]
    assert {c["action"] for c in candidates} == legal
    (best,) = [c for c in candidates if c["best"]]
    assert best["action"] == data["best"]
    rows = page.eval_on_selector_all(
        "#coach .candidate",
        """rows => rows.map(r => ({action: +r.dataset.action, best: r.classList.contains("best"),
            what: r.querySelector(".what").textContent, win: r.querySelector(".win").textContent,
            pen: r.querySelector(".pen").textContent}))""",
    )
    assert [row["action"] for row in rows] == [c["action"] for c in candidates]  # best first
    assert rows[0]["action"] == best["action"] and rows[0]["best"]
    by_action = {c["action"]: c for c in candidates}
    for row in rows:
        c = by_action[row["action"]]
        assert row["what"].lower().endswith(c["label"].lower()) and row["best"] == c["best"]
        assert row["win"] == f"win {shown_percent(c['win'])}"
        assert row["pen"] == f"penalty {fixed(c['penalty'], 1)}"
    where = "#table-zone .pickable" if view["phase"] == "take" else "#me .card"
    for c in candidates:
        for name in c["cards"]:
            tile = page.locator(f'{where}[data-card="{name}"]')
            if c["best"]:
                assert "coach-best" in tile.get_attribute("class").split()
            if len(c["cards"]) == 1:
                assert tile.locator(".odds").inner_text() == shown_percent(c["win"])
        if c["kind"] == "pass":
            assert page.inner_text("#pass") == f"Pass · {shown_percent(c['win'])}"
    assert_fits(page, "a hint")
    (page.tap if tap else page.click)(f'#coach .candidate[data-action="{best["action"]}"] button')
    if best["kind"] == "pass":
        (page.tap if tap else page.click)("#pass")
    else:
        assert page.inner_text("#submit").endswith(" ".join(best["cards"]))
        (page.tap if tap else page.click)("#submit")
    return data


MINUS = "\u2212"


def check_longer_hint(page) -> None:
    """Think longer asks again with a budget of 3 s, and the page shows that answer."""
    turn = settle(page)["turn"]
    page.click("#hint-button")
    page.wait_for_selector("#hint-longer")
    with page.expect_response(lambda r: r.url.endswith("/hint")) as answer:
        page.click("#hint-longer")
    assert answer.value.request.post_data_json == {"ms": 3000, "turn": turn}
    data = answer.value.json()
    assert answer.value.status == 200 and data["budget_ms"] == 3000, data
    page.wait_for_function("() => window.odin.hint.data.budget_ms === 3000")
    assert page.locator("#hint-longer").count() == 0  # the longest it offers
    shown = page.eval_on_selector_all(".candidate", "rows => rows.map(r => +r.dataset.action)")
    assert shown == [c["action"] for c in data["candidates"]]


def spoken(label: str) -> str:
    """A review's label with its verb, as the page writes it."""
    return label if label == "pass" or label.startswith("take ") else f"play {label}"


def decision_note(d: dict) -> str:
    """The note the page writes beside a reviewed decision's move."""
    if d["action"] == d["best_action"]:
        note = "\u2713 the search's move"
    else:
        points = d["points_lost"]
        signed = ("+" if points >= 0 else MINUS) + fixed(abs(points), 1)
        note = f"\u2212{shown_percent(d['loss'])} to win, {signed} points · best: "
        note += spoken(d["best_label"])
    return note + (" · hint asked" if d["hinted"] else "")


def check_review(page, seat: int, start) -> dict:
    """Starts a review with ``start()`` and checks the page against the API's answer: every
    decision of ``seat`` noted beside its move in the log (a move of that seat and action),
    the summary, the costliest decisions as buttons that jump to them, and the key C."""
    with page.expect_response(lambda r: r.url.endswith("/api/review"), timeout=REVIEW_MS) as answer:
        start()
    data = answer.value.json()
    assert answer.value.status == 200, data
    assert data["seat"] == seat and data["decisions"]
    page.wait_for_function("() => document.querySelectorAll('#rp-log .rv').length > 0")
    events = page.evaluate("() => window.odin.replay.frames.map((f) => f.event)")
    frame_of = {}
    for d in data["decisions"]:
        k = d["frame"] + 1  # the replay's frame after the decision: its move in the log
        assert events[k]["seat"] == seat and events[k]["action"] == d["action"], d
        assert not events[k]["forced"]
        note = page.inner_text(f'#rp-log li.move[data-frame="{k}"] .rv')
        assert note == decision_note(d), (note, decision_note(d))
        frame_of[d["step"]] = k
    assert page.locator("#rp-log .rv").count() == len(data["decisions"])
    s = data["summary"]
    summary = page.inner_text("#rv-summary")
    assert f"{s['decisions']} decisions" in summary and shown_percent(s["agreed"]) in summary
    assert f"{fixed(s['points_lost_per_hand'], 2)} points lost per hand" in summary
    jumps = page.locator("#rv-costliest .jump")
    assert jumps.count() == len(data["costliest"])
    last = len(events) - 1
    for i, step in enumerate(data["costliest"][:3]):
        jumps.nth(i).click()
        assert page.inner_text("#rp-counter") == f"{frame_of[step]} / {last}"
        assert "costly" in page.get_attribute("#rp-log li.current", "class").split()
    if data["costliest"]:
        page.click("#rp-first")
        page.keyboard.press("c")
        first = min(frame_of[step] for step in data["costliest"])
        assert page.inner_text("#rp-counter") == f"{first} / {last}"
    assert_fits(page, "a review")
    return data


# -- the tests ------------------------------------------------------------------------------


def screenshot_of_a_four_player_game(page, path: Path) -> None:
    """A few moves of a game against the opponents the form shows first (the lab's strongest
    player and network), then the picture, a play selected."""
    page.select_option("#players", "4")
    shown = [page.input_value(f"#opponent-{seat}") for seat in (1, 2, 3)]
    assert shown == ["search", "dmc", "dmc"]
    new_game(page, 4, [], 15, 5)
    settle(page)
    assert page.is_hidden("#table-notes")  # dmc is one network for every size: nothing to note
    moves = 0
    while True:
        view = settle(page)
        plays = [a for a in view["legal"] if a["kind"] != "pass"]
        if moves >= 3 and view["phase"] == "follow" and any(len(a["cards"]) > 1 for a in plays):
            click_move(page, max(plays, key=lambda a: len(a["cards"])))
            assert page.is_enabled("#submit")
            assert_fits(page, "a 4-player game")  # the score table of 4 fits its panel
            write_atomic(path, page.screenshot())
            page.click("#clear")
            return
        assert moves < 60, "no follow with a play of several cards to show"
        make_move(page, plays[0] if plays else view["legal"][0])
        moves += 1


def test_a_whole_game_by_clicking_then_its_replay_forwards_and_backwards(server, tmp_path):
    url, out = server
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, DESKTOP, errors)
        page.goto(url)
        picture = Path(os.environ.get("ODIN_SCREENSHOT") or tmp_path / "webapp.png")
        screenshot_of_a_four_player_game(page, picture)
        assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

        page.click("#nav-new")
        new_game(page, 2, ["random"], 5, 11)
        refused = []

        def try_an_illegal_pair(page, view):
            pair = illegal_pair(view) if view["phase"] != "take" else None
            if pair and not refused:
                for name in pair:
                    page.click(f'#me .card[data-card="{name}"]')
                assert page.is_disabled("#submit")
                assert page.inner_text("#hint").startswith("Not a legal move: ")
                page.click("#clear")
                refused.append(pair)

        moves = finish_game(page, each_turn=try_an_illegal_pair)
        assert refused, "no turn offered an illegal pair of cards"
        assert page.inner_text("#over-title").startswith("Game over")
        assert_fits(page, "the game-over panel")
        record = saved_record(page, out)
        assert record.specs == ("human", "random") and len(record.games) == 1

        page.click("#watch")
        page.wait_for_selector("#replay:not([hidden])")
        counter = page.inner_text("#rp-counter")
        last = int(counter.split(" / ")[1])
        assert counter == f"0 / {last}" and page.inner_text("#rp-caption") == "The deal"
        assert last >= 2 * moves  # the person's decisions and at least as many of the other's
        assert check_move_log(page) == last
        page.click("#rp-first")
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

        def seat_1_view():
            assert page.locator('#rp-seats .seat[data-seat="0"] > .cards').count() == 0
            assert page.locator('#rp-seats .seat[data-seat="0"] .back').count() > 0
            assert page.locator('#rp-seats .seat[data-seat="1"] > .cards .card').count() > 0

        seat_1_view()
        page.click("#rp-last")
        assert page.inner_text("#rp-counter") == f"{last} / {last}"
        assert page.is_disabled("#rp-next") and "Game over" in page.inner_text("#rp-caption")
        page.keyboard.press("ArrowLeft")
        assert page.inner_text("#rp-counter") == f"{last - 1} / {last}"
        # Open (the game again, from the list) keeps seat 1's view: every hand open would spoil.
        page.click("#rec-open")
        page.wait_for_function("() => window.odin.frame === 0")
        assert page.input_value("#rec-seat") == "1"
        assert page.evaluate("() => window.odin.replay.viewer") == 1
        seat_1_view()
        assert_fits(page, "a replay")
        browser.close()
    assert errors == []


EXPLAINED = {
    "r4": "is not a combo: a combo's cards share one colour or one value",
    "r8": "you may lead one card, or your whole hand if it is one combo",
}
"""What the page says of two cards led together: of two cards that are no combo (rule R4), and
of two that are one but not the whole hand (rule R8)."""


def pairs(cards: list[str]) -> list[list[str]]:
    return [[a, b] for i, a in enumerate(cards) for b in cards[i + 1 :]]


def test_a_whole_game_by_the_keyboard_and_a_lead_explained(server):
    url, out = server
    errors: list[str] = []
    explained, sorted_by_key = [], []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, DESKTOP, errors)
        page.goto(url)
        new_game(page, 2, ["random"], 5, 3)
        settle(page)
        assert page.is_visible("#keys-help") and "Enter" in page.inner_text("#keys-help")
        assert page.is_visible("#me .card u.key")  # each card shows its number key
        moves = 0
        while True:
            view = settle(page)
            if page.is_visible("#over"):
                break
            take = view["phase"] == "take"
            order = page.eval_on_selector_all(
                "#table-zone .pickable" if take else "#me .card",
                "tiles => tiles.map(t => t.dataset.card)",
            )
            hand = view["seats"][0]["hand"]
            # A follow outlines the cards of the plays that beat the table; on a lead any card
            # may be led alone, so no outline would tell anything.
            outlined = page.eval_on_selector_all("#me .playable", "t => t.map(c => c.dataset.card)")
            in_plays = {c for a in view["legal"] if a["kind"] == "play" for c in a["cards"]}
            assert set(outlined) == (in_plays if view["phase"] == "follow" else set())
            if view["phase"] == "lead" and len(hand) > 2:
                for pair in pairs(order):
                    rule = "r8" if is_combo(pair) else "r4"
                    if rule in explained:
                        continue
                    for name in pair:  # picked by their number keys
                        page.keyboard.press(str(order.index(name) + 1))
                    assert page.is_disabled("#submit")
                    text = page.inner_text("#hint")
                    assert text.startswith("Not a legal move: ") and text.endswith(
                        f"(rule {rule.upper()})"
                    )
                    assert EXPLAINED[rule] in text
                    assert page.get_attribute("#hint a", "href") == f"/static/rules.html#{rule}"
                    page.keyboard.press("Escape")
                    assert page.evaluate("() => window.odin.selected.size") == 0
                    explained.append(rule)
            if not take and len(hand) > 1 and not sorted_by_key:
                page.keyboard.press("s")
                resorted = page.eval_on_selector_all("#me .card", "t => t.map(c => c.dataset.card)")
                assert sorted(resorted) == sorted(order) and page.input_value("#sort") == "value"
                order = resorted
                sorted_by_key.append(True)
            choice = largest(view)
            if choice["kind"] == "pass":
                page.keyboard.press("p")
            else:
                for name in choice["cards"]:
                    page.keyboard.press(str(order.index(name) + 1))
                assert page.inner_text("#submit").endswith(" ".join(choice["cards"]))
                page.keyboard.press("Enter")
            moves += 1
            assert moves < 400
        assert sorted(explained) == ["r4", "r8"] and sorted_by_key
        assert saved_record(page, out).specs == ("human", "random")
        browser.close()
    assert errors == []


def test_six_players_at_1024_px_fit_in_play_and_in_the_replay(server):
    url, _ = server
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, {"width": 1024, "height": 768}, errors)
        page.goto(url)
        assert_fits(page, "the new-game form")
        # Threshold 1: the game ends with the first hand. The bundled ppo plays its 4-player
        # model at 6 players: the page says so (and the server's console no warning, serving).
        new_game(page, 6, ["ppo", "random", "planner", "ppo", "random"], 1, 8)
        settle(page)
        note = "ppo (seats 1, 4): its model was trained for 4 players, not 6: expect weaker play"
        assert page.inner_text("#table-notes") == f"Note: {note}"
        assert page.evaluate("() => window.odin.final.notes") == [note]

        def all_five_seen(page, view):
            assert_fits(page, "a 6-player game")
            seats = page.eval_on_selector_all(
                "#seats .seat", "s => s.map(e => e.getBoundingClientRect().right)"
            )
            assert len(seats) == 5 and max(seats) <= page.evaluate("() => innerWidth")

        finish_game(page, each_turn=all_five_seen)
        assert_fits(page, "the game-over panel of 6 players")
        page.click("#watch")
        page.wait_for_selector("#replay:not([hidden])")
        page.click("#rp-last")
        assert page.locator("#rp-scores tr").count() == 3  # the names, hand 1, the totals
        assert_fits(page, "the replay of 6 players")  # its score table within its panel
        browser.close()
    assert errors == []


def test_a_hint_and_the_review_of_the_game_on_a_desktop(server):
    url, out = server
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, DESKTOP, errors)
        page.goto(url)
        new_game(page, 2, ["greedy"], 3, 21)
        check_hint(page)
        check_longer_hint(page)
        check_hint(page, key=True)  # the key H asks as well
        finish_game(page)
        review = check_review(page, 0, lambda: page.click("#over-review"))
        assert page.input_value("#rv-seat") == "0"
        # The record keeps the two turns the person asked about; the review marks them.
        assert review["summary"]["hinted"] == 2 == sum(d["hinted"] for d in review["decisions"])
        assert "2 after a hint" in page.inner_text("#rv-summary")
        # Another seat's review, asked for in the replay viewer.
        page.select_option("#rv-seat", "1")
        check_review(page, 1, lambda: page.click("#rv-run"))
        # From seat 0's view seat 1's review is gone (it names seat 1's cards) and only seat 0
        # may be reviewed.
        page.select_option("#rec-seat", "0")
        page.wait_for_function("() => window.odin.replay.viewer === 0")
        assert page.locator("#rp-log .rv").count() == 0 and page.inner_text("#rv-summary") == ""
        assert page.input_value("#rv-seat") == "0" and page.is_disabled(
            '#rv-seat option[value="1"]'
        )
        # A refusal is shown as the server words it: the records file is gone meanwhile.
        (out / page.evaluate("() => window.odin.replay.file").removeprefix("saved/")).unlink()
        with page.expect_response(lambda r: r.url.endswith("/api/review")) as answer:
            page.click("#rv-run")
        assert answer.value.status == 404
        page.wait_for_function("() => document.getElementById('rv-error').textContent !== ''")
        assert page.inner_text("#rv-error") == answer.value.json()["error"]
        assert page.is_enabled("#rv-run") and page.inner_text("#rv-run") == "Review"
        browser.close()
    # The browser logs the refused request; nothing else went wrong.
    assert [e for e in errors if "404" not in e] == [] and len(errors) == 1


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
        outcomes = evil.evaluate(
            "([app, id, move]) => window.attack(app, id, move)", [url, game_id, move]
        )
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
