"""The command-line tools' entry points (odin_lab.launch): a signal at any moment ends a command
with no traceback, and a console script whose extra is missing says which extra to install."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "train": [
        "train.py",
        "--name",
        "s",
        "--total-steps",
        "10000000",
        "--net",
        "8",
        "--eval-every",
        "0",
        "--no-progress",
    ],
    "evaluate": [
        "evaluate.py",
        "leaderboard",
        "--agents",
        "random",
        "greedy",
        "--players",
        "2",
        "--games",
        "400",
        "--out",
        "lb",
    ],
    "play": ["play.py", "--opponents", "random", "--seed", "1", "--no-colour"],
}
DELAYS = [0.05, 0.3, 0.8, 1.5]


@pytest.mark.parametrize("delay", DELAYS)
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_signal_at_any_moment_prints_no_traceback(tmp_path, command, delay):
    argv = COMMANDS[command]
    proc = subprocess.Popen(
        [sys.executable, ROOT / argv[0], *argv[1:]],
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    if "init_import_site" in err:
        # The interpreter's own start (its site module), before any line of the lab runs: out
        # of the lab's reach, so the signal came too early to test the lab on this machine.
        pytest.skip("the signal came during the interpreter's own start (site import)")
    first = re.search(r'File ".*(train|evaluate|play)\.py", line (\d+), in <module>', err)
    if first and int(first.group(2)) < 10 and "odin_lab" not in err:
        # The script's first lines, importing the standard library's signal module to install
        # its handler: the same window as the interpreter's start, before a line of the lab.
        pytest.skip("the signal came before the script's first handler")
    assert "Traceback" not in err, err[-3000:]
    assert proc.returncode in (0, 2, 130, -signal.SIGINT), err[-3000:]


@pytest.mark.parametrize(
    ("entry", "module", "extra"),
    [("train", "torch", "train"), ("evaluate", "openskill", "eval"), ("train", "tqdm", "eval")],
)
def test_a_console_script_without_its_extra_names_the_extra(tmp_path, entry, module, extra):
    scripts = (ROOT / "pyproject.toml").read_text()
    # A leaderboard loads its rating library only when it rates: the check is the message then.
    argv = [f"odin-{entry}", *COMMANDS[entry][1:]]
    target, _, function = re.search(rf'^odin-{entry} = "(.+)"$', scripts, re.M)[1].partition(":")
    code = (
        f"import sys; sys.modules[{module!r}] = None; sys.argv[:] = {argv!r}; "
        f"from {target} import {function}; sys.exit({function}())"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert proc.stderr.count("\n") == 1, proc.stderr[-3000:]
    assert f"odin-{entry}: error: " in proc.stderr
    assert f"pip install 'odin-lab[{extra}]'" in proc.stderr


SLOW_TEARDOWN = """
import time


class Slow:
    def __del__(self):  # runs in the interpreter's teardown, after every exit handler
        print("tearing down", flush=True)
        time.sleep(2)


KEEP = Slow()


def main():
    return 130  # a command stopped by Ctrl-C, its work saved
"""


def test_a_late_ctrl_c_in_the_interpreters_teardown_keeps_the_commands_exit_code(tmp_path):
    (tmp_path / "slow_teardown.py").write_text(SLOW_TEARDOWN)
    code = "import sys; from odin_lab.launch import run; sys.exit(run('slow_teardown', 'slow'))"
    proc = subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{ROOT}"},
    )
    assert proc.stdout.readline() == "tearing down\n"
    proc.send_signal(signal.SIGINT)  # Python's teardown had put the default (killing) one back
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130 and err == "", err
