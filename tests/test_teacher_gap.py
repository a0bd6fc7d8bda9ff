"""``research/teacher_gap.py``: a run's kept decisions searched again with an independent seed,
and each chooser's regret among the candidates under those fresh labels; the same figures on
any worker count, and bad input in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import research_file

from agents.search import score_candidates
from odin_env.rules import Config
from odin_env.seeding import spawn_seed
from odin_env.spec import NUM_ACTIONS
from odin_lab.training import make_config, train
from odin_lab.training.labels import relabel

teacher_gap = research_file.load("teacher_gap")

SMALL = dict(
    opponents=["random", "greedy"],
    selfplay_batch=4,
    decisions_per_update=16,
    rollouts=16,
    net=[32, 16],
    batch_size=32,
    eval_every=0,
    game=Config(players=3, threshold=5),
)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    config = make_config(
        "exit", name="taught", runs_dir=str(runs), total_steps=48, replay=64, **SMALL
    )
    train(config)
    return runs / "taught"


class Lowest:
    """Chooses the lowest candidate it is given: a player whose picks the test knows."""

    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[0])


class Highest:
    def act(self, observation, action_mask):
        return int(np.flatnonzero(action_mask)[-1])


def test_regrets_are_the_fresh_searchs_losses_of_each_pick(run):
    _, decisions = teacher_gap.kept_decisions(run, 6)
    assert len(decisions) == 6 and all(len(c) > 1 for _, c, _ in decisions)
    fresh = relabel(decisions, "planner", 16, seed=3, workers=1)
    picks = teacher_gap.choices(decisions, {"lowest": Lowest(), "highest": Highest()})
    sizes = np.array([3, 4, 3, 4, 3, 3])  # table sizes as the caller reads them
    candidates = [c for _, c, _ in decisions]
    listed, grouped = teacher_gap.regrets(fresh, candidates, picks, {"players": sizes})
    rows = {row["chooser"]: row for row in listed}
    want = {"lowest": [], "highest": [], "labels": [], "random": []}
    for k, (obs, candidates, labels) in enumerate(decisions):
        mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
        mask[candidates] = 1
        # The oracle: the search of this decision at its documented seed, by action.
        scores = score_candidates(obs, mask, rollouts=16, seed=spawn_seed(3, k), policy="planner")
        penalty = {int(a): p for a, p in zip(scores.actions, scores.penalty)}
        best = min(penalty.values())
        want["lowest"].append(penalty[int(candidates.min())] - best)
        want["highest"].append(penalty[int(candidates.max())] - best)
        want["labels"].append(penalty[int(candidates[np.argmax(labels)])] - best)
        want["random"].append(np.mean([penalty[int(a)] - best for a in candidates]))
    for name, values in want.items():
        assert rows[name]["regret"] == pytest.approx(np.mean(values))
    assert rows["lowest"]["minus_labels"] == pytest.approx(
        np.mean(want["lowest"]) - np.mean(want["labels"])
    )
    assert rows["highest"]["minus_first"] == pytest.approx(
        np.mean(want["highest"]) - np.mean(want["lowest"])
    )
    assert "minus_first" not in rows["lowest"] and "minus_labels" not in rows["labels"]
    at_four = [r for r in grouped["by_players"] if r["chooser"] == "lowest" and r["players"] == 4]
    assert at_four[0]["decisions"] == 2
    assert at_four[0]["regret"] == pytest.approx(np.mean(np.array(want["lowest"])[sizes == 4]))
    assert rows["labels"]["share_agreeing"] == 1.0
    assert all(rows[n]["regret_chance"] >= 0 for n in rows)


def test_the_report_is_the_same_on_any_worker_count(run, tmp_path):
    reports = []
    network = f"dmc:{run / 'checkpoint.safetensors'}"
    for workers in (1, 2):
        out = tmp_path / str(workers)
        argv = [
            "--run",
            str(run),
            "--decisions",
            "8",
            "--seed",
            "5",
            "--workers",
            str(workers),
            "--players",
            network,
            "--out",
            str(out),
        ]
        assert teacher_gap.main(argv) == 0
        assert (out / "teacher_gap.png").stat().st_size > 0
        reports.append(json.loads((out / "teacher_gap.json").read_text()))
    assert reports[0]["rows"] == reports[1]["rows"]
    assert reports[0]["settings"]["decisions"] == 8 and reports[0]["settings"]["rollouts"] == 16
    assert {r["players"] for r in reports[0]["by_players"]} == {3}
    kinds = {r["kind"]: r["decisions"] for r in reports[0]["by_kind"] if r["chooser"] == "labels"}
    assert sum(kinds.values()) == 8 and set(kinds) <= {"lead", "follow", "follow or pass", "take"}


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--run", "RUN", "--decisions", "0"], "--decisions must be >= 1"),
        (["--run", "RUN", "--workers", "0"], "--workers must be 1-64"),
        (["--run", "RUN", "--players", "nobody"], "--players nobody: unknown agent spec 'nobody'"),
        (["--run", "RUN", "--players", "random"], "--players random: the report's 'random' row"),
        (["--run", "RUN", "--players", "PASSER"], "chose action 3579, not one of the candidates"),
        (["--run", "RUN", "--top", "2"], "--top: a run's searches are its own"),
        (["--games", "greedy"], "--games names one player a seat, 2-6 of them; got 1"),
        (["--games", "greedy", "nobody"], "--games nobody: unknown agent spec 'nobody'"),
        (["--games", "dmc:no.safetensors", "greedy"], "--games: no DMC model at no.safetensors"),
        (["--games", "greedy", "greedy", "--playout", "dmc"], "--playout must be one of greedy"),
        (["--games", "greedy", "greedy", "--rollouts", "0"], "--rollouts must be 1-100,000"),
        (["--games", "greedy", "greedy", "--top", "-1"], "--top must be >= 0"),
        (["--run", "RUN", "--games", "greedy"], "not allowed with argument --run"),
        (["--games", "greedy", "greedy", "--ray", "127.0.0.1:1"], "--ray 127.0.0.1:1: no Ray"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run, args, named, tmp_path, capsys):
    passer = tmp_path / "passer.py"  # an outside player that passes whatever its mask says
    passer.write_text("class Passer:\n    def act(self, observation, mask):\n        return 3579\n")
    given = {"PASSER": f"{passer}:Passer", "RUN": str(run)}
    args = [given.get(a, a) for a in args]
    with pytest.raises(SystemExit) as stopped:
        teacher_gap.main([*args, "--out", str(tmp_path / "x")])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "x").exists()


def test_a_run_not_of_expert_iteration_or_labelled_by_a_network_is_refused(run, tmp_path, capsys):
    config = json.loads((run / "config.json").read_text())
    other = tmp_path / "other"
    other.mkdir()
    for name, change, named in (
        ("algo", "dmc", "--run must be an expert-iteration run"),
        ("playout", "learner", "the learner's network"),
    ):
        if name == "algo":  # a DMC run's settings, with DMC's defaults
            changed = {k: v for k, v in config.items() if k != "exit"} | {"algo": change}
        else:
            changed = config | {"exit": {**config["exit"], name: change}}
        (other / "config.json").write_text(json.dumps(changed))
        with pytest.raises(SystemExit):
            teacher_gap.main(["--run", str(other), "--out", str(tmp_path / "x")])
        assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "x").exists()
