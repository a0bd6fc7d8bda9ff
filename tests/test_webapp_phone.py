"""The web app on a phone, and its rules page.

Debian's Chromium driven by Playwright, as in ``test_webapp_browser.py`` (whose server fixture and
helpers this file uses), at a phone's size (390x844, touch) and at 360 px: a whole game by
tapping, nothing wider than the screen on any page (setup, the game, the game-over panel, the
replay with its move log, the rules), the hint and the review shown beside what the API answered.

The rules page (``odin_lab/webapp/static/rules.html``) is the players' part of ``docs/rules.md``
(rules R1 to R16) rendered by :func:`rules_page`; a test fails when the file differs from it, and
``python tests/test_webapp_phone.py`` writes it anew.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pytest
from playwright.sync_api import sync_playwright
from test_webapp_browser import (
    assert_fits,
    check_hint,
    check_move_log,
    check_review,
    finish_game,
    launch,
    new_game,
    open_page,
    saved_record,
    serving,
    settle,
)

ROOT = Path(__file__).resolve().parents[1]
RULES_MD = ROOT / "docs" / "rules.md"
RULES_HTML = ROOT / "odin_lab" / "webapp" / "static" / "rules.html"
RULES_START = "## Material"
RULES_END = "All settings live in"
"""The players' rules run from the section on the material to the research settings' table."""
GOAT_START = "## The Grumpy Goat"
GOAT_END = "## How the engine encodes it"
"""Then the Goat's variant (G1-G5), for the games played with it."""

PHONE = {"width": 390, "height": 844}
SMALL_PHONE = {"width": 360, "height": 740}

PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>The rules of Odin · odin-lab</title>
  <link rel="stylesheet" href="/static/style.css">
</head>
<body>
  <!-- Rules R1-R16 and G1-G5 of docs/rules.md, rendered by tests/test_webapp_phone.py (rules_page);
       `python tests/test_webapp_phone.py` renews this file, and its test fails when it differs. -->
  <header class="topbar">
    <h1>Odin <small>the rules</small></h1>
    <nav><a class="button" href="/">Play</a></nav>
  </header>
  <main class="rules panel">
    <h2>In short</h2>
    <p>Get rid of your cards. On a lead, put down one card, or your whole hand if it is one combo
      (cards of one colour, or of one value). To follow, beat the table: as many cards with a
      higher number, or exactly one card more; or pass. Who beats a combo keeps one of its cards.
      When someone runs out, everyone else scores a point per card left; the lowest total wins
      once someone reaches the threshold.</p>
    <p>In the web app: click cards to select them, then Play, Pass or Take; on a keyboard,
      <kbd>1</kbd>–<kbd>9</kbd> pick cards, <kbd>Enter</kbd> plays, <kbd>P</kbd> passes,
      <kbd>Esc</kbd> clears, <kbd>H</kbd> asks the search for a hint.</p>
{rules}
  </main>
</body>
</html>
"""


def rules_page(markdown_text: str) -> str:
    """The rules page: the players' rules of ``markdown_text`` (docs/rules.md) as HTML, each rule's
    item anchored by its id (``#r8``), so the game's explanations can link to a rule."""
    import markdown

    parts = []
    for first, last in ((RULES_START, RULES_END), (GOAT_START, GOAT_END)):
        start = markdown_text.index(first)
        text = markdown_text[start : markdown_text.index(last, start)]
        # docs/rules.md nests lists and tables by 4 spaces, as Python-Markdown (and MkDocs) wants.
        body = markdown.markdown(text, extensions=["tables"], output_format="html")
        anchored = r'<li id="\2\3">\1<strong>\2\3.'  # R8 -> id r8 (lower-cased below)
        body = re.sub(r"<li>(\s*(?:<p>)?)<strong>([RG])(\d+)\.", anchored, body)
        body = re.sub(r'<li id="([RG])', lambda m: f'<li id="{m[1].lower()}', body)
        parts.append(body.strip())
    return PAGE.format(rules="\n".join(parts))


def page_text(markup: str) -> str:
    """The words of an HTML page, tags dropped and spaces collapsed."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup)).split())


def test_the_rules_page_is_the_players_part_of_docs_rules_md():
    page = RULES_HTML.read_text(encoding="utf-8")
    assert page == rules_page(RULES_MD.read_text(encoding="utf-8")), (
        "odin_lab/webapp/static/rules.html differs from docs/rules.md: renew it with "
        "`python tests/test_webapp_phone.py`"
    )
    for rule in range(1, 17):
        assert f'id="r{rule}"' in page, rule
    for rule in range(1, 6):
        assert f'id="g{rule}"' in page, rule
    words = page_text(page)
    assert "if the leader's whole hand is a single combo" in words
    assert "Nothing else beats A." in words


@pytest.fixture
def server(tmp_path):
    with serving(tmp_path) as found:
        yield found


def hand_in_its_box(page) -> None:
    """Every card of the person's hand lies inside the hand's box: the cards wrap into rows."""
    box = page.eval_on_selector("#me", "e => e.getBoundingClientRect().right")
    rights = page.eval_on_selector_all(
        "#me .card", "t => t.map(c => c.getBoundingClientRect().right)"
    )
    assert rights and max(rights) <= box


def test_a_whole_game_by_tapping_on_a_phone_then_its_replay_and_the_rules(server):
    url, out = server
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, PHONE, errors, phone=True)
        page.goto(url)
        assert_fits(page, "the new-game form")

        # The rules open from the header, in a page of their own that fits the phone too.
        with page.context.expect_page() as opened:
            page.tap("#nav-rules")
        rules = opened.value
        rules.wait_for_load_state()
        assert rules.url.endswith("/static/rules.html") and "rules" in rules.title()
        assert "R8. Leading." in rules.inner_text("#r8")
        assert_fits(rules, "the rules page")
        rules.close()

        new_game(page, 2, ["random"], 5, 7)
        settle(page)
        assert page.is_visible("#me .card") and page.is_visible("#hint-button")
        # No keyboard to tell of on a phone: neither the keys' line nor the cards' key numbers.
        assert not page.is_visible("#keys-help") and not page.is_visible("#me .card u.key")
        rows = []

        def every_turn(page, view):
            assert_fits(page, f"turn {view['turn']}")
            hand_in_its_box(page)
            tops = page.eval_on_selector_all("#me .card", "t => t.map(c => c.offsetTop)")
            rows.append(len(set(tops)))

        moves = finish_game(page, tap=True, each_turn=every_turn)
        assert moves > 3 and max(rows) >= 2, "a full hand is drawn in two rows or more"
        assert_fits(page, "the game-over panel")
        assert page.is_visible("#over-review")
        assert saved_record(page, out).specs == ("human", "random")

        page.tap("#watch")
        page.wait_for_selector("#replay:not([hidden])")
        last = check_move_log(page)
        page.tap("#rp-first")
        page.tap("#rp-next")
        page.tap("#rp-next")
        assert page.inner_text("#rp-counter") == f"2 / {last}"
        assert_fits(page, "a replay")
        browser.close()
    assert errors == []


def test_six_players_fit_a_360_px_phone_in_play_and_in_the_replay(server):
    url, _ = server
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, SMALL_PHONE, errors, phone=True)
        page.goto(url)
        new_game(page, 6, ["ppo", "random", "greedy", "random", "greedy"], 1, 4)
        settle(page)  # the note on ppo's 4-player model at 6 players fits too
        assert page.inner_text("#table-notes").startswith("Note: ppo (seat 1): its model was")

        def fits(page, view):
            assert_fits(page, "a 6-player game")
            hand_in_its_box(page)

        finish_game(page, tap=True, each_turn=fits)
        assert_fits(page, "the game-over panel of 6 players")
        page.tap("#watch")
        page.wait_for_selector("#replay:not([hidden])")
        page.tap("#rp-last")
        assert_fits(page, "the replay of 6 players")
        browser.close()
    assert errors == []


def test_a_hint_and_the_review_of_the_game_on_a_phone(server):
    url, _ = server
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = launch(playwright)
        page = open_page(browser, PHONE, errors, phone=True)
        page.goto(url)
        new_game(page, 2, ["greedy"], 3, 22)
        check_hint(page, tap=True)
        finish_game(page, tap=True)
        check_review(page, 0, lambda: page.tap("#over-review"))
        browser.close()
    assert errors == []


if __name__ == "__main__":
    RULES_HTML.write_text(rules_page(RULES_MD.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {RULES_HTML.relative_to(ROOT)}", file=sys.stderr)
