"""Tournaments, studies and training rollouts on Ray (issue 14), on a local 2-CPU Ray started
once for this module and shut down after it: the same bytes as one local worker, a worker
killed mid-run changes nothing, Ctrl-C keeps the finished deals, and a 2-actor training run
resumes and is reproducible. Without Ray, ``--ray`` is one line saying how to install it."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
import ray

from odin_env.rules import Config
from odin_lab.commands import evaluate, train
from odin_lab.evaluation import distributed
from odin_lab.evaluation.tournament import play_tournament
from odin_lab.training import TrainConfig, make_config
from odin_lab.training import train as train_run
from odin_lab.training.collector import Rollout, gae

ROOT = Path(__file__).resolve().parents[1]
# One worker for the tests of Ray under pytest-xdist (make test runs --dist loadgroup): they
# share the session's one local Ray (conftest.cluster).
pytestmark = pytest.mark.xdist_group("ray")


def test_a_local_ray_that_missed_its_start_up_wait_is_started_once_more(monkeypatch):
    calls = []

    def init(**kwargs):
        calls.append(kwargs)
        if len(calls) == 1 or kwargs.get("num_cpus") == 3:
            raise Exception("The current node timed out during startup. This could happen ...")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(ray, "shutdown", lambda: calls.append("shutdown"))
    monkeypatch.setattr(ray, "cluster_resources", lambda: {"CPU": 2.0})
    assert distributed.connect("local", 2) == 2
    assert [c if c == "shutdown" else c["num_cpus"] for c in calls] == [2, "shutdown", 2]
    calls.clear()
    with pytest.raises(Exception, match="timed out during startup"):
        distributed.connect("local", 3)  # missed twice: Ray's own error
    assert len(calls) == 3

    def refused(**kwargs):
        calls.append(kwargs)
        raise RuntimeError("something else")

    calls.clear()
    monkeypatch.setattr(ray, "init", refused)
    with pytest.raises(RuntimeError, match="something else"):
        distributed.connect("local", 2)  # not tried again
    assert len(calls) == 1


def test_ctrl_c_on_ray_keeps_the_finished_deals_in_order(tmp_path):
    """Ctrl-C as a terminal sends it (SIGINT to the whole process group: the CLI, its local Ray
    and Ray's workers) once the progress bar shows games done: exit 130, one line saying how to
    resume, and the partial file holds whole deals, in order, the games a local run plays.
    In a process of its own: a signal inside the pytest worker that Ray's threads share once
    ended that worker. First in the module, before the module's cluster starts: its Ray then
    starts alone (with the module's cluster up, under load, its node once missed Ray's fixed
    30 s start-up wait). One hand a game: deals, chunks and their order as in whole games, in
    a fraction of the play; 2,560 games, so that the Ctrl-C comes well before the end."""
    specs, games = ["greedy", "shaper", "greedy", "shaper"], 2560
    common = ["tournament", "--agents", *specs, "--engine", "single", "--seed", "9"]
    common += ["--episode", "hand"]
    part = tmp_path / "part"
    proc = subprocess.Popen(
        [
            sys.executable,
            "evaluate.py",
            *common,
            "--games",
            str(games),
            "--ray",
            "--workers",
            "2",
            "--out",
            str(part),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        shown = ""
        # Read the bar as it is drawn. It counts games as they arrive, in any order; the file
        # keeps the deals finished in order. Chunks are 8 deals (32 games) and at most 6 are in
        # flight or waiting for an earlier one, so past 192 games the first chunk is kept.
        while True:
            char = proc.stderr.read(1)
            if not char:
                pytest.fail(f"the tournament ended before Ctrl-C: {shown[-300:]!r}")
            shown += char
            counts = [int(n) for n in re.findall(rf"(\d+)/{games}", shown)]
            if counts and 6 * 32 < counts[-1] < games * 3 // 4:
                break
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "interrupted" in err and "--resume" in err
    saved = json.loads((part / "tournament.json").read_text())
    records = saved["game_records"]
    assert saved["partial"] is True and 0 < len(records) < games and len(records) % 4 == 0
    # Game (d, r) does not depend on the tournament's size: the local games of the first deals.
    # In this process (no Ray is up in it yet): the Ctrl-C above is what needs the real script;
    # a local run of evaluate.py itself is tests/test_cli_safety.py's.
    whole = tmp_path / "whole"
    argv = [*common, "--games", str(len(records)), "--out", str(whole), "--no-progress"]
    assert evaluate.main(argv) == 0
    assert records == json.loads((whole / "tournament.json").read_text())["game_records"]


def cli_files(tmp_path: Path, name: str, args: list[str], files: list[str]) -> dict[str, bytes]:
    out = tmp_path / name
    assert evaluate.main([*args, "--out", str(out), "--no-progress"]) == 0
    return {f: (out / f).read_bytes() for f in files}


@pytest.mark.parametrize(
    ("args", "files"),
    [
        (
            [
                "tournament",
                "--agents",
                "greedy",
                "random",
                "greedy",
                "random",
                "--games",
                "96",
                "--seed",
                "3",
            ],
            ["tournament.json", "games.csv", "agents.csv"],
        ),
        (
            [
                "seating",
                "--agent",
                "greedy",
                "--players",
                "2",
                "3",
                "--games",
                "30",
                "--start-rule",
                "rotate",
                "winner",
                "--seed",
                "4",
            ],
            ["seating.json", "seating.csv"],
        ),
        (
            [
                "thresholds",
                "--agents",
                "greedy",
                "shaper",
                "--thresholds",
                "5",
                "10",
                "--games",
                "24",
                "--seed",
                "5",
            ],
            ["thresholds.json", "thresholds.csv"],
        ),
        (
            [
                "leaderboard",
                "--agents",
                "greedy",
                "random",
                "shaper",
                "--players",
                "2",
                "--games",
                "8",
                "--seed",
                "6",
            ],
            ["leaderboard.json", "leaderboard.csv"],
        ),
    ],
    ids=["tournament", "seating", "thresholds", "leaderboard"],
)
def test_a_study_on_ray_writes_the_bytes_of_one_local_worker(cluster, tmp_path, args, files):
    local = cli_files(tmp_path, "local", [*args, "--workers", "1"], files)
    # --ray alone: a local Ray; this process is already connected to the test cluster.
    on_ray = cli_files(tmp_path, "ray", [*args, "--ray"], files)
    assert local == on_ray
    assert all(local.values())


def _kill_a_running_task(killed: list[int], stop: threading.Event) -> None:
    """SIGKILL the first Ray worker seen running a task (titled ``ray::run_task``)."""
    while not stop.is_set():
        for proc in psutil.process_iter(["cmdline"]):
            if (proc.info["cmdline"] or [""])[0] == "ray::run_task":
                os.kill(proc.pid, signal.SIGKILL)
                killed.append(proc.pid)
                return
        time.sleep(0.005)


def test_a_worker_killed_mid_tournament_has_its_chunk_played_again(cluster):
    specs, config = ["greedy", "shaper", "greedy", "shaper"], Config(players=4)
    local = play_tournament(specs, config, 40, seed=8, engine="single", progress=False)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_a_running_task, args=(killed, stop), daemon=True)
    killer.start()
    try:
        on_ray = play_tournament(
            specs, config, 40, seed=8, engine="single", progress=False, ray="local"
        )
    finally:
        stop.set()
        killer.join()
    assert len(killed) == 1  # one worker died in the middle of a task
    assert on_ray == local


DOOMED = """
import time

import numpy as np


class Agent:
    \"\"\"The lowest legal action, except in the game seeded DOOMED: there it fails as MODE says
    (the same game whatever process plays it).\"\"\"

    def reset(self, seat, seed):
        self.doomed = seed == DOOMED

    def act(self, observation, mask):
        if self.doomed and MODE == "raise":
            raise RuntimeError("the agent broke")
        if self.doomed:
            time.sleep(10**6)
        return int(np.flatnonzero(mask)[0])
"""


@pytest.mark.parametrize("mode", ["raise", "hang"])
def test_a_player_failing_on_ray_is_the_one_line_and_the_games_of_a_local_run(
    cluster, tmp_path, capfd, mode
):
    """An agent that raises (or hangs past the decision limit) in deal 13 on a Ray worker:
    the tournament stops with the line a local run gives, keeping the same deals 0-12 (those
    of the chunks before it and its own chunk's finished ones), and Ray logs nothing."""
    from odin_lab.evaluation import failures
    from odin_lab.evaluation.tournament import PlayerFailed, agent_seed

    doomed = agent_seed(0, 13, 1, 1)  # the bad agent sits in seat 1 in rotation 1
    (tmp_path / "bad.py").write_text(f"DOOMED = {doomed}\nMODE = {mode!r}\n{DOOMED}")
    specs, config = [f"{tmp_path}/bad.py:Agent", "greedy"], Config(players=2)
    stops = []
    failures.set_decision_limit(1)
    try:
        for ray_ in (None, "local"):  # 20 deals in chunks of 8: 13 is in the second
            with pytest.raises(PlayerFailed) as stop:
                play_tournament(specs, config, 20, engine="single", progress=False, ray=ray_)
            stops.append(stop.value)
    finally:
        failures.set_decision_limit(failures.DECISION_LIMIT_S)
    local, on_ray = stops
    did = "raised RuntimeError: the agent broke" if mode == "raise" else "took over 1 s"
    assert str(on_ray.failure) == str(local.failure)
    assert "in seat 1 of deal 13 rotation 1 " + did in str(on_ray.failure)
    assert on_ray.deals_done == local.deals_done == 13 and on_ray.records == local.records
    assert "Unhandled error" not in capfd.readouterr().err


def _tensors(path: Path) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(str(path))


def test_merged_rollouts_keep_each_actors_advantages():
    """Actor k's rows follow actor k-1's; each ``next_index`` link is shifted with them, so GAE
    over the merged rollout gives every actor's own advantages."""
    from odin_lab.training.actors import merge_rollouts

    rng = np.random.default_rng(0)

    def rollout(n: int) -> Rollout:
        nxt = np.array([r + 1 + int(rng.integers(3)) for r in range(n)])
        nxt[nxt >= n] = -1
        nxt[rng.random(n) < 0.2] = -1
        terminal = (nxt == -1) & (rng.random(n) < 0.5)
        rewards, values = rng.normal(size=n).astype(np.float32), rng.normal(size=n)
        next_values = rng.normal(size=n).astype(np.float32)
        adv, ret = gae(rewards, values, next_values, terminal, nxt, 0.99, 0.95)
        return Rollout(
            obs=rng.random((n, 3), dtype=np.float32),
            masks=np.ones((n, 4), np.int8),
            actions=np.zeros(n, np.int64),
            values=values.astype(np.float32),
            log_probs=np.zeros(n, np.float32),
            rewards=rewards,
            terminal=terminal,
            next_values=next_values,
            next_index=nxt,
            advantages=adv,
            returns=ret,
            game=rng.integers(0, 5, n),
            seat=np.zeros(n, np.int64),
            episode=np.zeros(n, np.int64),
            collected=n,
            carried=1,
        )

    parts = [rollout(40), rollout(25), rollout(31)]
    merged = merge_rollouts(parts, batch=5)
    again, _ = gae(merged.rewards, merged.values, merged.next_values, merged.terminal,
                   merged.next_index, 0.99, 0.95)  # fmt: skip
    assert len(merged) == 96 and merged.collected == 96 and merged.carried == 3
    np.testing.assert_allclose(again, merged.advantages, rtol=1e-5, atol=1e-5)
    assert merged.game[40:65].min() >= 5 and merged.game[65:].min() >= 10


def test_actors_without_ray_and_the_bare_ray_flag():
    with pytest.raises(ValueError, match="actors run on Ray"):
        TrainConfig(actors=2).check()
    assert train.parse(["--ray"]).ray == "local"
    assert train.parse(["--ray", "10.0.0.1:6379"]).ray == "10.0.0.1:6379"


EVALUATE = ["evaluate.py", "tournament", "--agents", "random", "random", "--games", "4"]
TRAIN = ["train.py", "--algo", "ppo", "--name", "r", "--actors", "2", "--total-steps", "10"]


@pytest.mark.parametrize(
    ("argv", "installed", "words"),
    [
        ([*EVALUATE, "--ray"], False, ["pip install -e '.[ray]'"]),
        ([*TRAIN, "--ray"], False, ["pip install -e '.[ray]'"]),
        ([*EVALUATE, "--ray", "127.0.0.1:1"], True, ["--ray 127.0.0.1:1", "ray start --head"]),
        ([*TRAIN, "--ray", "127.0.0.1:1"], True, ["--ray 127.0.0.1:1", "ray start --head"]),
    ],
    ids=["evaluate-no-ray", "train-no-ray", "evaluate-no-cluster", "train-no-cluster"],
)
def test_ray_that_cannot_be_used_is_one_line_and_nothing_written(
    tmp_path, capfd, monkeypatch, argv, installed, words
):
    """Without Ray: in a process of its own, where nothing imported Ray before the command did
    (as if not installed). No cluster at the address: in this process, as if it were not
    connected to the module's cluster (a connected process keeps its cluster, whatever the
    address); tests/test_dmc_ray.py does the same for DMC."""
    script, *args = argv
    out = (
        ["--out", str(tmp_path / "out")]
        if script == "evaluate.py"
        else ["--runs-dir", str(tmp_path / "runs")]
    )
    if installed:
        monkeypatch.setattr(ray, "is_initialized", lambda: False)
        command = evaluate if script == "evaluate.py" else train
        capfd.readouterr()
        code, err = command.main([*args, *out]), capfd.readouterr().err
    else:
        done = subprocess.run(
            [
                sys.executable,
                "-c",
                "import sys; sys.modules['ray'] = None\n"  # as if not installed
                f"import sys, {script[:-3]} as cli; sys.exit(cli.main(sys.argv[1:]))",
                *args,
                *out,
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )
        code, err = done.returncode, done.stderr
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and all(w in lines[0] for w in words), err
    assert not any(tmp_path.iterdir())  # nothing written


# The search's labels on Ray (issue 58): expert iteration's searches and the labels of
# odin_lab.training.labels as Ray tasks, the same as one process; the cache resumed on Ray.


def _same_scores(found, want) -> bool:
    return len(found) == len(want) and all(
        np.array_equal(a.actions, b.actions)
        and np.array_equal(a.win, b.win)
        and np.array_equal(a.penalty, b.penalty)
        and a.worlds == b.worlds
        for a, b in zip(found, want, strict=True)
    )


def test_labels_on_ray_are_the_local_ones_and_a_run_resumes_from_their_cache(
    cluster, tmp_path, monkeypatch
):
    """The searches of ten decisions as Ray tasks (two decisions a task) are those of one
    process; with a cache of four decisions a file, the tasks of every file go out in one
    stream, each file is written as soon as its last search arrives, and a run that lost a file
    searches only that file's decisions again."""
    from odin_lab.training import labels, searches

    specs = ["greedy", "random", "shaper"]
    decisions = labels.game_decisions(specs, 10, 7, top=0, playout="greedy", rollouts=4, workers=1)
    local = labels.relabel(decisions, "greedy", 8, seed=5, workers=1)
    monkeypatch.setattr(labels, "PART", 2)
    monkeypatch.setattr(labels, "CACHE_PART", 4)
    searched, files_seen, maps = [], [], []

    class Watched(searches.Searches):
        """Notes each map (where, how many tasks), the rows sent to be searched, and the cache's
        files as each result arrives."""

        def map(self, fn, tasks):
            tasks = list(tasks)
            maps.append((self.ray, len(tasks)))
            searched.extend(row for _, _, rows in tasks for row in rows)
            for scores in super().map(fn, tasks):
                files_seen.append(sorted(p.name for p in tmp_path.iterdir()))
                yield scores

    monkeypatch.setattr(labels, "Searches", Watched)
    on_ray = labels.relabel(decisions, "greedy", 8, seed=5, workers=2, cache=tmp_path, ray="local")
    assert _same_scores(on_ray, local) and len(searched) == 10
    assert maps == [("local", 5)]  # on Ray, every file's tasks in one stream
    # Results 0-1 fill the first file: it is there when result 2 arrives, the second is not.
    assert files_seen[2] == ["part-000000.npz"]
    assert sorted(p.name for p in tmp_path.iterdir())[-1] == "part-000002.npz"

    (tmp_path / "part-000001.npz").unlink()  # as if the run had stopped within it
    searched.clear()
    again = labels.relabel(decisions, "greedy", 8, seed=5, workers=2, cache=tmp_path, ray="local")
    assert _same_scores(again, local) and maps[-1] == ("local", 2)
    assert [obs.tobytes() for obs, _, _ in searched] == [o.tobytes() for o, _, _ in decisions[4:8]]


def test_expert_iteration_searches_on_ray_make_the_run_of_one_process(
    cluster, tmp_path, monkeypatch
):
    """``--algo exit --ray``: each batch's searches as Ray tasks over the cluster's CPUs; the
    checkpoint (weights, optimizer, replay) is byte for byte that of one process."""
    from odin_lab.training import searches

    batches = []

    def counted(fn, tasks, window):
        batches.append(window)
        return distributed.map_ordered(fn, tasks, window=window)

    monkeypatch.setattr(searches, "map_ordered", counted)
    settings = dict(
        opponents=["random", "greedy"],
        selfplay_batch=4,
        decisions_per_update=16,
        rollouts=16,
        top=2,
        replay=64,
        net=[32, 16],
        batch_size=32,
        eval_every=0,
        game=Config(players=3, threshold=5),
        total_steps=32,
    )
    one, on_ray = (
        _tensors(
            train_run(make_config("exit", name=name, runs_dir=str(tmp_path), **over, **settings))
        )
        for name, over in (("one", {}), ("ray", {"ray": "local"}))
    )
    assert sorted(one) == sorted(on_ray) and any(k.startswith("replay/") for k in one)
    assert all(np.array_equal(one[k], on_ray[k]) for k in one)
    assert len(batches) >= 2 and set(batches) == {6}  # on Ray: 2 CPUs, 6 tasks in flight
    with pytest.raises(ValueError, match="leave actors at 1"):
        make_config("exit", ray="local", actors=2).check()


# Training rollouts on Ray actors, after the tests of Ray tasks: starting actors stops the idle
# task workers (an actor never runs in a worker that ran tasks), so the tests of tasks above
# share two workers that have already loaded the lab, and the actors start once they are done.


def _train_config(runs: Path, name: str, total: int) -> TrainConfig:
    return make_config(
        "ppo",
        name=name,
        runs_dir=str(runs),
        game=Config(players=4),
        opponents=["greedy", "self"],
        ray="local",
        actors=2,
        selfplay_batch=16,
        n_steps=64,
        n_envs=1,
        batch_size=64,
        n_epochs=1,
        total_steps=total,
        eval_every=0,
        snapshot_every=128,
        checkpoint_every=10**6,
        net_pi=[32],
        net_vf=[32],
        seed=7,
    )


def test_two_actors_train_reproducibly_and_the_run_resumes(cluster, tmp_path):
    from odin_lab.training import train as train_run
    from odin_lab.training.checkpoints import checkpoint_step

    first = train_run(_train_config(tmp_path, "a", 300))
    second = train_run(_train_config(tmp_path, "b", 300))
    a, b = _tensors(first), _tensors(second)
    assert checkpoint_step(first) >= 300 and sorted(a) == sorted(b)
    assert any(k.startswith("snapshot/") for k in a)  # the actors played the snapshots too
    assert all(np.array_equal(a[k], b[k]) for k in a)
    saved = json.loads((tmp_path / "a" / "config.json").read_text())
    assert (saved["ray"], saved["actors"]) == ("local", 2)

    resumed = train_run(_train_config(tmp_path, "a", 600), resume=True)
    assert checkpoint_step(resumed) >= 600
    after = _tensors(resumed)
    assert not np.array_equal(after["policy/action_net.weight"], a["policy/action_net.weight"])
