"""Code runs only when the command line names it: a spec read back from a file that names
outside code (a run folder's config.json, a comparison's or a study's tournaments) is refused in
one line before anything imports it, unless this command's line gives it again."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from training_inprocess import evaluate_main, train_main

from odin_lab.evaluation.trust import trusted, untrusted
from odin_lab.training import make_config
from odin_lab.training.config import config_to_json

ROOT = Path(__file__).resolve().parents[1]
AGENT = """\
from pathlib import Path

import numpy as np

Path(__file__).with_name("mark").write_text("ran")  # the mark: this file was run


class Agent:
    name = "marked"

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])

    def act_batch(self, observations, masks):
        return np.argmax(masks, axis=1)
"""
TINY = [
    "--algo", "dmc", "--selfplay-batch", "8", "--decisions-per-update", "64", "--batch-size",
    "16", "--net", "32", "16", "--eval-every", "0", "--threshold", "5", "--checkpoint-every",
    "64",
]  # fmt: skip


def run_py(script: str, *args: object, cwd: Path = ROOT, **env: str):
    """``python SCRIPT ARGS``, a real process (the script's own start and exit code)."""
    return subprocess.run(
        [sys.executable, str(ROOT / script), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(ROOT), **env},
    )


def agent_file(folder: Path) -> tuple[str, Path]:
    """An outside agent file that leaves ``mark`` beside it when it runs: (its spec, the mark)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "helper.py").write_text(AGENT)
    return f"{folder / 'helper.py'}:Agent", folder / "mark"


def one_line_refusal(done: subprocess.CompletedProcess, *words: str) -> str:
    assert done.returncode == 2, done.stderr[-2000:]
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def config_json(run: Path, algo: str = "dmc", **fields: object) -> Path:
    """A run folder holding only ``config.json`` of a tiny run, ``fields`` set as stored (not
    checked: an outside spec must not run in this process)."""
    payload = config_to_json(make_config(algo, name=run.name, runs_dir=str(run.parent)))
    for name, value in fields.items():
        if name in payload:
            payload[name] = value
        else:
            payload[algo][name] = value
    run.mkdir(parents=True)
    (run / "config.json").write_text(json.dumps(payload, indent=2))
    return run


@pytest.mark.parametrize(
    ("algo", "field", "as_list"),
    [("dmc", "opponents", True), ("dmc", "eval_opponents", True), ("ppo", "imitate", False)],
)
def test_resume_refuses_a_run_folder_naming_outside_code_before_it_runs(
    tmp_path, algo, field, as_list
):
    """The first case through a real ``python train.py`` (the script's exit code and stderr);
    the others through the command's ``main`` in this process: the refusal is the command's,
    and a ``train.py`` process spends seconds importing torch before it checks anything."""
    spec, mark = agent_file(tmp_path / "elsewhere")
    run = config_json(tmp_path / "runs" / "copied", algo, **{field: [spec] if as_list else spec})
    first = field == "opponents"
    done = run_py("train.py", "--resume", run) if first else train_main("--resume", run)
    line = one_line_refusal(done, str(run / "config.json"), repr(spec), f"--trust {spec}")
    assert "outside code" in line
    assert not mark.exists(), "the run folder's agent ran"


def test_resume_refuses_a_module_spec_and_a_package_name_is_no_way_round(tmp_path, monkeypatch):
    (tmp_path / "mods").mkdir()
    (tmp_path / "mods" / "marker.py").write_text(AGENT)
    run = config_json(tmp_path / "runs" / "copied", opponents=["random", "marker:Agent"])
    # The module importable, as from PYTHONPATH; the command in this process (the script's own
    # refusal: the run-folder test's first case). Had it imported the module, the mark is left.
    monkeypatch.syspath_prepend(str(tmp_path / "mods"))
    done = train_main("--resume", run)
    one_line_refusal(done, "'marker:Agent'", "--trust marker:Agent")
    assert not (tmp_path / "mods" / "mark").exists()
    assert "marker" not in sys.modules


def test_trust_without_resume_is_refused_before_any_folder(tmp_path):
    spec, mark = agent_file(tmp_path / "elsewhere")
    # In this process: a tiny --total-steps, so that a refusal that failed is a short run.
    done = train_main("--runs-dir", tmp_path / "runs", "--trust", spec, "--total-steps", 64, *TINY)
    one_line_refusal(done, "--trust", "--resume")
    assert not (tmp_path / "runs").exists() and not mark.exists()


def test_a_run_resumes_with_its_outside_agent_given_again_on_the_command_line(tmp_path):
    """A real run against an outside agent; copied, its resume is refused (the run's files as
    they were), then runs with ``--trust`` and the spec written relative to the current folder.
    The run and the refusal through the command's ``main`` in this process (the agent file is
    loaded here, once: its mark); the resume that runs the agent again is a real ``train.py``
    process, a fresh one, so its mark is this resume's."""
    spec, mark = agent_file(tmp_path / "agents")
    runs = tmp_path / "runs"
    first = train_main(
        "--runs-dir", runs, "--name", "r", "--opponents", spec, "--total-steps", 64, *TINY
    )  # fmt: skip
    assert first.returncode == 0, first.stderr[-2000:]
    assert mark.exists()
    mark.unlink()
    before = {p.name: p.read_bytes() for p in (runs / "r").iterdir() if p.is_file()}
    refused = train_main("--resume", runs / "r", "--total-steps", 128)
    one_line_refusal(refused, repr(spec))
    assert not mark.exists()
    assert {p.name: p.read_bytes() for p in (runs / "r").iterdir() if p.is_file()} == before
    resumed = run_py(
        "train.py",
        "--resume",
        "runs/r",
        "--total-steps",
        128,
        "--trust",
        "agents/helper.py:Agent",
        cwd=tmp_path,
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert mark.exists()


def test_the_lab_s_own_specs_and_model_files_need_no_trust(tmp_path):
    own = ["random", "greedy", "planner", "ppo", "dmc", "linear", "search:50", "search:race",
           "ppo:x.py:Agent", "dmc:/a.py:Agent", "self", "learner", "nonsense", 7, None]  # fmt: skip
    assert untrusted(own, []) == []
    assert untrusted(["m:A", "a/b.py:A", "m:A", "pkg_name"], ["m:A"]) == ["a/b.py:A"]
    trusted(["a/b.py:A"], [os.path.abspath("a/b.py") + ":A"], "f.json")  # the same file
    with pytest.raises(ValueError, match=r"f\.json names outside code .*--trust m:A"):
        trusted(["m:A"], ["n:A"], "f.json")


COMPARE = ["compare", "--agents", "greedy", "random", "--against", "shaper", "--players", "2",
           "--games", "4", "--seed", "5", "--threshold", "5", "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def compared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished comparison's folder, made once (each test edits a copy of it): the command
    in this process (the script's own start is no part of what these tests check)."""
    out = tmp_path_factory.mktemp("compared") / "out"
    done = evaluate_main(*COMPARE, "--out", out)
    assert done.returncode == 0, done.stderr[-2000:]
    return out


@pytest.mark.parametrize("partial", [False, True])
def test_a_compare_resume_never_runs_the_agents_its_files_name(tmp_path, compared, partial):
    """``evaluate.py compare --resume`` plays the command line's agents; a half's records that
    name outside code (a copied folder) are only compared with them, and refused: nothing of them
    runs. (A regression test: the comparison, like the studies and leaderboards, already took
    its agents from the command line.) The folder is a copy of one comparison (a copy resumes
    as its original: nothing in it names its folder); the resume of a whole half is a real
    ``python evaluate.py``, that of a partial one the command's ``main`` in this process."""
    spec, mark = agent_file(tmp_path / "elsewhere")
    out = tmp_path / "out"
    shutil.copytree(compared, out)
    path = out / "first" / "tournament.json"
    data = json.loads(path.read_text())
    data["agents_specs"] = [spec if s == "greedy" else s for s in data["agents_specs"]]
    if partial:
        data["partial"] = True
    path.write_text(json.dumps(data))
    resume = evaluate_main if partial else lambda *a: run_py("evaluate.py", *a)
    done = resume(*COMPARE, "--out", out, "--resume")
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and str(out / "first") in done.stderr, done.stderr
    assert not mark.exists(), "the comparison's file agent ran"


STUDIES = {  # the studies resume by rows.resumed_rows (thresholds and goat too), leaderboards
    # by resume.partial_tables (a tournament's, by partial_records: the compare test above)
    "seating": (
        ["--agent", "greedy", "--players", "2", "--first-player", "rotate"],
        "seating.json",
    ),
    "leaderboard": (
        ["--agents", "greedy", "random", "shaper", "--players", "2"],
        "leaderboard.json",
    ),
}


@pytest.mark.parametrize("study", list(STUDIES))
def test_a_study_resume_never_runs_the_agents_its_folder_names(tmp_path, capsys, study):
    """A partial study or leaderboard folder (copied from elsewhere) whose summary names an
    outside agent where the command line names ``greedy``: ``--resume`` refuses it in one line,
    and the agent file never runs (its mark is not left)."""
    from odin_lab.commands.evaluate import main

    spec, mark = agent_file(tmp_path / "elsewhere")
    flags, name = STUDIES[study]
    argv = [study, *flags, "--games", "2", "--out", str(tmp_path / "out"), "--no-progress"]
    assert main([*argv, "--workers", "1"]) == 0
    path = tmp_path / "out" / name

    def swap(value: object) -> object:
        if isinstance(value, list):
            return [swap(v) for v in value]
        if isinstance(value, dict):
            return {k: swap(v) for k, v in value.items()}
        return spec if value == "greedy" else value

    data = swap(json.loads(path.read_text()))
    path.write_text(json.dumps({**data, "partial": True}))
    capsys.readouterr()
    assert main([*argv, "--workers", "1", "--resume"]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and "Traceback" not in error and name in error, error
    assert not mark.exists(), f"the {study} folder's file agent ran"
