"""``research/win_chance.py``: how well the search's win chance foretells the winner, from
self-play positions; the same figures for the same seed, and bad input in one line."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import research_file

from odin_env.rules import Config

win_chance_study = research_file.load("win_chance")


def test_positions_are_the_totals_between_hands_paired_with_the_games_win():
    totals, shares, number = win_chance_study.play("planner", Config(players=3), 60, seed=2)
    assert totals.shape == shares.shape and totals.shape[1] == 3
    assert (totals.max(axis=1) < Config().threshold).all()  # no game had ended yet
    np.testing.assert_allclose(shares.sum(axis=1), 1.0)
    assert set(np.unique(number)) <= set(range(60)) and len(np.unique(number)) > 30
    for game in np.unique(number):  # one game's positions: its totals only grow
        mine = totals[number == game]
        assert (np.diff(mine, axis=0) >= 0).all() and (
            shares[number == game] == shares[number == game][0]
        ).all()


def test_log_loss_by_hand():
    loss = win_chance_study.log_loss(np.array([0.5, 0.9]), np.array([1.0, 0.0]))
    assert loss == pytest.approx((math.log(2) + math.log(10)) / 2)


def test_the_report_is_the_same_for_the_same_seed_and_beats_parity(tmp_path):
    reports = []
    for name in ("a", "b"):
        out = tmp_path / name
        assert (
            win_chance_study.main(
                ["--players", "2", "4", "--games", "300", "--seed", "4", "--out", str(out)]
            )
            == 0
        )
        assert (out / "win_chance.png").stat().st_size > 0
        reports.append(json.loads((out / "win_chance.json").read_text()))
    assert reports[0]["rows"] == reports[1]["rows"]
    assert reports[0]["command"].startswith("python research/win_chance.py --players 2 4")
    assert [row["players"] for row in reports[0]["rows"]] == [2, 4]
    for row in reports[0]["rows"]:
        # The totals say something about the winner.
        assert row["log_loss_estimate"] < row["log_loss_parity"]
    curve = reports[0]["reliability"]
    assert {r["players"] for r in curve} == {2, 4}
    assert all(0.0 <= r["share_won"] <= 1.0 and r["seat_positions"] >= 50 for r in curve)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--players", "7"], "--players must be table sizes 2-6"),
        (["--agent", "search"], "--agent must be an agent with a batched form"),
        (["--games", "1"], "--games must be >= 2"),
        (["--agent", "nobody"], "--agent: unknown agent spec 'nobody'"),
        (["--agent", "dmc:nowhere.safetensors"], "--agent: no DMC model at nowhere.safetensors"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, named, tmp_path, capsys):
    with pytest.raises(SystemExit) as stopped:
        win_chance_study.main([*args, "--out", str(tmp_path / "x")])
    assert stopped.value.code == 2
    assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "x").exists()
