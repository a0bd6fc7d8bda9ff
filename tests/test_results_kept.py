"""Issue 24, class 3: a results folder always describes one run, whatever stops the command: two
Ctrl-C 50 ms apart keep the finished work and say truly what was kept, a full disk (a real 2 MiB
tmpfs where it can be mounted, else a simulated ENOSPC) and an unwritable --out are one line
with exit 2 and leave the earlier result whole."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from odin_env.rules import Config
from odin_lab.commands import evaluate, show
from odin_lab.commands import play as play_command
from odin_lab.evaluation import leaderboard, results, resume, studies
from odin_lab.evaluation.records import config_dict, load_records, replay

ROOT = Path(__file__).resolve().parents[1]


def start(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def run(*args: str, stdin: str = "", timeout: float = 300) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def lines_of(stderr: str) -> list[str]:
    """The lines a person reads (the progress bar's redraws dropped)."""
    lines = stderr.replace("\r", "\n").splitlines()
    return [line for line in lines if line.strip() and not re.search(r"\d+%\|", line)]


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (paths relative to it) with its bytes."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def double_ctrl_c(proc: subprocess.Popen, total: int, least: int, first: str = "Ctrl-C") -> str:
    """Read the progress bar until at least ``least`` of ``total`` games are done, then send
    Ctrl-C twice, 50 ms apart, to the whole process group as a terminal does (``first="kill"``:
    SIGTERM to the command first, as ``kill PID`` does); return stderr."""
    shown = ""
    while True:
        char = proc.stderr.read(1)
        if not char:
            pytest.fail(f"the command finished before Ctrl-C: {shown[-300:]!r}")
        shown += char
        counts = [int(n) for n in re.findall(rf"(\d+)/{total}\b", shown)]
        if counts and least <= counts[-1] < total:
            break
    if first == "kill":
        os.kill(proc.pid, signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
    time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=180)
    return shown + err


@pytest.mark.parametrize("first", ["Ctrl-C", "kill"])
def test_two_ctrl_c_keep_the_finished_deals_over_an_earlier_result_and_resume_accepts_them(
    first, tmp_path
):
    out = tmp_path / "t"
    common = ["evaluate.py", "tournament", "--agents", "random", "random", "random", "random",
              "--threshold", "5", "--engine", "single", "--workers", "2"]  # fmt: skip
    # The earlier result made in this process (the Ctrl-C meets the script itself, below).
    earlier = [*common[1:], "--games", "8", "--seed", "1", "--out", str(out), "--no-progress"]
    assert evaluate_keeping_handlers(earlier) == 0
    assert (out / "tournament.png").exists() and (out / "tournament.pdf").exists()
    (out / "notes.txt").write_text("mine")  # not the study's: never touched

    proc = start(*common, "--games", "4000", "--seed", "5", "--out", str(out))
    err = double_ctrl_c(proc, 4000, 40, first)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    said = lines_of(err)
    assert len(said) == 1 and "deals finished are in" in said[0] and "--resume" in said[0], said
    saved = json.loads((out / "tournament.json").read_text())
    assert saved["partial"] is True and saved["seed"] == 5
    games = len(saved["game_records"])
    assert 0 < games < 4000 and games % 4 == 0
    assert f"the {games // 4} deals finished" in said[0]
    # One run: the earlier figures are gone, the provenance is this run's, no staging left.
    assert not (out / "tournament.png").exists() and not (out / "tournament.pdf").exists()
    assert "4000" in json.loads((out / "provenance.json").read_text())["command"]
    assert (out / "notes.txt").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["tournament.json", "games.csv", "agents.csv", "provenance.json", "notes.txt"]
    )
    # What --resume would continue from: every kept game replays to its record.
    key = {
        "agents_specs": ["random"] * 4,
        "config": config_dict(Config(players=4, threshold=5)),
        "seed": 5,
        "deals": 1000,
    }
    assert len(resume.partial_records(out, key)) == games


def worker_pids(pid: int) -> list[int]:
    """The worker processes of command ``pid`` (its spawned children, not the resource tracker)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:  # the parent pid is the 2nd field after the parenthesised name
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):  # a process that ended meanwhile
            continue
        if parent == pid and b"spawn_main" in command:
            found.append(int(stat.parent.name))
    return found


def test_a_worker_killed_mid_tournament_keeps_the_finished_deals_says_so_and_exits_1(tmp_path):
    """kill -9 of one worker (as the out-of-memory killer does): the command does not wait for
    its lost games (multiprocessing.Pool did, for ever), keeps the deals finished, says in one
    line what happened and where they are, exits 1; --resume plays the rest."""
    out = tmp_path / "t"
    common = [
        "evaluate.py",
        "tournament",
        "--agents",
        "random",
        "random",
        "random",
        "random",
        "--threshold",
        "5",
        "--engine",
        "single",
        "--workers",
        "2",
        "--games",
        "480",
        "--seed",
        "5",
        "--out",
        str(out),
    ]
    proc = start(*common)
    shown = ""
    while not (counts := [int(n) for n in re.findall(r"(\d+)/480\b", shown)]) or counts[-1] < 40:
        char = proc.stderr.read(1)
        assert char, f"the command finished first: {shown[-300:]!r}"
        shown += char
    os.kill(worker_pids(proc.pid)[0], signal.SIGKILL)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 1, err
    assert "Traceback" not in err, err
    said = lines_of(err)
    assert len(said) == 1, said
    assert said[0].startswith("evaluate.py tournament: error: a worker ended without answering")
    assert "(exit code -9)" in said[0] and "deals finished are in" in said[0], said
    assert "--resume" in said[0], said
    saved = json.loads((out / "tournament.json").read_text())
    games = len(saved["game_records"])
    assert saved["partial"] is True and 0 < games < 480 and games % 4 == 0
    assert f"the {games // 4} deals finished" in said[0]
    # The rest in one process (the games do not depend on the workers; a resume on two is
    # test_player_failures'): two more worker processes would cost more than they save here.
    done = run(*changed(common, ["--workers", "1"]), "--resume", "--no-progress")
    assert done.returncode == 0, done.stderr
    assert len(json.loads((out / "tournament.json").read_text())["game_records"]) == 480


def kill_9_once_saved(args: list[str], saved: Path, then: float = 0.0) -> None:
    """Run ``python args`` and ``kill -9`` it (no handler runs) ``then`` seconds after the file
    ``saved`` appears; fails if it ends first, or saves nothing in 120 s."""
    proc = start(*args)
    try:
        deadline = time.monotonic() + 120
        while not saved.exists():
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, f"nothing saved in 120 s ({saved})"
            time.sleep(0.005)
        time.sleep(then)
    finally:
        with contextlib.suppress(ProcessLookupError):  # one that ended already: said above
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert proc.returncode == -signal.SIGKILL  # killed, not finished


SAVING_OFTEN = (
    "import runpy, sys\n"
    "from odin_lab.evaluation import resume\n"
    "resume.SAVE_EVERY_S = 0.0\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
"""A command run as itself, but a tournament saves its finished deals after every chunk, not
at most once a minute (so that a kill a moment in finds some saved)."""


def test_kill_9_keeps_the_deals_saved_as_they_finished_and_resume_plays_the_rest(tmp_path):
    """``kill -9`` (no handler runs) a moment after the tournament's first save, maybe in the
    middle of a later one: ``tournament.json`` holds whole deals, marked partial, and
    ``--resume`` plays the rest, to the very files of a run never stopped."""
    common = ["tournament", "--agents", "random", "greedy", "random", "greedy", "--threshold",
              "5", "--engine", "single", "--workers", "1", "--seed", "4", "--games", "320",
              "--no-progress"]  # fmt: skip
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    saved = killed / "tournament.json"
    kill_9_once_saved(
        ["-c", SAVING_OFTEN, "evaluate.py", *common, "--out", str(killed)], saved, then=0.1
    )
    partial = json.loads(saved.read_text())
    games = len(partial["game_records"])
    assert partial["partial"] is True and 0 < games < 320 and games % 4 == 0
    assert evaluate.main([*common, "--out", str(killed), "--resume"]) == 0
    assert evaluate.main([*common, "--out", str(whole)]) == 0
    for name in ("tournament.json", "games.csv", "agents.csv"):
        assert (killed / name).read_bytes() == (whole / name).read_bytes(), name
    assert not [p for p in killed.iterdir() if p.name.startswith(".")]  # no staging left


ROW_STUDIES = {
    "seating": ["seating", "--agent", "greedy", "--players", "2", "3", "4", "5", "--start-rule",
                "rotate", "--games", "20"],
    "thresholds": ["thresholds", "--agents", "greedy", "random", "--thresholds", "5", "7", "9",
                   "11", "13", "--games", "20"],
    "goat": ["goat", "--agent", "greedy", "--players", "2", "3", "4", "--games", "20"],
}  # fmt: skip
"""Studies of several rows, so that a kill right after the first row's save finds the study
still running: the rows after it, then the figure, which is drawn before the whole result is
written (each some tens of milliseconds, the figure a few hundred)."""


@pytest.mark.parametrize("command", sorted(ROW_STUDIES))
def test_kill_9_keeps_a_studys_rows_saved_as_they_finished_and_resume_plays_the_rest(
    command, tmp_path
):
    """``kill -9`` (no handler runs) right after a study saved its first row: its JSON holds the
    rows finished, marked partial, and ``--resume`` plays the others, to the very JSON and CSV
    of a study never stopped."""
    common = [*ROW_STUDIES[command], "--seed", "6", "--workers", "1", "--no-progress"]
    killed, whole = tmp_path / "killed", tmp_path / "whole"
    saved = killed / f"{command}.json"
    kill_9_once_saved(["evaluate.py", *common, "--out", str(killed)], saved)
    partial = json.loads(saved.read_text())
    field = "rows" if command == "thresholds" else "cells"
    assert partial["partial"] is True and len(partial[field]) >= 1
    assert evaluate.main([*common, "--out", str(killed), "--resume"]) == 0
    assert evaluate.main([*common, "--out", str(whole)]) == 0
    for name in (f"{command}.json", f"{command}.csv"):
        assert (killed / name).read_bytes() == (whole / name).read_bytes(), name
    assert (killed / f"{command}.png").exists()
    assert not [p for p in killed.iterdir() if p.name.startswith(".")]  # no staging left


def interrupt_after(monkeypatch, module, calls: int) -> tuple:
    """Make ``module.play_tournament`` raise ``KeyboardInterrupt`` (Ctrl-C) once ``calls`` calls
    have gone through; return the real function and the list that holds one item per call let
    through (a test may reset it)."""
    real, through = module.play_tournament, []

    def play(*args, **kwargs):
        if len(through) == calls:
            raise KeyboardInterrupt
        through.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, "play_tournament", play)
    return real, through


def changed(argv: list[str], change: list[str]) -> list[str]:
    """``argv`` with the values after the flag ``change[0]`` replaced by ``change[1:]`` (no
    change: a copy)."""
    out = list(argv)
    if change:
        at = out.index(change[0])
        out[at + 1 : at + len(change)] = change[1:]
    return out


def resume_refused(argv: list[str], out, named: str, capsys) -> None:
    """``--resume`` of ``argv`` into ``out`` exits 2 with one line naming ``named``, and leaves
    ``out`` as it was."""
    before = snapshot(out)
    capsys.readouterr()
    assert evaluate.main([*argv, "--out", str(out), "--resume"]) == 2
    said = lines_of(capsys.readouterr().err)
    assert len(said) == 1 and named in said[0], said
    assert snapshot(out) == before


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (["--seed", "7"], "was made with seed 6, not 7"),
        (["--games", "9"], "was made with games_per_cell 8, not 9"),
        (["--players", "3", "2"], "was made with config players 2, not 3"),
        (["--start-rule", "winner"], "cells[0] is not the study's row 0"),
    ],
)
def test_resume_refuses_a_partial_study_of_other_settings_in_one_line(
    change, named, tmp_path, monkeypatch, capsys
):
    argv = ["seating", "--agent", "greedy", "--players", "2", "3", "--start-rule", "rotate",
            "--games", "8", "--seed", "6", "--no-progress"]  # fmt: skip
    out = tmp_path / "s"
    real, _ = interrupt_after(monkeypatch, studies, 1)
    assert evaluate.main([*argv, "--out", str(out)]) == 130
    resume_refused(changed(argv, change), out, named, capsys)
    # A complete study has nothing to resume; a folder without one, nothing to read.
    monkeypatch.setattr(studies, "play_tournament", real)
    assert evaluate.main([*argv, "--out", str(out), "--resume"]) == 0
    assert evaluate.main([*argv, "--out", str(out), "--resume"]) == 2
    assert "is complete; nothing to resume" in capsys.readouterr().err
    assert evaluate.main([*argv, "--out", str(tmp_path / "none"), "--resume"]) == 2
    assert "--resume: cannot read" in capsys.readouterr().err


LEADERBOARD = ["leaderboard", "--agents", "random", "greedy", "shaper", "planner", "linear",
               "--players", "2", "--games", "40", "--threshold", "5", "--workers", "1",
               "--no-progress"]  # fmt: skip
"""A leaderboard of ten tables, so that a kill right after a save finds it running: the tables
after it, then the figure, drawn before the whole result is written."""


def test_kill_9_keeps_the_leaderboard_tables_saved_as_they_finished_and_resume_plays_the_rest(
    tmp_path, monkeypatch
):
    """``kill -9`` right after a leaderboard saved its finished tables (after each one here):
    ``leaderboard.json`` holds whole tables, marked partial, and is a records file whose every
    game replays; ``--resume`` plays the other tables, to the very files of a run never
    stopped."""
    out, whole = tmp_path / "lb", tmp_path / "whole"
    saved = out / "leaderboard.json"
    kill_9_once_saved(["-c", SAVING_OFTEN, "evaluate.py", *LEADERBOARD, "--out", str(out)], saved)
    partial = json.loads(saved.read_text())
    assert partial["partial"] is True and 0 < len(partial["tables"]) < 10
    kept = load_records(saved)
    assert len(kept.games) == 40 * len(partial["tables"])
    for game in kept.games[:20]:
        replay(game, kept.config)
    assert not [p for p in out.iterdir() if p.name.startswith(".")]  # no staging left
    real, played = leaderboard.play_tournament, []

    def play(specs, *args, **kwargs):
        played.append(tuple(specs))
        return real(specs, *args, **kwargs)

    monkeypatch.setattr(leaderboard, "play_tournament", play)
    assert evaluate.main([*LEADERBOARD, "--out", str(out), "--resume"]) == 0
    kept_tables = {tuple(t["specs"]) for t in partial["tables"]}
    assert len(played) == 10 - len(kept_tables) and not kept_tables & set(played)
    assert evaluate.main([*LEADERBOARD, "--out", str(whole)]) == 0
    for name in ("leaderboard.json", "leaderboard.csv"):
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name


def _doctored(document: dict) -> dict:
    """The first kept game with its first action changed to another legal-looking one."""
    game = document["game_records"][0]
    game["actions"][0] = (game["actions"][0] + 1) % 3579
    return document


def _swapped(document: dict) -> dict:
    """The first table listed as another table of the plan."""
    document["tables"][0]["table"] = 9 - document["tables"][0]["table"]
    return document


@pytest.mark.parametrize(
    ("change", "edit", "named"),
    [
        (["--seed", "8"], None, "was played with seed 7, not 8"),
        (["--games", "300"], None, "was played with deals_per_table 4, not 150"),
        (
            ["--agents", "random", "greedy", "shaper", "linear", "planner"],
            None,
            "was played with agents_specs",
        ),
        ([], _doctored, "game_records[0]"),
        ([], _swapped, "seats"),
    ],
)
def test_leaderboard_resume_refuses_a_partial_result_of_other_settings_or_edited_in_one_line(
    change, edit, named, tmp_path, monkeypatch, capsys
):
    """A partial leaderboard (Ctrl-C after its third table) resumes only with its own agents,
    settings, seed and size, and only with every kept game the one its table played; anything
    else is one line, exit 2, and the folder untouched. A complete one has nothing to resume."""
    argv = [*LEADERBOARD, "--seed", "7"]
    argv[argv.index("--games") + 1] = "8"
    out = tmp_path / "lb"
    real, _ = interrupt_after(monkeypatch, leaderboard, 3)
    assert evaluate.main([*argv, "--out", str(out)]) == 130
    assert len(json.loads((out / "leaderboard.json").read_text())["tables"]) == 3
    if edit is not None:
        path = out / "leaderboard.json"
        path.write_text(json.dumps(edit(json.loads(path.read_text()))))
    resume_refused(changed(argv, change), out, named, capsys)
    if edit is None:  # the partial result itself resumes, and then it is complete
        monkeypatch.setattr(leaderboard, "play_tournament", real)
        assert evaluate.main([*argv, "--out", str(out), "--resume"]) == 0
        assert evaluate.main([*argv, "--out", str(out), "--resume"]) == 2
        assert "is complete; nothing to resume" in capsys.readouterr().err


def test_two_ctrl_c_keep_the_finished_leaderboard_tables(tmp_path):
    out = tmp_path / "lb"
    proc = start(
        "evaluate.py",
        "leaderboard",
        "--agents",
        "random",
        "greedy",
        "shaper",
        "planner",
        "--players",
        "2",
        "--games",
        "600",
        "--threshold",
        "5",
        "--workers",
        "2",
        "--out",
        str(out),
    )
    err = double_ctrl_c(proc, 6 * 600, 600)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    said = lines_of(err)
    assert len(said) == 1 and "tables finished (of 6) are in" in said[0], said
    saved = json.loads((out / "leaderboard.json").read_text())
    assert saved["partial"] is True and 0 < len(saved["tables"]) < 6
    assert f"the {len(saved['tables'])} tables finished" in said[0]


@pytest.mark.parametrize("command", ["seating", "thresholds"])
def test_ctrl_c_in_seating_or_thresholds_keeps_the_rows_finished_and_resume_plays_the_rest(
    command, tmp_path, monkeypatch, capsys
):
    real, calls = interrupt_after(monkeypatch, studies, 1)
    out = tmp_path / command
    argv = {
        "seating": [
            "seating",
            "--agent",
            "greedy",
            "--players",
            "2",
            "3",
            "--start-rule",
            "rotate",
            "--games",
            "8",
        ],
        "thresholds": [
            "thresholds",
            "--agents",
            "greedy",
            "random",
            "--thresholds",
            "3",
            "5",
            "--games",
            "8",
        ],
    }[command]
    assert evaluate.main([*argv, "--no-progress", "--out", str(out)]) == 130
    said = lines_of(capsys.readouterr().err)
    assert said == [
        f"evaluate.py {command}: interrupted: the rows finished (1 of 2) are in {out}/ "
        "(marked partial); add --resume to play the rest"
    ]
    saved = json.loads((out / f"{command}.json").read_text())
    assert saved["partial"] is True
    assert len(saved["cells" if command == "seating" else "rows"]) == 1
    assert (out / "provenance.json").exists() and not (out / f"{command}.png").exists()
    # --resume plays the second row only, to the result of a study never stopped.
    calls[:] = [1, 1]
    assert evaluate.main([*argv, "--no-progress", "--out", str(out), "--resume"]) == 0
    assert len(calls) == 3  # one more tournament: the missing row's
    whole = tmp_path / "whole"
    monkeypatch.setattr(studies, "play_tournament", real)
    assert evaluate.main([*argv, "--no-progress", "--out", str(whole)]) == 0
    for name in (f"{command}.json", f"{command}.csv"):
        assert (out / name).read_bytes() == (whole / name).read_bytes(), name
    assert (out / f"{command}.png").exists()
    capsys.readouterr()
    # Stopped before a row finished: nothing written, and the message says so.
    monkeypatch.setattr(
        studies, "play_tournament", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt)
    )
    before = snapshot(out)
    assert evaluate.main([*argv, "--no-progress", "--out", str(out)]) == 130
    said = lines_of(capsys.readouterr().err)
    assert len(said) == 1 and "nothing written" in said[0] and "--resume" not in said[0]
    assert snapshot(out) == before


# -- a full disk -------------------------------------------------------------------------------

COMMANDS = {
    "tournament": ["evaluate.py", "tournament", "--agents", "greedy", "random", "--games", "6",
                   "--threshold", "5", "--no-progress", "--seed", "{seed}", "--out", "{out}"],
    "seating": ["evaluate.py", "seating", "--agent", "greedy", "--players", "2", "--games", "6",
                "--threshold", "5", "--no-progress", "--seed", "{seed}", "--out", "{out}"],
    "thresholds": ["evaluate.py", "thresholds", "--agents", "greedy", "random", "--thresholds",
                   "3", "5", "--games", "6", "--no-progress", "--seed", "{seed}", "--out", "{out}"],
    "leaderboard": ["evaluate.py", "leaderboard", "--agents", "greedy", "random", "shaper",
                    "--players", "2", "--games", "4", "--threshold", "5", "--no-progress",
                    "--seed", "{seed}", "--out", "{out}"],
    "showcase": ["evaluate.py", "showcase", "--games", "4", "--no-progress", "--seed", "{seed}",
                 "--out", "{out}"],
    "watch": ["evaluate.py", "watch", "--agents", "greedy", "random", "--threshold", "5",
              "--no-colour", "--seed", "{seed}", "--out", "{out}/game.json"],
    "play": ["play.py", "--opponents", "random", "--threshold", "5", "--seed", "{seed}",
             "--no-colour", "--out", "{out}/mine.json"],
}  # fmt: skip
"""A small run of every command that writes results; ``{seed}`` is where a run differs from
the earlier one (every command takes ``--seed``)."""

SEEDS = {"showcase": (18, 27)}
"""The earlier run's seed and the next one's where they are not 1 and 2: the showcase's search
takes most of its time, and these deals are among the shortest of seeds 0-40 for it (77 and 87
search decisions, against 151 and 100 for seeds 1 and 2)."""

SIMULATED_FULL_DISK = (
    "import errno, os, runpy, sys\n"
    "def full(fd): raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))\n"
    "os.fsync = full\n"
    "sys.argv = sys.argv[1:]\n"
    "runpy.run_path(sys.argv[0], run_name='__main__')\n"
)
"""A command run as itself, but every file it writes fails as on a full disk (fsync: each
write_atomic calls it before the rename)."""


@pytest.fixture
def small_disk(tmp_path):
    """A folder on a 2 MiB tmpfs (``("tmpfs", folder)``), or, where mounting is not allowed,
    a plain folder whose writes the command's process makes fail (``("simulated", folder)``)."""
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = (
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(disk)], capture_output=True
        ).returncode
        == 0
    )
    yield ("tmpfs" if mounted else "simulated"), disk
    if mounted:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def fill(disk: Path) -> None:
    """Fill the file system of ``disk`` to the last byte."""
    fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        for size in (1 << 16, 1 << 12, 1):
            while True:
                try:
                    os.write(fd, b"\0" * size)
                except OSError as e:
                    assert e.errno == errno.ENOSPC
                    break
    finally:
        os.close(fd)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_full_disk_is_one_line_and_leaves_the_earlier_result_whole(command, small_disk):
    kind, disk = small_disk
    out = disk / "out"
    seeds = SEEDS.get(command, (1, 2))
    first = [a.format(out=out, seed=seeds[0]) for a in COMMANDS[command]]
    if command in ("watch", "play"):  # they read the keyboard: a process of their own
        earlier = run(*first, stdin="quit\n")
        assert earlier.returncode == 0, earlier.stderr
    else:  # the earlier result made in this process; the full disk meets the script itself
        assert evaluate.main(first[1:]) == 0
    before = snapshot(out)
    assert before
    again = [a.format(out=out, seed=seeds[1]) for a in COMMANDS[command]]
    if kind == "tmpfs":
        fill(disk)
        done = run(*again, stdin="quit\n")
    else:
        done = run("-c", SIMULATED_FULL_DISK, *again, stdin="quit\n")
    said = lines_of(done.stderr)
    assert done.returncode == 2, (kind, done.stderr)
    assert "Traceback" not in done.stderr and len(said) == 1, (kind, done.stderr)
    assert "no space left" in said[0], said
    assert snapshot(out) == before  # the earlier result, whole; no staging folder left
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_a_full_disk_while_saving_the_deals_kept_after_ctrl_c_exits_130(
    tmp_path, monkeypatch, capsys
):
    def interrupted(*args, **kwargs):
        from odin_lab.evaluation.tournament import TournamentInterrupted, play_tournament

        records = play_tournament(*args, **{**kwargs, "start": 0})[: 2 * 2]
        raise TournamentInterrupted(records, 2)

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(studies, "play_tournament", interrupted)
    monkeypatch.setattr(os, "fsync", full)
    out = tmp_path / "t"
    argv = [
        "tournament",
        "--agents",
        "greedy",
        "random",
        "--games",
        "20",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert evaluate.main(argv) == 130
    said = lines_of(capsys.readouterr().err)
    assert len(said) == 1 and "no space left" in said[0], said
    assert not out.exists()  # created by the command, removed again: nothing half-written


# -- unwritable paths --------------------------------------------------------------------------


def _never_played(*args, **kwargs):
    raise AssertionError("a game was played before the --out was checked")


@pytest.mark.parametrize(
    "argv",
    [
        ["tournament", "--agents", "greedy", "random", "--out", "{bad}"],
        ["seating", "--agent", "greedy", "--out", "{bad}"],
        ["thresholds", "--agents", "greedy", "random", "--out", "{bad}"],
        ["leaderboard", "--agents", "greedy", "random", "--out", "{bad}"],
        ["showcase", "--out", "{bad}"],
        ["watch", "--agents", "greedy", "random", "--out", "{file}"],
    ],
)
@pytest.mark.parametrize("where", ["under a file", "in an unwritable folder"])
def test_an_unwritable_out_is_refused_before_any_game(argv, where, tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("keep")
    base = blocker if where == "under a file" else Path("/proc/odin-lab-test")
    monkeypatch.setattr(studies, "play_tournament", _never_played)
    monkeypatch.setattr(leaderboard, "play_tournament", _never_played)
    monkeypatch.setattr(show, "_watch", _never_played)
    args = [a.format(bad=base / "out", file=base / "game.json") for a in argv]
    assert evaluate.main(args) == 2
    said = lines_of(capsys.readouterr().err)
    assert len(said) == 1 and "--out" in said[0], said
    assert ("not a folder" if where == "under a file" else "cannot write") in said[0], said
    assert blocker.read_text() == "keep"


@pytest.mark.parametrize("out", ["/etc/passwd/x.json", "/proc/odin-lab-test/x.json", "{tmp}"])
def test_play_refuses_an_out_it_cannot_write_before_the_game(out, tmp_path, monkeypatch, capsys):
    from odin_lab.evaluation import play as play_module

    monkeypatch.setattr(play_module.Session, "run", _never_played)
    path = out.format(tmp=tmp_path)
    assert play_command.main(["--opponents", "random", "--seed", "3", "--out", path]) == 2
    captured = capsys.readouterr()
    said = lines_of(captured.err)
    assert len(said) == 1 and f"--out {path}" in said[0], said
    assert "Odin," not in captured.out  # the game never began


def test_check_writable_creates_nothing(tmp_path):
    results.check_writable(tmp_path / "new" / "deeper")
    results.check_writable(tmp_path / "new" / "file.json", folder=False)
    assert list(tmp_path.iterdir()) == []


def evaluate_keeping_handlers(argv: list[str]) -> int:
    """``evaluate.main(argv)`` in this process, its exit code; the SIGINT and SIGTERM handlers
    restored after it: after a signal the command ignores both, and this test process must not
    keep that (a pool started later would inherit an ignored SIGTERM)."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        return evaluate.main(argv)
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)


def test_ctrl_c_during_the_last_write_waits_for_it_and_says_the_result_is_whole(
    tmp_path, monkeypatch, capsys
):
    real = studies.write_csv

    def write_csv(path, rows):
        os.kill(os.getpid(), signal.SIGINT)  # Ctrl-C while the finished result is written
        real(path, rows)

    monkeypatch.setattr(studies, "write_csv", write_csv)
    out = tmp_path / "t"
    argv = [
        "tournament",
        "--agents",
        "greedy",
        "random",
        "--games",
        "4",
        "--threshold",
        "3",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert evaluate_keeping_handlers(argv) == 130
    said = lines_of(capsys.readouterr().err)
    assert said == [
        f"evaluate.py tournament: interrupted: after the whole result was written to {out}/"
    ]
    saved = json.loads((out / "tournament.json").read_text())
    assert "partial" not in saved and saved["games"] == 4
    assert (out / "tournament.png").exists() and (out / "provenance.json").exists()


def test_ctrl_c_during_a_save_of_the_finished_deals_waits_for_it_and_stops_the_run(
    tmp_path, monkeypatch, capsys
):
    """Ctrl-C while a running tournament saves its finished deals (not the last write): the
    save ends whole, and then the run stops (exit 130) with those deals kept, not later."""
    monkeypatch.setattr(resume, "SAVE_EVERY_S", 0.0)  # a save after every chunk
    real, saves = studies.write_csv, []

    def write_csv(path, rows):
        saves.append(path)
        if len(saves) == 2:  # the first save's agents.csv: its games.csv is written
            os.kill(os.getpid(), signal.SIGINT)
        real(path, rows)

    monkeypatch.setattr(studies, "write_csv", write_csv)
    out = tmp_path / "t"
    argv = [
        "tournament",
        "--agents",
        "greedy",
        "random",
        "--games",
        "400",
        "--threshold",
        "3",
        "--engine",
        "single",
        "--workers",
        "1",
        "--no-progress",
        "--out",
        str(out),
    ]
    assert evaluate_keeping_handlers(argv) == 130
    said = lines_of(capsys.readouterr().err)
    assert len(said) == 1 and "the 8 deals finished are in" in said[0], said
    saved = json.loads((out / "tournament.json").read_text())
    assert saved["partial"] is True and len(saved["game_records"]) == 16  # the first chunk's


def test_worker_processes_ignore_ctrl_c_from_their_first_instruction():
    import multiprocessing as mp

    from odin_lab.evaluation.processes import started_ignoring_ctrl_c

    before = signal.getsignal(signal.SIGINT)
    with started_ignoring_ctrl_c():
        pool = mp.get_context("spawn").Pool(1)
    assert signal.getsignal(signal.SIGINT) is before  # this process is itself again
    with pool:  # a worker still importing when Ctrl-C came printed a traceback
        assert pool.apply(signal.getsignal, (signal.SIGINT,)) == signal.SIG_IGN
