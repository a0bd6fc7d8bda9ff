"""Start the web app: ``python -m odin_lab.webapp [--port 8000] [--host 127.0.0.1]``.

It binds 127.0.0.1 by default. Another address would let other machines play and read the
records folders, so it is refused unless ``--allow-remote`` is given. Finished games are saved
under ``--out`` (default ``results/web``); the replay viewer lists the records files there and
under ``--records`` (default ``results``: tournaments' ``tournament.json`` included). The
opponents offered are the lab's own agents; ``--allow-code-agents [SPEC ...]`` adds outside
agents (their code runs in the server). Bad input exits with code 2 and a one-line error; so
does an ``--out`` that cannot be a folder this user can write in, checked before the server
starts (the folder is created when missing).

A game that cannot be saved is told in one line of the log (standard error). Ctrl-C stops the
server without a traceback at any moment from the command's first line on: while it starts,
at once; while it serves, after the requests in progress are answered and the games saved (as
any stop). Either way the exit status is 130, and nothing is printed. (Python's own start
and the loading of this module, about a tenth of a second, come before that first line.)
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import tempfile
from pathlib import Path

from odin_lab import cli

PROG = cli.program("python -m odin_lab.webapp")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def parser() -> argparse.ArgumentParser:
    # Imported here, after main's signal handler: it loads numpy (odin_env), whose start takes
    # long enough for a Ctrl-C to land in it.
    from odin_lab.evaluation.limits import MAX_LIVE_GAMES

    p = cli.Parser(prog=PROG, description=cli.plain(__doc__.split("\n\n")[0]))
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port, 1-65535, or 0 for any free one (default: 8000)",
    )
    p.add_argument(
        "--allow-remote",
        action="store_true",
        help="allow a --host other than 127.0.0.1, localhost, ::1 (other machines can connect)",
    )
    p.add_argument(
        "--out",
        type=Path,
        default=Path("results/web"),
        help="folder the finished games are saved in (default: results/web)",
    )
    p.add_argument(
        "--records",
        type=Path,
        default=None,
        help="folder searched for records files to replay (default: results)",
    )
    p.add_argument(
        "--max-games",
        type=int,
        default=64,
        help=f"live games kept, 1-{MAX_LIVE_GAMES} (default: 64)",
    )
    p.add_argument(
        "--allow-code-agents",
        nargs="*",
        metavar="SPEC",
        help="also offer outside agents, which runs their code in this server: the names "
        "installed packages add (entry points odin_lab.agents) and each SPEC given "
        "(module:Name or path/to/file.py:Name; docs/own-agent.md)",
    )
    return p


def check(args: argparse.Namespace) -> str | None:
    """The one-line problem with the arguments, or ``None``."""
    from odin_lab.evaluation.limits import MAX_LIVE_GAMES

    if args.host not in LOCAL_HOSTS and not args.allow_remote:
        return (
            f"--host {args.host} would serve other machines; allowed are "
            f"{', '.join(LOCAL_HOSTS)}, or add --allow-remote to serve {args.host} anyway"
        )
    if not 0 <= args.port <= 65535:
        return f"--port must be 0-65535 (0: any free port); got {args.port}"
    if not 1 <= args.max_games <= MAX_LIVE_GAMES:
        return f"--max-games must be 1-{MAX_LIVE_GAMES}; got {args.max_games}"
    if args.out.exists() and not args.out.is_dir():
        return f"--out {args.out} is a file; give a folder (it is created when missing)"
    if args.records is not None and not args.records.is_dir():
        return f"--records {args.records} is not a folder"
    return _check_code_agents(args.allow_code_agents or []) or _check_out(args.out)


def _check_out(out: Path) -> str | None:
    """The one-line problem with ``--out`` (created when missing), or ``None`` once a file
    could be made in it: the games are saved there, so a folder that cannot hold them is
    refused before any is played."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(dir=out, prefix=".odin-web-", suffix=".tmp")
        os.close(fd)
        os.unlink(probe)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        return (
            f"--out {out}: the games cannot be saved there ({reason}); give a folder "
            "this user can write in"
        )
    return None


def _check_code_agents(specs: list[str]) -> str | None:
    """The one-line problem with the outside agents of ``--allow-code-agents``, or ``None``."""
    from agents.registry import check_spec

    for spec in specs:
        try:
            check_spec(spec)
        except ValueError as error:
            return f"--allow-code-agents: {error}"
    return None


def code_agents(specs: list[str] | None) -> list[str]:
    """The outside agents the app offers: none without ``--allow-code-agents``, else the
    installed packages' names and the specs given."""
    if specs is None:
        return []
    from agents.registry import outside_names

    return list(dict.fromkeys([*outside_names(), *specs]))


def allowed_hosts(host: str, allow_remote: bool) -> list[str] | None:
    """The ``Host`` header values the app accepts: the local names (and ``host``), or any when
    remote clients are allowed."""
    return None if allow_remote else sorted({*LOCAL_HOSTS, "[::1]", host})


def _quit(signum: int, frame: object) -> None:
    """Ctrl-C while the server is not serving (starting, or stopped and saved): nothing is
    left to keep, so the process ends at once, quietly."""
    os._exit(130)


def main(argv: list[str] | None = None) -> int:
    """Run the command; return the exit code (0, 2 for bad input, 130 after Ctrl-C)."""
    # First of all: the imports below take seconds, and a Ctrl-C among them must stay quiet.
    previous = signal.signal(signal.SIGINT, _quit)
    try:
        args = parser().parse_args(argv)
        ready = check(args) or _listen(args)  # a problem, or the socket to serve on
    except BaseException:  # argparse's own exits (--help too): nothing served
        signal.signal(signal.SIGINT, previous)
        raise
    if isinstance(ready, str):
        signal.signal(signal.SIGINT, previous)  # nothing served: the caller's handler again
        return cli.fail(PROG, ready)
    return _serve(args, ready)


def _listen(args: argparse.Namespace) -> socket.socket | str:
    """A socket listening on ``--host``/``--port``, or why it cannot be had (one line)."""
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        sock.listen(128)  # connections wait in the queue until the server takes them
    except OSError as error:
        sock.close()
        return f"cannot listen on {args.host}:{args.port}: {error.strerror}"
    return sock


def _serve(args: argparse.Namespace, sock: socket.socket) -> int:
    """Serve the app on ``sock`` until stopped; 130 when stopped by Ctrl-C, else 0."""
    # Imported after the checks: a refused command line answers at once.
    import uvicorn

    from odin_lab.webapp.app import create_app

    records = args.records if args.records is not None else Path("results")
    app = create_app(
        args.out,
        records,
        max_games=args.max_games,
        allowed_hosts=allowed_hosts(args.host, args.allow_remote),
        code_agents=code_agents(args.allow_code_agents),
    )
    _log_to_stderr()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    logging.getLogger("uvicorn.error").addFilter(_not_cancelled)
    stopped: list[int] = []

    def stop(signum: int, frame: object) -> None:
        # Uvicorn takes Ctrl-C while it serves, stops cleanly, then raises the signal again,
        # which lands here; one before it takes over stops it before it serves.
        stopped.append(signum)
        server.should_exit = True

    signal.signal(signal.SIGINT, stop)
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if sock.family == socket.AF_INET6 else args.host
    print(f"odin-lab web app on http://{shown}:{port}/  (Ctrl-C stops it)", flush=True)
    try:
        server.run(sockets=[sock])
    finally:
        # Uvicorn saves the games as it stops (the app's lifespan) unless a second Ctrl-C
        # hurries it: then they are saved here (a store closed already holds none).
        app.state.store.close()
        signal.signal(signal.SIGINT, _quit)  # stopped and saved: another Ctrl-C ends it at once
    return 130 if stopped else 0


def _not_cancelled(record: logging.LogRecord) -> bool:
    """Whether uvicorn's log line is not about a task cancelled by a hurried stop (a second
    Ctrl-C cancels the requests and the app's lifespan, and uvicorn logs each one's traceback,
    as an exception or, the lifespan's, as the message's text)."""
    import asyncio  # loaded by uvicorn already

    if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
        return False
    text = str(record.msg)
    return not (text.startswith("Traceback") and text.rstrip().endswith("CancelledError"))


def _log_to_stderr() -> None:
    """The app's log lines (a game that could not be saved) on standard error, one line each,
    named by the command."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter(f"{PROG}: %(message)s"))
    log = logging.getLogger("odin_lab.webapp")
    log.addHandler(handler)
    log.setLevel(logging.WARNING)
    log.propagate = False


if __name__ == "__main__":
    sys.exit(main())
