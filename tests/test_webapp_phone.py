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

ROOT = Path(__file__).resolve().parents[1]
RULES_MD = ROOT / "docs" / "rules.md"
RULES_HTML = ROOT / "odin_lab" / "webapp" / "static" / "rules.html"
RULES_START = "## Material"
RULES_END = "All settings live in"
"""The players' rules run from the section on the material to the research settings' table."""

PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>The rules of Odin · odin-lab</title>
  <link rel="stylesheet" href="/static/style.css">
</head>
<body>
  <!-- Rules R1 to R16 of docs/rules.md, rendered by tests/test_webapp_phone.py (rules_page);
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

    start = markdown_text.index(RULES_START)
    end = markdown_text.index(RULES_END, start)
    # docs/rules.md nests lists and tables by 2 spaces; Python-Markdown wants 4.
    text = re.sub(r"^( +)", r"\1\1", markdown_text[start:end], flags=re.MULTILINE)
    body = markdown.markdown(text, extensions=["tables"], output_format="html")
    body = re.sub(r"<li>(\s*(?:<p>)?)<strong>R(\d+)\.", r'<li id="r\2">\1<strong>R\2.', body)
    return PAGE.format(rules=body.strip())


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
    words = page_text(page)
    assert "if the leader's whole hand is a single combo" in words
    assert "Nothing else beats A." in words


if __name__ == "__main__":
    RULES_HTML.write_text(rules_page(RULES_MD.read_text(encoding="utf-8")), encoding="utf-8")
    print(f"wrote {RULES_HTML.relative_to(ROOT)}", file=sys.stderr)
