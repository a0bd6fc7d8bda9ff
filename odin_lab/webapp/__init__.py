"""Play Odin against the lab's agents in the browser, and replay recorded games.

``python -m odin_lab.webapp`` (:mod:`odin_lab.webapp.__main__`) serves a local page on 127.0.0.1.
It sits at the level of the command-line tools: it imports :mod:`odin_lab.evaluation`,
:mod:`agents` and :mod:`odin_env`, and nothing of the lab imports it.

- :mod:`odin_lab.webapp.views`: what the page is shown of a game, built for one seat;
- :mod:`odin_lab.webapp.sessions`: games in progress, kept on the server, and their records;
- :mod:`odin_lab.webapp.replays`: the records files to replay and their games as frames;
- :mod:`odin_lab.webapp.footprint`: the memory a records file takes, before and after parsing;
- :mod:`odin_lab.webapp.app`: the HTTP interface (FastAPI); ``static/`` the page (HTML, CSS, JS).

What the page holds: during play, only what the person's seat sees at a real table (their hand,
the table, the discard, hand sizes, totals, cards known to be in other hands). Agents' hands
are never sent during play; the replay of a recorded (finished) game may show every hand.
"""
