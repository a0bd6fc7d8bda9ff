"""``research/learning_curve.py``, run as a person runs it: a tiny run prints a row per (time
point, opponent), writes the JSON, CSV, figure and loadable model files, and learns on between
points; bad input is refused in one line before anything is written; Ctrl-C keeps the points
measured and the learner's checkpoint, from which ``--resume`` ends the run; the evaluation
of a saved model is reproducible from its seed.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from launch import interrupt_when
from research_file import load

from agents.registry import make, make_batch_agent
from odin_env.rules import Config
from odin_lab.training.config import TrainConfig
from odin_lab.training.run import evaluate

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "research" / "learning_curve.py"
TINY = ["--minutes", "0.02", "0.04", "--deals", "3", "--eval-seed", "5"]
OPPONENTS = ("greedy", "planner")
ROW = re.compile(
    r"^\s*([\d.]+)\s+([\d,]+)\s+(\w+)\s+([\d.]+)%\s+\[([\d.]+)%, ([\d.]+)%\]\s+25%\s+[\d,]+$"
)


def run(*args: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
        **kwargs,
    )


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path_factory.mktemp("curve") / "out"
    done = run(*TINY, "--out", str(out))
    assert done.returncode == 0, done.stderr
    return done, out


def test_tiny_run_prints_a_row_per_point_and_opponent(tiny) -> None:
    done, _ = tiny
    rows = [m.groups() for line in done.stdout.splitlines() if (m := ROW.match(line))]
    assert [(float(r[0]), r[2]) for r in rows] == [
        (minutes, opponent) for minutes in (0.02, 0.04) for opponent in OPPONENTS
    ]
    for _, _, _, rate, low, high in rows:
        assert float(low) <= float(rate) <= float(high) <= 100
    decisions = [int(r[1].replace(",", "")) for r in rows]
    assert decisions[0] == decisions[1] < decisions[2] == decisions[3]
    assert "learning_curve.json" in done.stdout.splitlines()[-1]
    assert "Warning" not in done.stderr and "Traceback" not in done.stderr


def test_tiny_run_writes_json_csv_figure_and_models(tiny) -> None:
    _, out = tiny
    report = json.loads((out / "learning_curve.json").read_text())
    assert report["complete"] is True
    assert report["settings"]["deals"] == 3 and report["settings"]["eval_seed"] == 5
    assert report["facts"]["parity"] == 0.25 and report["facts"]["games_per_point"] == 12
    results = report["results"]
    assert [(r["minutes"], r["opponent"]) for r in results] == [
        (minutes, opponent) for minutes in (0.02, 0.04) for opponent in OPPONENTS
    ]
    with open(out / "learning_curve.csv", newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == len(results)
    for row, result in zip(table, results):
        assert row["opponent"] == result["opponent"]
        assert int(row["decisions"]) == result["decisions"]
        assert float(row["win_rate"]) == pytest.approx(result["win_rate"])
    for result in results:
        assert 0 <= result["ci_low"] <= result["win_rate"] <= result["ci_high"] <= 1
        assert result["games"] == 12
        assert result["train_seconds"] >= 60 * result["minutes"]
    assert results[0]["decisions"] < results[2]["decisions"]
    assert (out / "learning_curve.png").stat().st_size > 0
    assert {p.name for p in out.glob("*.safetensors")} == {
        "minutes-0.02.safetensors",
        "minutes-0.04.safetensors",
    }
    for result in results:
        path = out / result["model"]
        make(f"ppo:{path}")
        agent = make_batch_agent(f"ppo:{path}")
        assert hasattr(agent, "act_batch")


def test_evaluation_is_reproducible_from_its_seed(tiny) -> None:
    _, out = tiny
    recorded = json.loads((out / "learning_curve.json").read_text())["results"]
    config = TrainConfig(game=Config(players=4))
    for entry in recorded[:2]:
        path = out / entry["model"]
        first = evaluate(path, config, entry["opponent"], 3, 5)
        second = evaluate(path, config, entry["opponent"], 3, 5, workers=2)
        assert first == second
        # The same deals as in the run: the figures it recorded.
        for key in ("win_rate", "ci_low", "ci_high", "mean_penalty", "games"):
            assert first[key] == pytest.approx(entry[key])


BAD_INPUT = [
    (["--minutes", "30", "10"], "--minutes"),
    (["--minutes", "0", "10"], "--minutes"),
    (["--minutes", "-5"], "--minutes"),
    (["--deals", "0"], "--deals"),
    (["--workers", "0"], "--workers"),
    (["--opponents", "nosuch"], "--opponents"),
    (["--train-opponents", "nosuch"], "--train-opponents"),
    (["--train-opponents", "greedy", "self"], "--train-opponents"),
]


def run_here(args: list[str], capsys) -> subprocess.CompletedProcess:
    """The script's ``main(args)`` in this process (what a run would print and its exit code),
    instead of a new process that spends seconds importing torch before it checks anything."""
    capsys.readouterr()
    with pytest.raises(SystemExit) as ended:
        load("learning_curve").main(args)
    said = capsys.readouterr()
    return subprocess.CompletedProcess(args, ended.value.code, said.out, said.err)


@pytest.mark.parametrize(("args", "flag"), BAD_INPUT)
def test_bad_input_exits_2_in_one_line_and_writes_nothing(
    tmp_path: Path, args: list[str], flag: str, capsys
) -> None:
    out = tmp_path / "out"
    # The first case as a person runs the script; the others through its main, in this process.
    if args == BAD_INPUT[0][0]:
        done = run(*args, "--out", str(out))
    else:
        done = run_here([*args, "--out", str(out)], capsys)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert flag in lines[0] and "error" in lines[0]
    if "nosuch" in args:
        assert "greedy" in lines[0] and "planner" in lines[0]  # the allowed names
    assert done.stdout == ""
    assert not out.exists()


def test_ctrl_c_keeps_the_points_measured_and_resume_ends_the_run(tmp_path: Path, capsys) -> None:
    out = tmp_path / "out"
    # Points at 1.8 and 5.4 s of CPU: the Ctrl-C comes at most about 1.5 s (a poll and the
    # settle) of training after the first, well before the second.
    flags = ["--minutes", "0.03", "0.09", "--deals", "2", "--clock", "cpu", "--out", str(out)]

    def measured() -> bool:  # the first point's rows are in
        path = out / "learning_curve.json"
        return path.exists() and len(json.loads(path.read_text())["results"]) >= 2

    # settle: back in training when the signal comes.
    done = interrupt_when([str(SCRIPT), *flags], measured, cwd=ROOT, settle=1.0)
    stdout, stderr = done.stdout, done.stderr
    assert done.returncode == 130, stderr
    assert "partial results" in stderr and str(out / "learning_curve.json") in stderr
    report = json.loads((out / "learning_curve.json").read_text())
    assert report["complete"] is False
    assert [(r["minutes"], r["opponent"]) for r in report["results"]] == [
        (0.03, opponent) for opponent in OPPONENTS
    ]
    assert len(list(csv.DictReader((out / "learning_curve.csv").open()))) == 2
    assert sum(1 for line in stdout.splitlines() if ROW.match(line)) == 2
    assert "--resume" in stderr
    saved = checkpoint_entries(out / "checkpoint.safetensors")
    assert saved["curve_trained_s"] >= 1.8 and saved["step"] >= report["results"][0]["decisions"]

    # A new run there is refused, and so is a resume with other settings: nothing changes. The
    # first through the script's main in this process (its flag check, which the first case of
    # the bad-input test runs as a script), the second as a person runs it.
    before = (out / "learning_curve.json").read_bytes()
    for args, word in (([], "--resume"), (["--resume", "--seed", "1"], "seed")):
        refused = run(*flags, *args) if args else run_here(flags, capsys)
        assert refused.returncode == 2 and word in refused.stderr, refused.stderr
        assert len(refused.stderr.strip().splitlines()) == 1
    assert (out / "learning_curve.json").read_bytes() == before

    done = run(*flags, "--resume")
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "learning_curve.json").read_text())
    assert report["complete"] is True
    assert not (out / "checkpoint.safetensors").exists()  # a finished run has none
    assert [(r["minutes"], r["opponent"]) for r in report["results"]] == [
        (minutes, opponent) for minutes in (0.03, 0.09) for opponent in OPPONENTS
    ]
    # It went on from the checkpoint: its decisions and clock, not from zero.
    second = report["results"][-1]
    assert second["decisions"] > saved["step"] and second["train_seconds"] >= 5.4
    assert sum(1 for line in done.stdout.splitlines() if ROW.match(line)) == 2


def checkpoint_entries(path: Path) -> dict:
    """The ``run`` metadata of a checkpoint file (step, the learner's entries)."""
    from safetensors import safe_open

    with safe_open(str(path), framework="np") as f:
        return json.loads(f.metadata()["run"])
