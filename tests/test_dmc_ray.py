"""Deep Monte Carlo's actors on Ray (issue 58), on a local 2-CPU Ray started once for this
module: two synchronous runs of a seed are the same run; an asynchronous run whose actor process
is killed mid-run replaces it, says so in its log, and writes a model that plays as ``dmc:PATH``;
a resume keeps the samples log of its own past; the refusals are one line each before anything
is written (without Ray installed: tests/test_ray.py, the same check for every algorithm)."""

from __future__ import annotations

import csv
import os
import signal
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import ray
from safetensors.numpy import load_file

from odin_env.rules import Config
from odin_lab.commands import train as train_cli
from odin_lab.evaluation import distributed
from odin_lab.evaluation.tournament import play_tournament
from odin_lab.training import make_config, train
from odin_lab.training.checkpoints import checkpoint_step
from odin_lab.training.dmc_actors import EVENTS_LOG, SAMPLES_LOG, keep_samples_before

# The same worker as tests/test_ray.py under pytest-xdist: one Ray at a time.
pytestmark = pytest.mark.xdist_group("ray")


@pytest.mark.parametrize(
    ("flags", "words"),
    [
        (["--ray", "127.0.0.1:1"], ["--ray 127.0.0.1:1", "ray start --head"]),
        (["--ray", "--actors", "0"], ["actors must be an integer 1-1,024; got 0"]),
        (["--synchronous"], ["synchronous is a setting of Ray actors", "--ray"]),
    ],
    ids=["no-cluster", "actors", "synchronous-alone"],
)
def test_dmc_on_ray_that_cannot_run_is_one_line_and_nothing_written(
    tmp_path, capsys, monkeypatch, flags, words
):
    """In this process, as if it were not connected to the session's cluster (a connected
    process keeps its cluster, whatever the address)."""
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    runs = tmp_path / "runs"
    argv = ["--name", "r", "--total-steps", "10", "--runs-dir", str(runs), *flags]
    assert train_cli.main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines
    assert not runs.exists()


@pytest.mark.parametrize(("algo", "sizes"), [("dmc", {"actors": 3}), ("exit", {"workers": 3})])
def test_a_ray_started_for_a_run_has_a_cpu_per_actor_or_search_worker(
    tmp_path, monkeypatch, algo, sizes
):
    """``--ray`` alone: DMC's actors each take a CPU; expert iteration's searches are Ray tasks,
    as many at once as ``--workers``."""
    asked = []

    def connect(address, cpus):
        asked.append((address, cpus))
        raise ValueError("no Ray in this test")

    monkeypatch.setattr(distributed, "connect", connect)
    config = make_config(algo, name="r", runs_dir=str(tmp_path), ray="local", **sizes)
    with pytest.raises(ValueError, match="no Ray in this test"):
        train(config)
    assert asked == [("local", 3)] and not (tmp_path / "r").exists()


def _config(runs: Path, name: str, total: int, **extra):
    return make_config(
        "dmc",
        name=name,
        runs_dir=str(runs),
        game=Config(players=4),
        opponents=["greedy", "self"],
        ray="local",
        actors=2,
        selfplay_batch=8,
        decisions_per_update=256,
        batch_size=64,
        net=[16],
        total_steps=total,
        eval_every=0,
        snapshot_every=300,
        checkpoint_every=10**6,
        seed=3,
        **extra,
    )


def _rows(run: Path) -> list[dict[str, int]]:
    with (run / SAMPLES_LOG).open(newline="") as f:
        return [{k: int(v) for k, v in row.items()} for row in csv.DictReader(f)]


def test_synchronous_actors_are_one_run_per_seed(cluster, tmp_path):
    a = load_file(str(train(_config(tmp_path, "a", 700, synchronous=True))))
    b = load_file(str(train(_config(tmp_path, "b", 700, synchronous=True))))
    assert sorted(a) == sorted(b) and any(k.startswith("snapshot/") for k in a)
    assert all(np.array_equal(a[k], b[k]) for k in a)
    rows = _rows(tmp_path / "a")
    # Every update: each actor's share, in actor order, collected with that update's weights.
    assert [(r["update"], r["actor"]) for r in rows] == [(u, k) for u in range(3) for k in (0, 1)]
    assert all(r["version"] == r["update"] and r["decisions"] >= 128 for r in rows)


def test_a_resume_keeps_the_samples_log_of_its_own_past(tmp_path):
    """A learner killed after update 3's batches, resumed from its checkpoint at update 2: the
    log goes on from there."""
    path = tmp_path / SAMPLES_LOG
    keep_samples_before(path, 0)
    with path.open("a") as f:
        f.writelines(f"{u},{k},0,{u},130,4\n" for u in range(4) for k in (0, 1))
    keep_samples_before(path, 2)
    assert [(r["update"], r["actor"]) for r in _rows(tmp_path)] == [(0, 0), (0, 1), (1, 0), (1, 1)]


def _kill_an_actor(run: Path, killed: list[int], stop: threading.Event) -> None:
    """Once the run has trained on a batch, SIGKILL one of its actor processes (of this test's
    Ray: a descendant of this process)."""
    while not stop.is_set() and not (run / SAMPLES_LOG).is_file():
        time.sleep(0.01)
    while not stop.is_set() and len((run / SAMPLES_LOG).read_text().splitlines()) < 3:
        time.sleep(0.01)
    while not stop.is_set():
        for proc in psutil.process_iter(["cmdline"]):
            title = (proc.info["cmdline"] or [""])[0]
            if title.startswith("ray::DMCActor") and os.getpid() in _ancestors(proc):
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)
                return
        time.sleep(0.01)


def _ancestors(proc: psutil.Process) -> list[int]:
    try:
        return [p.pid for p in proc.parents()]
    except psutil.Error:
        return []


def test_an_actor_killed_mid_run_is_replaced_and_the_model_plays(cluster, tmp_path, capsys):
    run = tmp_path / "k"
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_an_actor, args=(run, killed, stop), daemon=True)
    killer.start()
    try:
        path = train(_config(tmp_path, "k", 2000))
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 1 and checkpoint_step(path) >= 2000
    said = (run / EVENTS_LOG).read_text().splitlines()
    assert len(said) == 1 and "was lost" in said[0] and "generation 1" in said[0]
    assert said[0] in capsys.readouterr().out
    rows = _rows(run)
    lost_at = int(said[0].split(":")[0].removeprefix("update ").replace(",", ""))
    assert rows[-1]["update"] > lost_at  # the run went on
    assert sum(r["decisions"] for r in rows) >= 2000
    assert all(0 <= r["version"] <= r["update"] for r in rows)
    assert any(r["version"] < r["update"] for r in rows)  # asynchronous: some lag
    records = play_tournament(
        [f"dmc:{path}", "greedy", "greedy", "greedy"], Config(players=4), 2, 1, progress=False
    )
    assert len(records) == 8
