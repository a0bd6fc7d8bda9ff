"""Every file from outside is opened only once known to be a regular file, and read bounded in
memory as well as bytes (issue 59, items 4 and 6): a FIFO, a device or a link to one given as a
model (``ppo:``, ``dmc:``, ``linear:``), as a run's ``config.json`` or as a records file is
refused at once in one line, and a records file of many empty objects under the byte limit is
refused before it is parsed, in little memory."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from launch import returns_within

from agents import make
from odin_env.files import json_parse_bound, load_json

ROOT = Path(__file__).resolve().parents[1]
KINDS = ["ppo", "dmc", "linear"]


def not_regular(tmp_path: Path) -> list[tuple[Path, str]]:
    """A FIFO, a link to a FIFO, a device, a folder: each with the kind a refusal names."""
    os.mkfifo(tmp_path / "pipe.safetensors")
    (tmp_path / "link.safetensors").symlink_to(tmp_path / "pipe.safetensors")
    (tmp_path / "folder.safetensors").mkdir()
    return [
        (tmp_path / "pipe.safetensors", "a FIFO"),
        (tmp_path / "link.safetensors", "a FIFO"),
        (Path("/dev/zero"), "a character device"),
        (tmp_path / "folder.safetensors", "a folder"),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_model_that_is_no_regular_file_is_refused_at_once(tmp_path, kind):
    for path, what in not_regular(tmp_path):
        with pytest.raises(ValueError, match=f"not a regular file \\({what}\\)") as error:
            returns_within(10, lambda p=path: make(f"{kind}:{p}"))
        assert "\n" not in str(error.value)


def one_line_exit_2(argv: list[str], timeout: float = 30) -> str:
    """Run ``argv`` under this Python in the repository; its stderr, once it is known to have
    refused in one line with exit 2 and written nothing to stdout."""
    done = subprocess.run(
        [sys.executable, *argv], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    return done.stderr


@pytest.mark.parametrize("kind", KINDS)
def test_a_tournament_with_a_fifo_model_says_so_in_one_line(tmp_path, kind):
    os.mkfifo(tmp_path / "pipe.safetensors")
    (tmp_path / "link").symlink_to(tmp_path / "pipe.safetensors")
    for path in (tmp_path / "pipe.safetensors", tmp_path / "link", "/dev/zero"):
        argv = ["evaluate.py", "tournament", "--agents", f"{kind}:{path}", "random"]
        said = one_line_exit_2([*argv, "--games", "1", "--out", str(tmp_path / "out")])
        assert "not a regular file" in said
        assert not (tmp_path / "out").exists()


def test_resuming_a_run_whose_config_is_a_fifo_says_so_in_one_line(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    os.mkfifo(run / "config.json")
    said = one_line_exit_2(["train.py", "--resume", str(run)])
    assert "config.json" in said and "not a regular file (a FIFO)" in said


def test_a_records_file_that_is_a_link_to_a_fifo_is_refused_in_one_line(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "link.json").symlink_to(tmp_path / "pipe.json")
    for command in ("review", "replay"):
        said = one_line_exit_2(["evaluate.py", command, str(tmp_path / "link.json")])
        assert "not a regular file (a FIFO)" in said


def test_json_whose_parse_takes_more_than_the_limit_is_refused_before_parsing():
    raw = b"[{}, [], {}]"
    assert load_json(raw, "x.json", json_parse_bound(raw)) == [{}, [], {}]
    with pytest.raises(ValueError, match="x.json: too many objects, lists and items to load"):
        load_json(raw, "x.json", json_parse_bound(raw) - 1)


def test_a_records_file_of_many_empty_objects_is_refused_in_little_memory(tmp_path):
    """250 MiB of ``{}`` (under the 256 MiB byte limit) is some 87 million objects, 6 GB once
    parsed: ``evaluate.py review`` refuses it in one line, its peak memory a few times the
    file's bytes (the address space capped at 3 GiB so that the unfixed reader fails fast)."""
    path = tmp_path / "empty.json"
    with path.open("wb") as f:
        f.write(b"[" + b"{}," * (250 * 2**20 // 3 - 1) + b"{}]")
    assert path.stat().st_size < 256 * 2**20
    probe = (
        "import resource, subprocess, sys\n"
        "def cap():\n"
        "    resource.setrlimit(resource.RLIMIT_AS, (3 * 2**30, 3 * 2**30))\n"
        "done = subprocess.run(sys.argv[1:], preexec_fn=cap, capture_output=True, text=True)\n"
        "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
        "print(done.returncode, peak, repr(done.stderr[-300:]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, sys.executable, "evaluate.py", "review", str(path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    code, peak, said = done.stdout.split(" ", 2)
    assert int(code) == 2, said
    assert "too many objects, lists and items" in said and "Traceback" not in said
    assert int(peak) < 1.5 * 2**30, f"peak {int(peak) / 2**20:.0f} MiB"
