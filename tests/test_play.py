"""``play.py`` driven the way a person uses it: through a pseudo-terminal (pexpect), a scripted
person plays a whole game against ``random``, has an unreadable and two illegal moves refused,
and the record it saves replays (``evaluate.py replay``) to the totals the game ended with;
Ctrl-C and end of input stop cleanly and save the unfinished game; bad flags exit 2."""

from __future__ import annotations

import io
import os
import re
import select
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest
from training_inprocess import evaluate_main, play_main

from odin_env.rules import TAKING
from odin_lab.evaluation.play import LineReader
from odin_lab.evaluation.records import load_records, replay, replay_steps

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "your move> "


def spawn(*args: str, cwd: Path) -> pexpect.spawn:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}  # plain text to match
    return pexpect.spawn(
        sys.executable,
        [str(ROOT / "play.py"), *args],
        cwd=str(cwd),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 120),
    )


def test_a_person_plays_a_whole_game_and_the_record_replays(tmp_path):
    out = tmp_path / "game.json"
    # Seat 0 leads the first trick (fixed), so the first decision is a lead.
    child = spawn(
        "--opponents",
        "random",
        "--threshold",
        "3",
        "--first-player",
        "fixed",
        "--seed",
        "5",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    child.expect(r"-- your turn: hand 1, lead --")
    child.expect_exact(PROMPT)
    held = set(re.findall(r"seat 0 \(you\)\s+((?:[RYGB][1-9] ?)+)", child.before)[0].split())
    not_held = next(f"{c}{v}" for c in "RYGB" for v in range(1, 10) if f"{c}{v}" not in held)
    for typed, says in (
        ("R0 xx", "refused: cannot read 'R0'"),
        ("pass", "refused: you lead this trick, and a leader cannot pass"),
        (not_held, f"refused: you do not hold {not_held}"),
    ):
        child.sendline(typed)
        child.expect_exact(says)
        child.expect_exact(PROMPT)
    mine = 0
    child.sendline("1")  # the first card of the menu: the refusals changed nothing
    mine += 1
    while child.expect_exact([PROMPT, "Totals: "]) == 0:
        child.sendline(str(mine % 2 + 1))  # pass or a play, both always listed first
        mine += 1
    child.expect(r"\r\n")
    totals = [int(t) for t in re.findall(r"\) (\d+)", child.before)]
    child.expect_exact(f"game saved to {out}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    loaded = load_records(out)
    assert loaded.specs == ("human", "random") and not loaded.unfinished
    record = loaded.games[0]
    assert list(record.totals) == totals and len(record.winners) >= 1
    assert replay(record, loaded.config).is_over
    # Every move the person sent was taken, and nothing else was played from seat 0's menu.
    steps = replay_steps(record, loaded.config)
    assert sum(1 for s in steps[:-1] if s.seat == 0 and not s.forced) == mine
    # ``evaluate.py replay`` as a command in this process (tests/test_narrate.py runs the script).
    told = evaluate_main("replay", out, cwd=tmp_path)
    assert told.returncode == 0, told.stderr
    line = next(x for x in told.stdout.splitlines() if x.startswith("Totals: "))
    assert [int(t) for t in re.findall(r"\) (\d+)", line)] == totals


@pytest.mark.parametrize(("stop", "code"), [("ctrl-c", 130), ("eof", 0)])
def test_ctrl_c_and_end_of_input_save_the_unfinished_game(tmp_path, stop, code):
    out = tmp_path / "part.json"
    child = spawn("--opponents", "random", "random", "--seed", "9", "--out", str(out), cwd=tmp_path)
    child.expect_exact(PROMPT)
    child.sendline("1")
    child.expect_exact(PROMPT)
    if stop == "ctrl-c":
        child.sendintr()
    else:
        child.sendeof()
    child.expect(r"the unfinished game \((\d+) moves? of yours\) saved to")
    counted = int(child.match.group(1))
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == code
    assert "Traceback" not in child.before
    loaded = load_records(out)
    assert loaded.unfinished and loaded.extra["unfinished"] is True
    record = loaded.games[0]
    assert record.winners == () and record.actions
    game = replay(record, loaded.config)
    assert not game.is_over and game.current == 0  # it stopped at the person's decision
    # The count is the person's moves only (one was sent), not the agents' moves as well.
    steps = replay_steps(record, loaded.config)
    assert counted == 1 == sum(1 for s in steps[:-1] if s.seat == 0 and not s.forced)
    assert len(record.actions) > counted


# The race of a Ctrl-C that lands after the prompt is out and before the read begins: Python's
# flag is set, and the read is not interrupted. Made here by a SIGINT that the main thread blocks,
# sent while it reads: another thread takes it, which interrupts no read of the main thread.
_RACE = """
import os, signal, sys, threading, time
from odin_lab.evaluation.play import LineReader
r, w = os.pipe()  # no line ever comes
read = LineReader(r) if sys.argv[1] == "reader" else (lambda p: (os.dup2(r, 0), input(p)))
signal.pthread_sigmask(signal.SIG_BLOCK, [signal.SIGINT])
def taker():
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGINT])
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGINT)
    print("sent", flush=True)
    time.sleep(30)
threading.Thread(target=taker, daemon=True).start()
start = time.monotonic()
try:
    read("your move> ")
except KeyboardInterrupt:
    print(f"stopped after {time.monotonic() - start:.2f} s")
"""


STILL_READING_S = 3.0
"""How long after the SIGINT the control (``input()``) must still be in its read: as long as the
reader is given to stop (3 s from the start, the signal at 0.5 s), and more. A read that the
signal interrupts ends within milliseconds of it."""


@pytest.mark.parametrize("reader", ["reader", "input"])
def test_a_ctrl_c_just_before_the_read_still_stops_it(reader):
    """``play.py`` reads moves with :class:`LineReader`: a SIGINT whose handler is pending when
    the read begins stops it within a poll (``input()``, the control, waits for a line: still
    reading :data:`STILL_READING_S` after the signal, timed from the child's word that it sent
    it, not from its start, which an interpreter's imports make slow on a busy machine)."""
    if reader == "reader":
        done = subprocess.run(
            [sys.executable, "-c", _RACE, reader],
            capture_output=True,
            text=True,
            timeout=8,
            cwd=ROOT,
        )
        seconds = float(re.search(r"stopped after ([\d.]+) s", done.stdout)[1])
        assert 0.5 <= seconds < 3.0, done.stdout  # a poll after the signal, on a busy machine too
        return
    child = subprocess.Popen(
        [sys.executable, "-c", _RACE, reader],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        assert select.select([child.stdout], [], [], 60)[0], "the signal was never sent"
        sent = child.stdout.readline()  # after input()'s prompt, which has no newline
        assert sent.endswith("sent\n"), sent
        with pytest.raises(subprocess.TimeoutExpired):  # blocked in the read: the race
            out, err = child.communicate(timeout=STILL_READING_S)
            pytest.fail(f"input() stopped: the race was not made\n{out}{err}")
    finally:
        child.kill()
        child.communicate()


def test_the_reader_keeps_pasted_lines_and_ends_at_end_of_input():
    r, w = os.pipe()
    os.write(w, b"R3 Y3\r\npass\nhint 2")  # two lines in one read, a last line without \n
    os.close(w)
    prompts = io.StringIO()
    read = LineReader(r, prompts)
    assert [read("a> "), read("b> "), read("c> ")] == ["R3 Y3", "pass", "hint 2"]
    with pytest.raises(EOFError):
        read("d> ")
    assert prompts.getvalue() == "a> b> c> d> "
    os.close(r)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--opponents", "random", "random", "--players", "4"], "2 opponents for 4 players"),
        (["--opponents", "bogus"], "unknown agent spec 'bogus'"),
        (["--opponents", "random", "--seat", "2"], "--seat must be 0-1"),
        (["--opponents", "random", "--threshold", "0"], "threshold must be"),
        (["--opponents", "random", "--seed", "-1"], "--seed must be"),
    ],
)
def test_bad_flags_are_one_line_and_exit_2(args, says, tmp_path):
    """The first case through a real ``python play.py``; the others through the command's
    ``main`` in this process, from the same folder (a refusal is the command's)."""
    if args == ["--opponents", "random", "random", "--players", "4"]:
        result = subprocess.run(
            [sys.executable, str(ROOT / "play.py"), *args],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    else:
        result = play_main(*args, cwd=tmp_path)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert not any(tmp_path.iterdir())  # nothing written


def _cards(text: str) -> list[str]:
    return re.findall(r"\b[RYGBPO][1-9]\b", text)


def _in_id_order(cards: list[str]) -> bool:
    """Cards by colour (R Y G B P O), then value: the web log's and ``render()``'s order."""
    from odin_env.cards import parse_card

    ids = [parse_card(c) for c in cards]
    return ids == sorted(ids)


def test_hint_and_the_take_prompt_through_a_terminal(tmp_path):
    """``hint`` lists the menu's moves with the search's win chance and expected penalty, best
    first and marked; the take screen keeps the ``table:`` line and names the combo beaten
    (whose cards are the ones offered); cards are written by colour, then value; the steps
    where hints were asked are saved in the record."""
    out = tmp_path / "coached.json"
    child = spawn(
        "--opponents",
        "random",
        "random",
        "--threshold",
        "5",
        "--seed",
        "3",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    hinted, hinted_takes = 0, 0
    while hinted_takes == 0:
        assert child.expect([r"-- your turn: hand \d+, (\w+) --", "Totals: "]) == 0, "no take"
        phase = child.match.group(1)
        child.expect_exact(PROMPT)
        screen = child.before
        found = re.findall(r"(\d+)\) (pass|take [A-Z]\d|(?:[A-Z]\d ?)+)", screen)
        menu = {number: entry.strip() for number, entry in found}
        assert all(_in_id_order(_cards(entry)) for entry in menu.values()), menu
        table = re.search(r"table: ((?:[A-Z]\d )+)\((\d+)\) by (seat \d \(\w+\))", screen)
        if phase == "take":
            # The table line stays (the combo just played, by the person); the beaten one is
            # named apart, and it is the one whose cards may be taken.
            assert table is not None and table.group(3) == "seat 0 (you)", screen
            beaten = re.search(
                r"you beat ((?:[A-Z]\d ?)+).*; take one of: ((?:[A-Z]\d ?)+)", screen
            )
            assert beaten is not None, screen
            offered = _cards(beaten.group(2))
            assert _cards(beaten.group(1)) == offered and _in_id_order(offered)
            assert set(_cards(table.group(1))).isdisjoint(offered)
            assert sorted(menu.values()) == sorted(f"take {c}" for c in offered)
        if phase == "follow" and hinted and not hinted_takes:
            child.sendline("2")  # the first play of the menu: it beats the table, then a take
            continue
        child.sendline("hint 200")
        child.expect(r"hint: the search's view of your moves \((\d+) layouts?")
        child.expect_exact(PROMPT)
        pattern = r"^\s+(\d+)\) (.+?)\s+win\s+(\d+)%\s+points\s+([\d.]+)(.*)$"
        lines = re.findall(pattern, child.before, re.M)
        assert len({x[0] for x in lines}) == len(lines) == min(len(menu), 12)
        for number, label, win, _, _ in lines:
            assert menu[number] == label.strip() and 0 <= int(win) <= 100
        assert lines[0][4].strip() == "<- best" and all("best" not in x[4] for x in lines[1:])
        wins = [int(x[2]) for x in lines]
        assert wins == sorted(wins, reverse=True)
        hinted += 1
        hinted_takes += phase == "take"
        child.sendline(lines[0][0])  # the move the hint calls best, by its menu number
    child.expect_exact(PROMPT)
    child.sendline("quit")
    child.expect_exact(f"saved to {out}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    loaded = load_records(out)
    hints = loaded.extra["hints"]
    assert len(hints) == hinted >= 2
    steps = [s for s in replay_steps(loaded.games[0], loaded.config)[:-1] if not s.forced]
    assert all(steps[h].seat == 0 for h in hints)  # each a decision of the person
    assert steps[hints[-1]].game.phase == TAKING
