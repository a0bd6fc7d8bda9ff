"""evaluate.py as a user runs it: bad input gets one clear line and exit code 2; good input
writes its files and prints its table."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def call(*args: str, cwd: Path, capsys, monkeypatch) -> subprocess.CompletedProcess:
    """The command in this process (``main(argv)``), read as :func:`run` reads the script: the
    script's own path is checked by one case of each test that uses this."""
    from odin_lab.commands import evaluate

    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        code = evaluate.main(list(args))
    except SystemExit as stop:
        code = stop.code
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(list(args), code, out, err)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["tournament", "--agents", "planner", "bogus", "random", "random"], "unknown agent"),
        (["tournament", "--agents", "ppo:/no/such/model.zip", "greedy"], "does not exist"),
        (["tournament", "--agents", *["greedy"] * 7], "players must be 2-6"),
        (["tournament", "--agents", "greedy", "random", "--players", "4"], "fewer agents"),
        (["seating", "--agent", "greedy", "--players", "4", "7"], "players must be 2-6"),
        (["thresholds", "--agents", "planner", "nope"], "unknown agent"),
        (["tournament", "--agents", "greedy", "greedy", "--first-player", "last"], "first_player"),
        (["tournament", "--agents", "greedy", "greedy", "--games", "x"], "invalid int"),
        (["tournament", "--agents", "greedy", "greedy", "--games", "0"], "--games"),
    ],
)
def test_bad_input_prints_one_line_and_exits_2(args, says, tmp_path, capsys, monkeypatch):
    argv = [*args, "--out", str(tmp_path / "out")]
    if says == "unknown agent" and args[0] == "tournament":  # one case runs the real script
        result = run(*argv, cwd=tmp_path)
    else:
        result = call(*argv, cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert says in lines[0]
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_tournament_writes_json_csv_and_plot_and_prints_a_table(tmp_path):
    out = tmp_path / "t"
    agents = ["planner", "greedy", "random"]
    result = run(
        "tournament",
        "--agents",
        *agents,
        "--games",
        "6",
        "--threshold",
        "5",
        "--no-progress",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    summary = json.loads((out / "tournament.json").read_text())
    assert summary["games"] == 6 and summary["config"]["players"] == 3
    assert len(summary["game_records"]) == 6
    assert len((out / "games.csv").read_text().splitlines()) == 1 + 6
    assert (out / "tournament.png").read_bytes()[:4] == b"\x89PNG"
    for name in agents:
        assert name in result.stdout


def test_seating_and_thresholds_write_one_figure_each(tmp_path, capsys, monkeypatch):
    # In this process: the script's own path is test_tournament_writes_json_csv_and_plot's.
    def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
        return call(*args, cwd=cwd, capsys=capsys, monkeypatch=monkeypatch)

    seat = run(
        "seating",
        "--agent",
        "greedy",
        "--players",
        "2",
        "3",
        "--start-rule",
        "rotate",
        "winner",
        "--games",
        "6",
        "--no-progress",
        "--out",
        str(tmp_path / "s"),
        cwd=tmp_path,
    )
    assert seat.returncode == 0, seat.stderr
    cells = json.loads((tmp_path / "s" / "seating.json").read_text())["cells"]
    assert {(c["players"], c["first_player"]) for c in cells} == {
        (n, r) for n in (2, 3) for r in ("rotate", "winner")
    }
    assert (tmp_path / "s" / "seating.png").exists()
    thr = run(
        "thresholds",
        "--agents",
        "planner",
        "greedy",
        "--thresholds",
        "3",
        "6",
        "--games",
        "4",
        "--no-progress",
        "--out",
        str(tmp_path / "h"),
        cwd=tmp_path,
    )
    assert thr.returncode == 0, thr.stderr
    rows = json.loads((tmp_path / "h" / "thresholds.json").read_text())["rows"]
    assert [r["threshold"] for r in rows] == [3, 6]
    assert (tmp_path / "h" / "thresholds.png").exists()


def test_showcase_plays_the_labs_best_and_records_the_hash_of_the_network_it_played(
    tmp_path, capsys, monkeypatch
):
    from agents.dmc import BUNDLED_DMC
    from odin_lab.evaluation.provenance import sha256

    # One deal from every seat: the search takes about 40 ms a decision.
    out = tmp_path / "out"
    small = ["--games", "4", "--workers", "1", "--no-progress", "--out", str(out)]
    result = call("showcase", *small, cwd=tmp_path, capsys=capsys, monkeypatch=monkeypatch)
    assert result.returncode == 0, result.stderr
    played = json.loads((out / "tournament" / "tournament.json").read_text())
    assert played["agents_specs"] == ["search", "dmc", "planner", "shaper"]
    models = json.loads((out / "provenance.json").read_text())["models_sha256"]
    assert models[f"dmc/{BUNDLED_DMC.name}"] == sha256(BUNDLED_DMC)


def test_provenance_hashes_every_kind_of_model_file_it_plays(tmp_path):
    """A DMC or linear model file, and the bundled linear player, are recorded by sha256 as PPO
    files are; a spec that plays no file adds nothing."""
    from agents.linear import BUNDLED_LINEAR
    from odin_lab.evaluation.provenance import model_files, sha256

    dmc = tmp_path / "q.safetensors"
    dmc.write_bytes(b"any bytes: the hash is of the file, not of what it holds")
    specs = [f"dmc:{dmc}", f"linear:{BUNDLED_LINEAR}", "linear", "greedy"]
    assert model_files(specs) == {
        f"dmc:{dmc}": sha256(dmc),
        f"linear:{BUNDLED_LINEAR}": sha256(BUNDLED_LINEAR),
        f"linear/{BUNDLED_LINEAR.name}": sha256(BUNDLED_LINEAR),
    }
    # A search's shortlist is the one-pass network's: it depends on that file as dmc on its own.
    from agents.dmc import BUNDLED_DMC_ONE

    one = {f"dmc/{BUNDLED_DMC_ONE.name}": sha256(BUNDLED_DMC_ONE)}
    for spec in ("search", "search:8", "search:5ms:race"):
        assert model_files([spec, "greedy"]) == one, spec
