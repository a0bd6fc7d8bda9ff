"""``play.py`` driven the way a person uses it: through a pseudo-terminal (pexpect), a scripted
person plays a whole game against ``random``, has an unreadable and two illegal moves refused,
and the record it saves replays (``evaluate.py replay``) to the totals the game ended with;
Ctrl-C and end of input stop cleanly and save the unfinished game; bad flags exit 2."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from odin_lab.evaluation.records import load_records, replay, replay_steps

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "your move> "


def spawn(*args: str, cwd: Path) -> pexpect.spawn:
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}  # plain text to match
    return pexpect.spawn(
        sys.executable, [str(ROOT / "play.py"), *args], cwd=str(cwd), env=env,
        encoding="utf-8", timeout=60, dimensions=(50, 120),
    )  # fmt: skip


def test_a_person_plays_a_whole_game_and_the_record_replays(tmp_path):
    out = tmp_path / "game.json"
    # Seat 0 leads the first trick (fixed), so the first decision is a lead.
    child = spawn("--opponents", "random", "--threshold", "3", "--first-player", "fixed",
                  "--seed", "5", "--out", str(out), cwd=tmp_path)  # fmt: skip
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
    told = subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), "replay", str(out)],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert told.returncode == 0, told.stderr
    line = next(x for x in told.stdout.splitlines() if x.startswith("Totals: "))
    assert [int(t) for t in re.findall(r"\) (\d+)", line)] == totals


@pytest.mark.parametrize(("stop", "code"), [("ctrl-c", 130), ("eof", 0)])
def test_ctrl_c_and_end_of_input_save_the_unfinished_game(tmp_path, stop, code):
    out = tmp_path / "part.json"
    child = spawn("--opponents", "random", "random", "--seed", "9", "--out", str(out),
                  cwd=tmp_path)  # fmt: skip
    child.expect_exact(PROMPT)
    child.sendline("1")
    child.expect_exact(PROMPT)
    if stop == "ctrl-c":
        child.sendintr()
    else:
        child.sendeof()
    child.expect(r"the unfinished game \((\d+) moves\) saved to")
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
    result = subprocess.run(
        [sys.executable, str(ROOT / "play.py"), *args],
        capture_output=True, text=True, timeout=60, cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], result.stderr
    assert not any(tmp_path.iterdir())  # nothing written
