"""``research/teacher_fit.py``: a student fitted on the search's labels of some decisions and
scored, by a fresh search, on decisions it never saw; the losses teach what they say; the same
report on any worker count; bad input in one line."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest
import research_file
import torch as th

from agents.dmc import BUNDLED_DMC, BUNDLED_DMC_ONE, DMCAgent
from agents.search import score_candidates
from odin_env.seeding import spawn_seed
from odin_lab.training.labels import candidate_mask, game_decisions

teacher_fit = research_file.load("teacher_fit")

SMALL = [
    "--games",
    "dmc:" + str(BUNDLED_DMC_ONE),
    "greedy",
    "random",
    "--rollouts",
    "8",
    "--playout",
    "greedy",
    "--top",
    "3",
    "--seed",
    "11",
]


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("fit")
    argv = [
        *SMALL,
        "--decisions",
        "40",
        "--held-out",
        "12",
        "--epochs",
        "12",
        "--learning-rate",
        "0.003",
        "--batch-size",
        "8",
        "--out",
        str(out / "one"),
        "--save",
        str(out / "fitted.safetensors"),
    ]
    assert teacher_fit.main(argv) == 0
    return out, json.loads((out / "one" / "teacher_fit.json").read_text())


def test_the_student_fits_its_labels_and_is_scored_by_a_fresh_search(report):
    """Epoch 0 is the student as given: its held-out regret is redone by the oracle (the fresh
    search of held-out decision ``k`` at ``spawn_seed(spawn_seed(seed, 1), k)``, the student's
    pick among the candidates); fitting makes it pick as its training labels do more often."""
    out, found = report
    epochs = found["epochs"]
    assert [row["epoch"] for row in epochs] == list(range(13))
    assert found["settings"]["student"] == "agents/models/dmc_one.safetensors"  # no machine path
    assert epochs[-1]["share_as_labels"] > epochs[0]["share_as_labels"] + 0.1
    held_seed = spawn_seed(11, 1)
    held = game_decisions(
        ["dmc:" + str(BUNDLED_DMC_ONE), "greedy", "random"],
        12,
        held_seed,
        top=3,
        playout="greedy",
        rollouts=8,
        workers=1,
    )
    student = DMCAgent.load(BUNDLED_DMC_ONE)
    regret, teacher = [], []
    for k, (obs, candidates, labels) in enumerate(held):
        mask = candidate_mask(candidates)
        scores = score_candidates(
            obs, mask, rollouts=8, seed=spawn_seed(held_seed, k), policy="greedy"
        )
        lost = scores.penalty - scores.penalty.min()  # in ascending action order, as candidates
        regret.append(lost[int(np.flatnonzero(candidates == student.act(obs, mask))[0])])
        teacher.append(lost[int(np.argmax(labels))])
    assert epochs[0]["regret"] == pytest.approx(np.mean(regret))
    assert found["teacher"]["regret"] == pytest.approx(np.mean(teacher))
    # Paired with the start, decision by decision.
    assert epochs[0]["minus_start"] == 0.0
    paired = np.array(teacher) - np.array(regret)
    assert found["teacher"]["minus_start"] == pytest.approx(paired.mean())
    assert found["teacher"]["minus_start_se"] == pytest.approx(
        paired.std(ddof=1) / np.sqrt(paired.size)
    )
    # The saved student is the last epoch's: it picks as that row says on the training labels.
    saved = DMCAgent.load(out / "fitted.safetensors")
    train = game_decisions(
        ["dmc:" + str(BUNDLED_DMC_ONE), "greedy", "random"],
        40,
        11,
        top=3,
        playout="greedy",
        rollouts=8,
        workers=1,
    )
    taught = np.array([int(np.argmax(labels)) for _, _, labels in train])
    assert np.mean(teacher_fit.picks(saved, train) == taught) == pytest.approx(
        epochs[-1]["share_as_labels"]
    )


def test_the_report_is_the_same_on_any_worker_count(report, tmp_path):
    _, found = report
    argv = [
        *SMALL,
        "--decisions",
        "40",
        "--held-out",
        "12",
        "--epochs",
        "12",
        "--learning-rate",
        "0.003",
        "--batch-size",
        "8",
        "--workers",
        "2",
        "--out",
        str(tmp_path),
    ]
    assert teacher_fit.main(argv) == 0
    again = json.loads((tmp_path / "teacher_fit.json").read_text())
    assert again["epochs"] == found["epochs"] and again["teacher"] == found["teacher"]


def test_labels_keeps_the_searches_for_a_later_run_of_the_same_games_and_seed(
    report, tmp_path, monkeypatch, capsys
):
    """``--labels DIR``: the report is the one without it; a second run searches nothing (its
    searches would fail) and writes the same report; a run of another seed in that folder is
    refused in one line, exit 2, and writes nothing."""
    _, found = report
    argv = [
        *SMALL,
        "--decisions",
        "40",
        "--held-out",
        "12",
        "--epochs",
        "12",
        "--learning-rate",
        "0.003",
        "--batch-size",
        "8",
        "--labels",
        str(tmp_path / "L"),
    ]
    assert teacher_fit.main([*argv, "--out", str(tmp_path / "first")]) == 0
    assert sorted(p.name for p in (tmp_path / "L").iterdir()) == ["fresh", "held", "train"]

    def no_search(task):
        raise AssertionError("searched again")

    monkeypatch.setattr("odin_lab.training.labels.search_rows", no_search)
    assert teacher_fit.main([*argv, "--out", str(tmp_path / "second")]) == 0
    for name in ("first", "second"):
        again = json.loads((tmp_path / name / "teacher_fit.json").read_text())
        assert again["epochs"] == found["epochs"] and again["teacher"] == found["teacher"]
    capsys.readouterr()
    other = [*argv[: argv.index("--seed") + 1], "12", *argv[argv.index("--seed") + 2 :]]
    with pytest.raises(SystemExit) as stopped:
        teacher_fit.main([*other, "--out", str(tmp_path / "other")])
    assert stopped.value.code == 2
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert "--labels:" in line and "holds the searches of other decisions" in line
    assert not (tmp_path / "other").exists()


def _loss(q, labels, loss, anchor=0.0, before=None):
    q, labels = th.tensor(q), th.tensor(labels)
    before = q.detach().clone() if before is None else th.tensor(before)
    group = th.tensor([0, 0, 0, 1, 1])
    settings = {"loss": loss, "tau": 0.5, "anchor": anchor}
    return float(teacher_fit._loss(q, labels, before, group, 2, settings))


def test_rank_teaches_the_order_and_gaps_within_a_decision_not_its_level():
    labels = [-1.0, -2.0, -4.0, 0.0, -1.0]
    right, shifted = [1.0, 0.0, -2.0, 3.0, 2.0], [5.0, 4.0, 2.0, -3.0, -4.0]
    wrong = [-4.0, -2.0, -1.0, -1.0, 0.0]
    assert _loss(right, labels, "rank") == pytest.approx(_loss(shifted, labels, "rank"))
    assert _loss(wrong, labels, "rank") > _loss(right, labels, "rank") + 0.5
    # mse regresses onto the labels moved to the start's mean of each decision: it is 0 there
    # and not for another level.
    before = [0.0, 0.0, 0.0, 2.0, 2.0]  # means 0 and 2
    at_level = [4 / 3, 1 / 3, -5 / 3, 2.5, 1.5]
    assert _loss(at_level, labels, "mse", before=before) == pytest.approx(0.0, abs=1e-6)
    assert _loss([v + 1 for v in at_level], labels, "mse", before=before) == pytest.approx(1.0)
    # The anchor adds its weight times the mean squared move from the start.
    assert _loss(right, labels, "rank", anchor=2.0, before=[0.0] * 5) == pytest.approx(
        _loss(right, labels, "rank") + 2.0 * np.mean(np.square(right)), rel=1e-5
    )


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--loss", "huber"], "--loss must be one of rank, mse"),
        (["--tau", "0"], "--tau must be > 0"),
        (["--learning-rate", "nan"], "--learning-rate must be > 0"),
        (["--anchor", "-1"], "--anchor must be >= 0"),
        (["--epochs", "0"], "--epochs must be 1-"),
        (["--held-out", "1"], "--held-out must be 2-"),
        (["--decisions", "0"], "--decisions must be 1-"),
        (["--workers", "0"], "--workers must be 1-"),
        (["--rollouts", "0"], "--rollouts must be 1-"),
        (["--games", "greedy"], "--games names one player a seat, 2-6"),
        (["--games", "greedy", "nobody"], "--games nobody"),
        (["--student", "no/such.safetensors"], "--student no/such.safetensors"),
        (["--student", str(BUNDLED_DMC)], "--student must be a network read once"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, named, tmp_path, capsys):
    argv = [*SMALL, "--decisions", "4", "--held-out", "2", *args, "--out", str(tmp_path / "out")]
    with pytest.raises(SystemExit) as stopped:
        teacher_fit.main(argv)
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("ray", "named"),
    [
        (["--ray"], "--ray needs Ray, an optional extra: install it with pip install -e '.[ray]'"),
        (["--ray", "127.0.0.1:1"], "--ray 127.0.0.1:1: no Ray cluster answers there"),
    ],
    ids=["no-ray", "no-cluster"],
)
def test_ray_that_cannot_be_used_is_one_line_before_any_label_is_written(
    ray, named, tmp_path, capsys, monkeypatch
):
    if ray == ["--ray"]:
        monkeypatch.setitem(sys.modules, "ray", None)  # as if the extra were not installed
    argv = [*SMALL, "--decisions", "4", "--held-out", "2", *ray, "--labels", str(tmp_path / "l")]
    with pytest.raises(SystemExit) as stopped:
        teacher_fit.main([*argv, "--out", str(tmp_path / "out")])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not any(tmp_path.iterdir())
