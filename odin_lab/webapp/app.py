"""The web app's HTTP interface (FastAPI): the page, the play API and the replay API.

=========================================  ====================================================
``GET  /``                                 the page (``static/index.html``; plain HTML/CSS/JS)
``GET  /api/agents``                       the opponents a person may pick and those the form
                                           shows first, the table sizes
``POST /api/games``                        a new game: ``{"players", "opponents", "threshold",
                                           "seed"}``; plays up to the person's first choice
``GET  /api/games/{id}``                   the game's view now and its whole text log
``POST /api/games/{id}/move``              ``{"action", "turn"}``: the person's move, then the
                                           agents' moves up to the person's next choice
``POST /api/games/{id}/hint``              optional ``{"ms", "turn"}``: the coach's evaluation of
                                           each legal move of the person's decision (a hint)
``GET  /api/records``                      the records files under the saved and records folders
``GET  /api/replay?file=K&game=G&seat=S``  game G of file K as frames, seen from seat S or
                                           ``all`` (every hand open)
``POST /api/review``                       ``{"file", "game", "seat"}``: every decision of the
                                           seat in that game scored by the search
=========================================  ====================================================

A hint (:func:`odin_lab.evaluation.coach.hint`, plus ``turn``) is built from the person's
observation only, within ``ms`` milliseconds (100-5000, default 1000), and the step is kept in
the game's record as a hint asked; at most :data:`HINTS_AT_ONCE` are built at a time (503
beyond). A review (:mod:`odin_lab.webapp.reviews`) names a file as a replay does (its key in
``GET /api/records``; nothing outside the folders) and answers
:func:`odin_lab.evaluation.review.review_record`'s JSON with ``file``.

A play response is ``{"game_id", "seat", "events", "view", "over", "record", "save_error",
"notes"}``: ``events`` are the decisions since the person's last move, in order, each with the
person's view after it (:mod:`odin_lab.webapp.sessions`); ``view`` the view now, with ``legal``
(the person's legal actions) while they are to act; ``record`` names the saved records file
once the game is over (``{"file", "game", "path"}``: its key in ``GET /api/records``, the game
in it, and its path on the server, ``results/web/game-....json``), ``save_error`` why the game
could not be saved when last tried (a full disk: when it ended, or when the server would have
dropped it, which it then does not; ``null`` once saved); ``notes`` one line per agent that
plays a table size it was not trained for (:attr:`odin_lab.evaluation.table.Table.notes`: said
on the page, not warned on the console).
Every view of a game in play is built for the person's seat only
(:func:`odin_lab.webapp.views.seat_view`), so no response carries another seat's hidden cards.

Every refusal is a 4xx response ``{"error": "one line"}`` and changes nothing: 400 for a body
that is not JSON or has a wrong field or type, or a ``Host`` not allowed; 403 for a request from
another site (below); 404 for an unknown game id, file or path; 409 for a move or a hint out of
turn or after the end; 413 for a body over :data:`MAX_BODY` bytes; 415 for a state-changing
request whose body is not declared ``application/json``; 422 for an illegal move, a record that
does not replay or a replay or review over the limits of :mod:`odin_lab.webapp.replays` and
:mod:`odin_lab.webapp.reviews`. (503: other replays, hints or reviews are being built, try
again, or no room for a new game because every live game holds moves that cannot be saved;
500, a fault of the server, is the same one-line JSON.) A hint changes nothing but the
record's list of hints asked.

Requests from other sites. Only the app's own page may change anything: a request other than
``GET``/``HEAD``, or any request under ``/api/``, is refused (403) when it carries an ``Origin``
other than the app's own (``http://`` and the request's ``Host``; ``null`` included) or a
``Sec-Fetch-Site`` other than ``same-origin`` or ``none``; a state-changing one must also send
``Content-Type: application/json``, which no page of another origin can send without the
browser first asking the server (a CORS preflight, which this app never grants). Browsers send
``Origin`` with every ``POST``; a client that sends neither header (curl, a script) is not a
page of another site and is served.
"""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException

from agents.registry import GOAT_AGENTS, agent_names
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, Config
from odin_lab.webapp.errors import RequestError
from odin_lab.webapp.replays import Catalogue, replay_query
from odin_lab.webapp.reviews import Reviews, parse_review
from odin_lab.webapp.sessions import (
    HUMAN,
    MAX_THRESHOLD,
    PlaySession,
    SessionStore,
    parse_hint,
    parse_move,
    parse_new_game,
)

MAX_BODY = 16_384
"""The largest request body accepted, in bytes (a move is about 30)."""
MAX_DEPTH = 8
"""The deepest nesting of lists and objects accepted in a request body (a new game has 2)."""
DEFAULT_OPPONENTS = ("search",) + ("dmc",) * (MAX_PLAYERS - 2)
"""The new-game form's first choice for seats 1, 2, ...: the lab's strongest player (about 40 ms
a decision) and its strongest network (docs/agents.md); the page offers ``planner`` where one
does not play the game (the networks refuse the Goat)."""
HINTS_AT_ONCE = 2
"""Hints built at the same time (each keeps a core busy for its budget); more get 503."""
STATIC = Path(str(resources.files("odin_lab.webapp") / "static"))
_HEADERS = {
    # The page loads only its own files; nothing is framed or sniffed.
    "Content-Security-Policy": "default-src 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
}


def create_app(
    out_dir: Path,
    records_dir: Path | None = None,
    *,
    max_games: int = 64,
    allowed_hosts: list[str] | None = None,
    code_agents: Sequence[str] = (),
) -> FastAPI:
    """The app: finished games are saved under ``out_dir``; the replay viewer lists the records
    files under ``out_dir`` (label ``saved``) and ``records_dir`` (label ``records``). At most
    ``max_games`` games are kept live; one dropped, or live when the server stops, is saved as
    unfinished once the person has moved in it. ``allowed_hosts``: the ``Host`` header values
    accepted (``None``: any), which shuts out pages of other sites that rebind a name to
    127.0.0.1. ``code_agents``: outside agent specs offered beside the lab's own (they run the
    server operator's code: only what ``--allow-code-agents`` names)."""
    store = SessionStore(Path(out_dir), max_games=max_games)
    offered = [*agent_names(), *code_agents]

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        store.close()  # the server is stopping: keep the games the person has moved in

    app = FastAPI(
        title="odin-lab", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    roots = {"saved": Path(out_dir)}
    if records_dir is not None:
        roots["records"] = Path(records_dir)
    catalogue = Catalogue(roots)
    reviews = Reviews(catalogue)
    hinting = threading.BoundedSemaphore(HINTS_AT_ONCE)
    app.state.store, app.state.catalogue, app.state.reviews = store, catalogue, reviews

    hosts = None if allowed_hosts is None else {h.lower() for h in allowed_hosts}

    @app.middleware("http")
    async def guard(request: Request, call_next):
        refusal = _refusal(request, hosts)
        if refusal is not None:
            response: Response = JSONResponse({"error": refusal.message}, refusal.status)
        else:
            response = await call_next(request)
        for name, value in _HEADERS.items():
            response.headers.setdefault(name, value)
        return response

    @app.exception_handler(RequestError)
    async def refused(request: Request, error: RequestError) -> JSONResponse:
        return JSONResponse({"error": error.message}, status_code=error.status)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        message = {404: f"no such path: {request.url.path[:200]}"}.get(error.status_code)
        return JSONResponse({"error": message or str(error.detail)}, status_code=error.status_code)

    @app.exception_handler(Exception)
    async def failed(request: Request, error: Exception) -> JSONResponse:
        # A last net: a fault of ours is still the app's one-line JSON, never a traceback page.
        name = type(error).__name__
        return JSONResponse({"error": f"the server failed on this request ({name})"}, 500)

    def play_response(session: PlaySession, events: list[dict]) -> dict:
        saved = session.saved
        return {
            "game_id": session.id,
            "seat": HUMAN,
            "events": events,
            "view": session.view(),
            "over": session.game.is_over,
            "record": {"file": catalogue.key_of(saved), "game": 0, "path": str(saved)}
            if saved
            else None,
            "save_error": session.save_error,
            "notes": session.table.notes,
        }

    @app.get("/")
    def index() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/favicon.ico")
    def favicon() -> Response:
        return Response(status_code=204)  # no icon; answered so that browsers log no 404

    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/api/agents")
    def agents() -> dict:
        return {
            "agents": offered,
            "players": list(range(MIN_PLAYERS, MAX_PLAYERS + 1)),
            "threshold": Config().threshold,
            "max_threshold": MAX_THRESHOLD,
            "goat": [name for name in offered if name in GOAT_AGENTS],
            "defaults": list(DEFAULT_OPPONENTS),
            "notes": {
                "ppo": "bundled models trained for 2 players and for 4 (also at 3, 5, 6)",
                "dmc": "one network trained for every table size, with no heuristic inside",
            },
        }

    @app.post("/api/games")
    async def new_game(request: Request) -> dict:
        config, opponents, seed = parse_new_game(await _body(request), offered)
        session = await run_in_threadpool(store.create, config, opponents, seed)
        return play_response(session, session.opening)

    @app.get("/api/games/{game_id}")
    def game_state(game_id: str) -> dict:
        session = store.get(game_id)
        with session.lock:
            return {**play_response(session, []), "log": list(session.log)}

    @app.post("/api/games/{game_id}/move")
    async def move(game_id: str, request: Request) -> dict:
        body = await _body(request)
        session = store.get(game_id)
        action, turn = parse_move(body, session.config.goat)

        def play() -> dict:
            with session.lock:  # one move of a game at a time; the response is that move's
                events = session.move(action, turn)
                store.save_if_over(session)
                return play_response(session, events)

        return await run_in_threadpool(play)

    @app.post("/api/games/{game_id}/hint")
    async def hint(game_id: str, request: Request) -> dict:
        ms, turn = parse_hint(await _body(request, optional=True))
        session = store.get(game_id)

        def think() -> dict:
            if not hinting.acquire(blocking=False):
                raise RequestError(503, "other hints are being built: try again in a moment")
            try:
                with session.lock:  # the game cannot move while the hint reads it
                    return session.hint(ms, turn)
            finally:
                hinting.release()

        return await run_in_threadpool(think)

    @app.post("/api/review")
    async def review(request: Request) -> Response:
        key, game, seat = parse_review(await _body(request))
        answer = await run_in_threadpool(reviews.review, key, game, seat)
        return Response(answer, media_type="application/json")

    @app.get("/api/records")
    def records() -> dict:
        return {"files": catalogue.files()}

    @app.get("/api/replay")
    def replay(file: str = "", game: str = "0", seat: str = "all") -> Response:
        index, viewer = replay_query(game, seat)
        return Response(catalogue.replay(file, index, viewer), media_type="application/json")

    return app


SAFE_METHODS = ("GET", "HEAD")
"""Methods that change nothing; every other one is state-changing."""
JSON_TYPE = "application/json"


def _refusal(request: Request, hosts: set[str] | None) -> RequestError | None:
    """Why the app refuses ``request`` before any route sees it (see the module docstring), or
    ``None``: a ``Host`` not among ``hosts`` (400; ``None``: any), another site's request
    (403), a state-changing request without a JSON body type (415)."""
    host = request.headers.get("host", "")
    if hosts is not None and _host_name(host) not in hosts:
        return RequestError(
            400, f"host {host[:60]!r} is not served here: open the app at its own address"
        )
    changing = request.method not in SAFE_METHODS
    if not changing and not request.url.path.startswith("/api/"):
        return None  # the page itself may be opened from a link anywhere
    origin = request.headers.get("origin")
    if origin is not None and origin.lower() != f"{request.url.scheme}://{host}".lower():
        return RequestError(
            403, f"a request from another origin ({origin[:60]}) is refused: use the app's page"
        )
    site = request.headers.get("sec-fetch-site")
    if site is not None and site not in ("same-origin", "none"):
        return RequestError(
            403, f"a request from another site ({site[:20]}) is refused: use the app's page"
        )
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if changing and kind != JSON_TYPE:
        return RequestError(
            415, f"the request body must be sent as {JSON_TYPE}; got {kind[:60] or 'no type'!r}"
        )
    return None


def _host_name(host: str) -> str:
    """The name in a ``Host`` header, without the port: ``[::1]:8000`` -> ``[::1]``."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[: host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if host.count(":") == 1 else host


async def _body(request: Request, optional: bool = False) -> object:
    """The request's JSON body; ``RequestError`` 413 when too large, 400 when not JSON.
    ``optional``: an empty body is ``{}``."""
    declared = request.headers.get("content-length", "0")
    if not (declared.isascii() and declared.isdigit() and len(declared) <= 12):
        raise RequestError(400, f"Content-Length must be a byte count; got {declared[:20]!r}")
    if int(declared) > MAX_BODY:
        raise RequestError(413, f"the request body is over {MAX_BODY} bytes")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise RequestError(413, f"the request body is over {MAX_BODY} bytes")
    if optional and not raw.strip():
        return {}
    deep = RequestError(400, f"malformed JSON body: nested deeper than {MAX_DEPTH} levels")
    try:
        body = json.loads(raw)
    except RecursionError:
        raise deep from None
    except (ValueError, UnicodeDecodeError) as error:
        raise RequestError(400, f"malformed JSON body: {str(error)[:120]}") from None
    if not _shallow(body, MAX_DEPTH):
        raise deep
    return body


def _shallow(value: object, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests at most ``limit`` lists or objects deep; walked
    without recursion, so any depth is safe to check."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > limit:
                return False
            stack.extend(
                (v, depth + 1) for v in (item.values() if isinstance(item, dict) else item)
            )
    return True


__all__ = ["HINTS_AT_ONCE", "JSON_TYPE", "MAX_BODY", "MAX_DEPTH", "SAFE_METHODS", "create_app"]
