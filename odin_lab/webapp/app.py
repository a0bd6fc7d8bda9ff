"""The web app's HTTP interface (FastAPI): the page, the play API and the replay API.

=========================================  ====================================================
``GET  /``                                 the page (``static/index.html``; plain HTML/CSS/JS)
``GET  /api/agents``                       the opponents a person may pick, the table sizes
``POST /api/games``                        a new game: ``{"players", "opponents", "threshold",
                                           "seed"}``; plays up to the person's first choice
``GET  /api/games/{id}``                   the game's view now and its whole text log
``POST /api/games/{id}/move``              ``{"action", "turn"}``: the person's move, then the
                                           agents' moves up to the person's next choice
``GET  /api/records``                      the records files under the saved and records folders
``GET  /api/replay?file=K&game=G&seat=S``  game G of file K as frames, seen from seat S or
                                           ``all`` (every hand open)
=========================================  ====================================================

A play response is ``{"game_id", "seat", "events", "view", "over", "record", "save_error"}``:
``events`` are the decisions since the person's last move, in order, each with the person's view
after it (:mod:`odin_lab.webapp.sessions`); ``view`` the view now, with ``legal`` (the person's
legal actions) while they are to act; ``record`` names the saved records file (``{"file", "game"}``)
once the game is over, ``save_error`` why it could not be written. Every view of a game in play
is built for the person's seat only (:func:`odin_lab.webapp.views.seat_view`), so no response
carries another seat's hidden cards.

Every refusal is a 4xx response ``{"error": "one line"}`` and changes nothing: 400 for a body
that is not JSON or has a wrong field or type, 404 for an unknown game id, file or path, 409
for a move out of turn or after the end, 413 for a body over :data:`MAX_BODY` bytes, 422 for an
illegal move or a record that does not replay.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from agents.registry import agent_names
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, Config
from odin_lab.webapp.errors import RequestError
from odin_lab.webapp.replays import Catalogue
from odin_lab.webapp.sessions import (
    HUMAN,
    MAX_THRESHOLD,
    PlaySession,
    SessionStore,
    parse_move,
    parse_new_game,
)

MAX_BODY = 16_384
"""The largest request body accepted, in bytes (a move is about 30)."""
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
    if allowed_hosts is not None:
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    roots = {"saved": Path(out_dir)}
    if records_dir is not None:
        roots["records"] = Path(records_dir)
    catalogue = Catalogue(roots)
    app.state.store, app.state.catalogue = store, catalogue

    @app.middleware("http")
    async def headers(request: Request, call_next):
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

    def play_response(session: PlaySession, events: list[dict]) -> dict:
        saved = session.saved
        return {
            "game_id": session.id,
            "seat": HUMAN,
            "events": events,
            "view": session.view(),
            "over": session.game.is_over,
            "record": {"file": catalogue.key_of(saved), "game": 0} if saved else None,
            "save_error": session.save_error,
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
            "notes": {"ppo": "bundled models trained for 2 players and for 4 (also at 3, 5, 6)"},
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
        action, turn = parse_move(await _body(request))
        session = store.get(game_id)

        def play() -> dict:
            with session.lock:  # one move of a game at a time; the response is that move's
                events = session.move(action, turn)
                store.save_if_over(session)
                return play_response(session, events)

        return await run_in_threadpool(play)

    @app.get("/api/records")
    def records() -> dict:
        return {"files": catalogue.files()}

    @app.get("/api/replay")
    def replay(file: str = "", game: str = "0", seat: str = "all") -> dict:
        if not game.isdigit():
            raise RequestError(400, f"game must be a game number >= 0; got {game[:40]!r}")
        viewer: int | str = int(seat) if seat.isdigit() else seat
        return catalogue.frames(file, int(game), viewer)

    return app


async def _body(request: Request) -> object:
    """The request's JSON body; ``RequestError`` 413 when too large, 400 when not JSON."""
    declared = request.headers.get("content-length", "0")
    if declared.isdigit() and int(declared) > MAX_BODY:
        raise RequestError(413, f"the request body is over {MAX_BODY} bytes")
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise RequestError(413, f"the request body is over {MAX_BODY} bytes")
    try:
        return json.loads(raw)
    except (ValueError, UnicodeDecodeError) as error:
        raise RequestError(400, f"malformed JSON body: {error}") from None


__all__ = ["MAX_BODY", "create_app"]
