"""Start the web app: ``python -m odin_lab.webapp [--port 8000] [--host 127.0.0.1]``.

It binds 127.0.0.1 by default. Another address would let other machines play and read the
records folders, so it is refused unless ``--allow-remote`` is given. Finished games are saved
under ``--out`` (default ``results/web``); the replay viewer lists the records files there and
under ``--records`` (default ``results``: tournaments' ``tournament.json`` included). The
opponents offered are the lab's own agents; ``--allow-code-agents [SPEC ...]`` adds outside
agents (their code runs in the server). Bad input exits with code 2 and a one-line error.
"""

from __future__ import annotations

import argparse
import socket
import sys
from pathlib import Path

from odin_lab import cli
from odin_lab.evaluation.limits import MAX_LIVE_GAMES

PROG = cli.program("python -m odin_lab.webapp")
LOCAL_HOSTS = ("127.0.0.1", "localhost", "::1")


def parser() -> argparse.ArgumentParser:
    p = cli.Parser(prog=PROG, description=cli.plain(__doc__.split("\n\n")[0]))
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument(
        "--port",
        type=int,
        default=8000,
        help="port, 1-65535, or 0 for any free one (default: 8000)",
    )
    p.add_argument(
        "--allow-remote", action="store_true",
        help="allow a --host other than 127.0.0.1, localhost, ::1 (other machines can connect)",
    )  # fmt: skip
    p.add_argument(
        "--out", type=Path, default=Path("results/web"),
        help="folder the finished games are saved in (default: results/web)",
    )  # fmt: skip
    p.add_argument(
        "--records", type=Path, default=None,
        help="folder searched for records files to replay (default: results)",
    )  # fmt: skip
    p.add_argument(
        "--max-games", type=int, default=64,
        help=f"live games kept, 1-{MAX_LIVE_GAMES} (default: 64)",
    )  # fmt: skip
    p.add_argument(
        "--allow-code-agents", nargs="*", metavar="SPEC",
        help="also offer outside agents, which runs their code in this server: the names "
        "installed packages add (entry points odin_lab.agents) and each SPEC given "
        "(module:Name or path/to/file.py:Name; docs/own-agent.md)",
    )  # fmt: skip
    return p


def check(args: argparse.Namespace) -> str | None:
    """The one-line problem with the arguments, or ``None``."""
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
    return _check_code_agents(args.allow_code_agents or [])


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


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    problem = check(args)
    if problem:
        return cli.fail(PROG, problem)
    family = socket.AF_INET6 if ":" in args.host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
        sock.listen(128)  # connections wait in the queue until the server takes them
    except OSError as error:
        sock.close()
        return cli.fail(PROG, f"cannot listen on {args.host}:{args.port}: {error.strerror}")
    # Imported after the checks: a refused command line answers at once.
    import uvicorn

    from odin_lab.webapp.app import create_app

    records = args.records if args.records is not None else Path("results")
    app = create_app(
        args.out, records, max_games=args.max_games,
        allowed_hosts=allowed_hosts(args.host, args.allow_remote),
        code_agents=code_agents(args.allow_code_agents),
    )  # fmt: skip
    port = sock.getsockname()[1]
    shown = f"[{args.host}]" if family == socket.AF_INET6 else args.host
    print(f"odin-lab web app on http://{shown}:{port}/  (Ctrl-C stops it)", flush=True)
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    server.run(sockets=[sock])
    return 0


if __name__ == "__main__":
    sys.exit(main())
