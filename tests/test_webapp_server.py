"""The web server as a person runs it (issue 59, items 3 and 7): ``--out`` is checked before it
serves, a save that fails on a full disk is told in the game's response and in one line of the
log, the server never drops a game it could not save (a new game is refused with 503 instead),
and Ctrl-C at any moment from the command's first line on ends it with exit 130, no traceback
and the games in play saved.

The servers run as ``python -m odin_lab.webapp --port 0`` in a subprocess; the full disk is a
2 MiB tmpfs (as root; elsewhere that test is skipped and the in-process one below simulates it).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from odin_lab.evaluation.records import load_records
from odin_lab.evaluation.table import Table
from odin_lab.webapp.app import create_app

ROOT = Path(__file__).resolve().parents[1]
COMMAND = [sys.executable, "-m", "odin_lab.webapp", "--port", "0"]
NEW_GAME = {"players": 2, "opponents": ["random"], "threshold": 1}


class Server:
    """A running server: its process and its address."""

    def __init__(self, proc: subprocess.Popen, url: str):
        self.proc, self.url = proc, url

    def call(self, method: str, path: str, body: object = None) -> tuple[int, dict]:
        """``(status, JSON answer)`` of one request, as the page sends it."""
        data = None if body is None else json.dumps(body).encode()
        headers = {} if body is None else {"Content-Type": "application/json"}
        request = urllib.request.Request(self.url + path, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=120) as answer:
                return answer.status, json.loads(answer.read())
        except urllib.error.HTTPError as refused:
            return refused.code, json.loads(refused.read())

    def new_game(self, seed: int) -> tuple[int, dict]:
        return self.call("POST", "/api/games", {**NEW_GAME, "seed": seed})

    def move(self, data: dict) -> dict:
        """The person's first legal move in the game of ``data`` (a play response)."""
        move = {"action": data["view"]["legal"][0]["action"], "turn": data["view"]["turn"]}
        status, answer = self.call("POST", f"/api/games/{data['game_id']}/move", move)
        assert status == 200, answer
        return answer

    def interrupt(self) -> tuple[int, str]:
        """Ctrl-C: ``(exit status, standard error)``."""
        self.proc.send_signal(signal.SIGINT)
        _, err = self.proc.communicate(timeout=120)
        return self.proc.returncode, err


@contextmanager
def serving(*args: str, command: list[str] = COMMAND) -> Iterator[Server]:
    """A server started with ``args``, killed after if still running."""
    proc = subprocess.Popen(
        [*command, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        line = ready_line(proc)
        assert "http://127.0.0.1:" in line, f"the server did not start: {line!r}"
        yield Server(proc, line.split()[4].rstrip("/"))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def ready_line(proc: subprocess.Popen) -> str:
    with selectors.DefaultSelector() as waiting:
        waiting.register(proc.stdout, selectors.EVENT_READ)
        ready = waiting.select(timeout=180)
    return proc.stdout.readline() if ready else ""


def quiet(err: str) -> bool:
    """What Ctrl-C may print: at most one line, no traceback."""
    return err.count("\n") <= 1 and "Traceback" not in err and "KeyboardInterrupt" not in err


# -- --out -------------------------------------------------------------------------------------


@pytest.mark.parametrize("out", ["/etc/passwd/x", "{file}/web"])
def test_an_out_that_cannot_hold_games_is_one_line_and_exit_2_before_serving(tmp_path, out):
    (tmp_path / "file").write_text("a file, not a folder")
    out = out.format(file=tmp_path / "file")
    done = subprocess.run(
        [*COMMAND, "--out", out], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"--out {out}: the games cannot be saved there (Not a directory)" in done.stderr


# -- a full disk -------------------------------------------------------------------------------


@contextmanager
def small_disk(folder: Path, options: str = "size=2m") -> Iterator[Path]:
    """A 2 MiB tmpfs mounted on ``folder`` (skips the test where it cannot be mounted)."""
    folder.mkdir()
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(folder)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=True)


def fill(disk: Path) -> None:
    """Fill ``disk`` to its last byte."""
    with open(disk / "filler", "ab", buffering=0) as f:
        try:
            while True:
                f.write(b"x" * 4096)
        except OSError as error:
            assert error.errno == errno.ENOSPC


def test_an_out_on_a_read_only_disk_is_one_line_and_exit_2_before_serving(tmp_path):
    with small_disk(tmp_path / "disk", "ro,size=2m") as disk:
        done = subprocess.run(
            [*COMMAND, "--out", str(disk)], cwd=ROOT, capture_output=True, text=True, timeout=120
        )
    assert done.returncode == 2 and done.stdout == "", done.stderr
    assert done.stderr.count("\n") == 1 and "(Read-only file system)" in done.stderr


def test_a_full_disk_loses_no_game_and_says_so_in_the_response_and_the_log(tmp_path):
    """Two live games moved in, the disk full: a third game is refused (503) rather than drop
    one, each says why in its JSON; room made, the oldest is saved and dropped; a game that
    ends on a full disk says so, and one still unsaved when the server stops is in the log."""
    disk = tmp_path / "disk"
    with small_disk(disk), serving("--out", str(disk / "web"), "--max-games", "2") as server:
        first = server.move(server.new_game(seed=1)[1])
        second = server.move(server.new_game(seed=2)[1])
        fill(disk)
        status, answer = server.new_game(seed=3)
        assert status == 503, answer
        error = answer["error"]
        assert error.startswith("no room for a new game: the server keeps 2 games"), error
        assert f"could not be saved in {disk / 'web'} (No space left on device)" in error
        full = f"could not save the game in {disk / 'web'}: No space left on device"
        for data in (first, second):  # both still live, each saying why it is not saved
            status, now = server.call("GET", f"/api/games/{data['game_id']}")
            assert status == 200 and now["view"]["turn"] == data["view"]["turn"]
            assert now["save_error"] == full

        (disk / "filler").unlink()  # room again: the least recently used game goes, saved
        status, third = server.new_game(seed=3)
        assert status == 200, third
        assert server.call("GET", f"/api/games/{first['game_id']}")[0] == 404
        [saved] = (disk / "web").glob("game-*.json")
        record = load_records(saved)
        assert record.unfinished and record.games[0].seed == 1

        fill(disk)  # the second game ends on a full disk: its last response says so
        data = second
        while not data["over"]:
            data = server.move(data)
        assert data["record"] is None and data["save_error"] == full
        server.move(third)  # moved in, never saved: the server stops on a full disk
        code, err = server.interrupt()
    assert code == 130
    lines = err.splitlines()
    prefix = f"python -m odin_lab.webapp: {full} (game "
    assert len(lines) == 5 and all(line.startswith(prefix) for line in lines), err
    moved = "1 move by the person"
    for line in lines[:2]:  # the refused game: both live games tried
        assert line.endswith(f"{moved}); it stays live until it can be saved")
    assert lines[2].endswith("over); tried again before the game is dropped")
    assert lines[3].endswith("over); it is lost, as the server is stopping")
    assert lines[4].endswith(f"{moved}); it is lost, as the server is stopping")


def test_a_store_that_cannot_save_keeps_its_games_live_and_refuses_a_new_one(
    tmp_path, monkeypatch, caplog
):
    """The same without a small disk (any machine): every write fails with ENOSPC."""

    def full(self, path, source, *, seed_chosen=False):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    client = TestClient(create_app(tmp_path / "web", max_games=2))
    ids = []
    for seed in (1, 2):
        data = client.post("/api/games", json={**NEW_GAME, "seed": seed}).json()
        move = {"action": data["view"]["legal"][0]["action"], "turn": data["view"]["turn"]}
        assert client.post(f"/api/games/{data['game_id']}/move", json=move).status_code == 200
        ids.append(data["game_id"])
    with monkeypatch.context() as patched, caplog.at_level(logging.WARNING, "odin_lab.webapp"):
        patched.setattr(Table, "save", full)
        for _ in range(2):
            refused = client.post("/api/games", json={**NEW_GAME, "seed": 3})
            assert refused.status_code == 503
            assert "No space left on device" in refused.json()["error"]
        for game_id in ids:
            assert "No space left" in client.get(f"/api/games/{game_id}").json()["save_error"]
    said = [r.getMessage() for r in caplog.records]  # once a game, not once a refusal
    assert len(said) == 2 and all(m.endswith("it stays live until it can be saved") for m in said)
    assert client.post("/api/games", json={**NEW_GAME, "seed": 3}).status_code == 200
    assert client.get(f"/api/games/{ids[0]}").status_code == 404
    assert len(list((tmp_path / "web").glob("game-*.json"))) == 1


# -- Ctrl-C ------------------------------------------------------------------------------------


def mapped(pid: int, name: str) -> bool:
    try:
        return name in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False


# Shared libraries the command loads in order while it starts: numpy as it checks the command
# line (the agents' names), FastAPI's pydantic, then numba's LLVM for the rules' kernels.
LOADING = ["_multiarray_umath", "_pydantic_core", "libllvmlite"]


@pytest.mark.parametrize("library", LOADING)
def test_ctrl_c_while_the_server_starts_is_quiet_with_exit_130(tmp_path, library):
    command = [*COMMAND, "--out", str(tmp_path / "web")]
    proc = subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 180
    while not mapped(proc.pid, library) and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.002)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and quiet(err), err
    assert "odin-lab web app on" not in out  # stopped before it served


# What the console script odin-web runs.
CONSOLE_SCRIPT = "import sys; from odin_lab.webapp.__main__ import main; sys.exit(main())"


@pytest.mark.parametrize(
    "command",
    [COMMAND, [sys.executable, "-c", CONSOLE_SCRIPT, "--port", "0"]],
    ids=["python -m", "odin-web"],
)
def test_ctrl_c_while_serving_is_quiet_with_exit_130(tmp_path, command):
    with serving("--out", str(tmp_path / "web"), command=command) as server:
        assert server.call("GET", "/api/agents")[0] == 200
        code, err = server.interrupt()
    assert code == 130 and err == "", err


@pytest.mark.parametrize("presses", [1, 2])
def test_ctrl_c_during_a_request_saves_the_game_and_exits_130(tmp_path, presses):
    """Once: the hint being built is answered first. Twice (hurrying the stop, which cuts the
    hint short): the game is saved all the same."""
    out = tmp_path / "web"
    with serving("--out", str(out)) as server:
        data = server.move(server.new_game(seed=5)[1])
        answers = []

        def ask() -> None:
            try:
                answers.append(
                    server.call("POST", f"/api/games/{data['game_id']}/hint", {"ms": 3000})
                )
            except (OSError, ValueError) as error:  # two presses: cut short (uvicorn's 500)
                answers.append(error)

        asking = threading.Thread(target=ask)
        asking.start()
        time.sleep(1.0)  # the hint is being built
        for _ in range(presses - 1):
            server.proc.send_signal(signal.SIGINT)
            time.sleep(0.3)
        code, err = server.interrupt()
        asking.join(timeout=120)
    assert code == 130 and err == "", err
    if presses == 1:
        assert answers[0][0] == 200 and answers[0][1]["candidates"], answers
    [saved] = out.glob("game-*.json")
    assert load_records(saved).unfinished
