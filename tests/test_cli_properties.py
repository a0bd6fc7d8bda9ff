"""Issue 24: every CLI answers a bad value of any flag with one line on stderr and exit 2, never
a traceback, before any game or training starts, and creates no output folder.

Hypothesis draws a command, one of its flags and a bad value for it (negative, huge, NaN or
infinite, empty, of the wrong type, an unknown choice or agent spec, a path that cannot be
written), and runs the command in this process through its ``main(argv)`` (argparse's refusals
arrive as ``SystemExit``); the rest of the command line is a small valid run, so a bad value
that got through would play or train and write its folder, and fail the test."""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
import signal
import string
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from odin_lab.cli import shell_command
from odin_lab.commands import evaluate, play, train

# -- bad values --------------------------------------------------------------------------------

WORDS = st.text(string.ascii_letters + "-_", min_size=1, max_size=10)
NEGATIVE = st.integers(max_value=-1).map(str)
HUGE = st.integers(min_value=10**19, max_value=10**60).map(str)
NOT_FINITE = st.sampled_from(["nan", "NaN", "inf", "-inf", "1e400", "-1e999"])
EMPTY = st.sampled_from(["", " "])
NOT_A_NUMBER = WORDS.map(lambda w: f"x{w}") | st.sampled_from(["0x10", "[1]", "None", "1,5"])
NOT_AN_INT = NOT_FINITE | EMPTY | NOT_A_NUMBER | st.sampled_from(["1.5", "2e0", "-0.5"])


def counts(low: int = 1, high: int | None = None, huge: bool = True) -> st.SearchStrategy[str]:
    """Bad values of an integer flag whose allowed values are ``low``..``high``."""
    below = st.integers(max_value=low - 1).map(str)
    above = (
        st.integers(min_value=high + 1, max_value=high + 10**6).map(str) if high else st.nothing()
    )
    return below | above | (HUGE if huge else st.nothing()) | NOT_AN_INT


def floats(low: float = 0.0, high: float | None = None) -> st.SearchStrategy[str]:
    """Bad values of a float flag whose allowed values are above ``low`` (up to ``high``)."""
    below = st.floats(max_value=low, exclude_max=True, allow_nan=False, allow_infinity=False)
    above = (
        st.floats(min_value=high, exclude_min=True, allow_infinity=False)
        if (high is not None)
        else st.nothing()
    )
    return (below | above).map(repr) | NOT_FINITE | EMPTY | NOT_A_NUMBER


def unknown(*allowed: str) -> st.SearchStrategy[str]:
    """Names that are not one of ``allowed``."""
    return (WORDS | EMPTY).filter(lambda w: w not in allowed)


SPECS = (
    WORDS.map(lambda w: f"nosuch{w}")
    | EMPTY
    | st.sampled_from(
        [
            "ppo:/no/such/model.safetensors",
            "search:-3",
            "search:nan",
            "search:10000000000000000000000",
            "no_such_module:Agent",
            "no/such/file.py:Agent",
            "dmc:",
            "ppo:",
            "search:",
        ]
    )
)
"""Agent specs that name no agent."""

SEED = NEGATIVE | NOT_AN_INT
"""Bad seeds (any integer >= 0 is a seed)."""
GAME = {
    "--players": counts(2, 6),
    "--threshold": counts(1, 1000),
    "--colours": counts(1, 6),
    "--first-player": unknown("rotate", "winner", "loser", "random"),
    "--episode": unknown("hand", "game"),
    "--reward": unknown("penalty", "win"),
}
"""The game flags (``odin_env.rules.Config``) every command takes."""


def unwritable_folder(tmp: Path) -> list[str]:
    (tmp / "a-file").write_text("taken")
    return [str(tmp / "a-file" / "out"), "/proc/odin-no-such/out", str(tmp / "a-file")]


def unwritable_file(tmp: Path) -> list[str]:
    (tmp / "a-file").write_text("taken")
    return [str(tmp / "a-file" / "x.json"), "/etc/passwd/x.json", str(tmp), ""]


# -- the commands ------------------------------------------------------------------------------

COMMANDS: dict[str, tuple[Callable, list[str], dict]] = {
    "tournament": (
        evaluate.main,
        [
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
            "{out}",
        ],
        {
            **GAME,
            "--games": counts(1, 1_000_000),
            "--seed": SEED,
            "--workers": counts(1, 256),
            "--engine": unknown("auto", "single", "batched"),
            "--agents": SPECS,
            "--out": "folder",
        },
    ),
    "seating": (
        evaluate.main,
        [
            "seating",
            "--agent",
            "greedy",
            "--players",
            "2",
            "--games",
            "4",
            "--threshold",
            "3",
            "--no-progress",
            "--out",
            "{out}",
        ],
        {
            **{k: v for k, v in GAME.items() if k != "--first-player"},
            "--first-player": unknown("rotate", "winner", "loser", "random"),
            "--games": counts(1, 1_000_000),
            "--seed": SEED,
            "--workers": counts(1, 256),
            "--agent": SPECS,
            "--out": "folder",
        },
    ),
    "thresholds": (
        evaluate.main,
        [
            "thresholds",
            "--agents",
            "greedy",
            "random",
            "--thresholds",
            "3",
            "--games",
            "4",
            "--no-progress",
            "--out",
            "{out}",
        ],
        {
            "--thresholds": counts(1, 1000),
            "--games": counts(1, 1_000_000),
            "--seed": SEED,
            "--agents": SPECS,
            "--players": counts(2, 6),
            "--out": "folder",
        },
    ),
    "leaderboard": (
        evaluate.main,
        [
            "leaderboard",
            "--agents",
            "greedy",
            "random",
            "shaper",
            "--players",
            "2",
            "--games",
            "2",
            "--threshold",
            "3",
            "--no-progress",
            "--out",
            "{out}",
        ],
        {
            **GAME,
            "--tables": counts(2, 1_000_000),
            "--games": counts(1, 1_000_000),
            "--seed": SEED,
            "--agents": SPECS,
            "--out": "folder",
        },
    ),
    "showcase": (
        evaluate.main,
        ["showcase", "--no-progress", "--out", "{out}"],
        {
            "--games": counts(1, 1_000_000),
            "--seed": SEED,
            "--workers": counts(1, 256),
            "--out": "folder",
        },
    ),
    "watch": (
        evaluate.main,
        [
            "watch",
            "--agents",
            "greedy",
            "random",
            "--threshold",
            "3",
            "--no-colour",
            "--out",
            "{out}/game.json",
        ],
        {
            **GAME,
            "--seed": SEED,
            "--seat": NEGATIVE | counts(0, 1, huge=True),
            "--agents": SPECS,
            "--out": "file",
        },
    ),
    "play": (
        play.main,
        [
            "--opponents",
            "random",
            "--threshold",
            "3",
            "--seed",
            "1",
            "--no-colour",
            "--out",
            "{out}/mine.json",
        ],
        {
            **GAME,
            "--seed": SEED,
            "--seat": counts(0, 1),
            "--opponents": SPECS,
            "--out": "file",
        },
    ),
    # PPO's flags and ranges (the default algorithm is DMC); a drawn --algo comes last and wins.
    "train": (
        train.main,
        [
            "--algo",
            "ppo",
            "--runs-dir",
            "{out}",
            "--name",
            "run",
            "--total-steps",
            "64",
            "--eval-deals",
            "2",
        ],
        {
            "--players": counts(2, 6),
            "--threshold": counts(1, 1000),
            "--algo": unknown("ppo", "dmc", "cem"),
            "--name": st.sampled_from(["", "../up", ".hidden", "a/b"]),
            "--seed": SEED,
            "--total-steps": counts(0, 10**12),
            "--learning-rate": floats(0.0),
            "--gamma": floats(0.0, 1.0),
            "--gae-lambda": floats(0.0, 1.0),
            "--clip-range": floats(0.0),
            "--ent-coef": NOT_FINITE | NEGATIVE | EMPTY,
            "--vf-coef": NOT_FINITE | NEGATIVE | EMPTY,
            "--n-envs": counts(1, 4096),
            "--n-steps": counts(1, 10**6),
            "--batch-size": counts(1, 65_536),
            "--n-epochs": counts(1, 1000),
            "--net-pi": counts(1, 4096),
            "--net-vf": counts(1, 4096),
            "--actors": counts(1, 1024),
            "--eval-deals": counts(1, 10**6),
            "--torch-threads": counts(1, 1024),
            "--max-snapshots": counts(1, 1000),
            "--eval-every": counts(0, 10**12),
            "--checkpoint-every": counts(1, 10**12),
            "--snapshot-every": counts(1, 10**12),
            "--soup": counts(0, 1000),
            "--selfplay-batch": counts(1, 65_536),
            "--imitate-games": counts(1, 10**6),
            "--imitate-epochs": counts(1, 1000),
            "--seat": counts(0, 3),
            "--init": st.sampled_from(["", "no/such/model.safetensors"]),
            "--device": unknown("cpu", "cuda", "mps", "auto").map(lambda w: f"no{w}"),
            "--critic": unknown("observation", "full"),
            "--opponents": SPECS,
        },
    ),
}
"""Each CLI: its ``main``, a small valid command line (``{out}``: where it writes) and, per
flag, a strategy of bad values ("folder"/"file": paths that cannot be written)."""


@st.composite
def bad_command_lines(draw) -> tuple[str, str, str]:
    """``(command, flag, value)``: a bad value of one flag of one command."""
    command = draw(st.sampled_from(sorted(COMMANDS)))
    flags = COMMANDS[command][2]
    flag = draw(st.sampled_from(sorted(flags)))
    values = flags[flag]
    if values == "folder":
        return command, flag, draw(st.sampled_from(["folder-0", "folder-1", "folder-2"]))
    if values == "file":
        return command, flag, draw(st.sampled_from(["file-0", "file-1", "file-2", "file-3"]))
    return command, flag, draw(values)


def run_in_process(main: Callable, argv: list[str]) -> tuple[object, str]:
    """Exit code (``SystemExit``'s included) and stderr of ``main(argv)``; the signal handlers
    it sets (train.py: Ctrl-C saves a checkpoint) are put back."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
    except SystemExit as stop:
        code = stop.code
    finally:
        for s, handler in handlers.items():
            signal.signal(s, handler)
    return code, err.getvalue()


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
@given(bad_command_lines())
def test_a_bad_value_of_any_flag_is_one_line_and_exit_2_before_any_work(case):
    command, flag, value = case
    main, base, _ = COMMANDS[command]
    tmp = Path(tempfile.mkdtemp(prefix="odin-cli-"))
    try:
        out = tmp / "out"
        if value.startswith(("folder-", "file-")):
            paths = unwritable_folder(tmp) if value.startswith("folder-") else unwritable_file(tmp)
            value = paths[int(value.split("-")[1])]
        argv = [a.format(out=out) for a in base]
        # The flag's values in the valid line are replaced: by the bad value (the first agent
        # of a table, the others kept), written --flag=VALUE when it looks like a flag itself.
        given = [f"{flag}={value}"] if value.startswith("-") else [flag, value]
        if flag in argv:
            at = argv.index(flag)
            end = at + 1
            while end < len(argv) and not argv[end].startswith("--"):
                end += 1
            kept = argv[at + 2 : end] if flag in ("--agents", "--opponents") else []
            argv[at:end] = [*given, *kept]
        else:
            argv += given
        code, err = run_in_process(main, argv)
        lines = [line for line in err.splitlines() if line.strip()]
        assert code == 2, (argv, code, err[-500:])
        assert len(lines) == 1 and "Traceback" not in err, (argv, err[-500:])
        assert ": error: " in lines[0], (argv, lines[0])
        assert not out.exists(), (argv, "an output folder was created")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.parametrize("user", [None, "3"])
def test_every_command_runs_numpy_with_one_blas_thread_unless_the_user_says(user):
    """The commands set one OpenBLAS thread before numpy loads (odin_lab.cli), keeping a value
    the user set; their worker processes inherit it."""
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if user is not None:
        env["OPENBLAS_NUM_THREADS"] = user
    # The child notes the variable at the moment numpy starts to load.
    code = (
        "import os, sys\n"
        "seen = []\n"
        "class Watch:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name == 'numpy' and not seen:\n"
        "            seen.append(os.environ.get('OPENBLAS_NUM_THREADS'))\n"
        "sys.meta_path.insert(0, Watch())\n"
        "import odin_lab.commands.evaluate\n"
        "print(seen)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    ).stdout.strip()
    assert out == repr([user or "1"])


@given(st.lists(st.text(alphabet=string.printable, max_size=12), max_size=6))
@settings(max_examples=60, deadline=None)
def test_a_results_command_is_read_back_by_a_shell_as_its_very_arguments(argv):
    """``shell_command``: the ``"command"`` of every result file; a shell reads it back as the
    very arguments it was run with, spaces, quotes and all (``None``: this process's)."""
    line = shell_command("research/table_sizes.py", argv)
    assert shlex.split(line) == ["python", "research/table_sizes.py", *argv]
    assert shell_command("evaluate.py") == shlex.join(["python", "evaluate.py", *sys.argv[1:]])


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_flag_given_the_value_dashdash_is_refused_not_dropped_for_its_default(command, tmp_path):
    """argparse drops ``--flag=--`` and keeps the flag's default; every command refuses it
    (found by the property test above: ``leaderboard --first-player=--`` ran with ``rotate``)."""
    main, base, _ = COMMANDS[command]
    argv = [a.format(out=tmp_path / "out") for a in base] + ["--seed=--"]
    code, err = run_in_process(main, argv)
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, (argv, code, err[-500:])
    assert "argument --seed: expected a value, got '--'" in lines[0]
    assert not (tmp_path / "out").exists()
