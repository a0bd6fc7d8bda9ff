"""``evaluate.py compare``: two agents in one seat on the same games, their win shares and the
paired difference deal by deal, as an oracle of separate games finds them; a resumed compare
reads the halves already written; bad input in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agents import make
from odin_env.rules import Config
from odin_lab.commands.evaluate import main
from odin_lab.evaluation import compare as compare_module
from odin_lab.evaluation import studies
from odin_lab.evaluation.stats import seat_shares
from odin_lab.evaluation.tournament import play_deals

ARGS = ["compare", "--agents", "greedy", "random", "--against", "shaper", "shaper",
        "--games", "30", "--seed", "5", "--threshold", "5", "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def done(tmp_path_factory):
    out = tmp_path_factory.mktemp("compare") / "out"
    assert main([*ARGS, "--out", str(out)]) == 0
    return out, json.loads((out / "compare.json").read_text())


def test_the_paired_difference_is_that_of_the_same_games_played_apart(done):
    """The oracle plays each agent's table on its own (``play_deals``, the same seed and deals):
    each deal's share of the compared seat over its rotations, their means, and the mean and
    standard error of the differences, deal by deal."""
    _, found = done
    config = Config(players=3, threshold=5)
    per_deal = []
    for spec in ("greedy", "random"):
        table = [make(spec), make("shaper"), make("shaper")]
        games = play_deals(table, config, 10, seed=5)
        shares = np.zeros(10)
        for record in games:
            shares[record.deal] += seat_shares(record)[record.agents.index(0)] / 3
        per_deal.append(shares)
    difference = per_deal[1] - per_deal[0]
    assert found["deals"] == 10 and found["games"] == 30
    assert found["win"] == pytest.approx([per_deal[0].mean(), per_deal[1].mean()])
    assert found["difference"] == pytest.approx(difference.mean())
    assert found["difference_se"] == pytest.approx(difference.std(ddof=1) / np.sqrt(10))
    assert found["win"][0] > found["win"][1]  # greedy beats random in that seat


def test_the_halves_are_tournaments_and_a_resume_reads_those_written(done, tmp_path, monkeypatch):
    out, found = done
    for half, spec in zip(compare_module.HALVES, ("greedy", "random"), strict=True):
        kept = json.loads((out / half / "tournament.json").read_text())
        assert kept["agents_specs"] == [spec, "shaper", "shaper"] and "partial" not in kept
    again = tmp_path / "out"
    (again / "first").mkdir(parents=True)
    for name in ("tournament.json",):
        (again / "first" / name).write_bytes((out / "first" / name).read_bytes())
    played = []
    real = studies.tournament

    def counted(specs, *args, **kwargs):
        played.append(list(specs))
        return real(specs, *args, **kwargs)

    monkeypatch.setattr(compare_module, "tournament", counted)
    assert main([*ARGS, "--out", str(again), "--resume"]) == 0
    assert played == [["random", "shaper", "shaper"]]  # the first half was read, not played
    assert json.loads((again / "compare.json").read_text()) == found


def test_a_resume_refuses_a_half_of_other_settings(done, tmp_path, capsys):
    """A whole tournament of another table where a half should be is not paired: one line, exit
    2, no comparison written."""
    out, _ = done
    again = tmp_path / "out"
    (again / "second").mkdir(parents=True)
    kept = (out / "first" / "tournament.json").read_bytes()  # greedy's table, not random's
    (again / "second" / "tournament.json").write_bytes(kept)
    (again / "first").mkdir()
    (again / "first" / "tournament.json").write_bytes(kept)
    assert main([*ARGS, "--out", str(again), "--resume"]) == 2
    assert "holds a tournament of other agents" in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (again / "compare.json").exists()


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--agents", "greedy"], "--agents: expected 2 arguments"),
        (["--players", "4"], "3 agents for 4 players"),
        (["--against", "shaper", "nobody"], "nobody"),
        (["--games", "0"], "--games must be 1-"),
        (["--engine", "batched", "--against", "shaper", "search:4"], "--engine batched needs"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args, named, tmp_path, capsys):
    argv = [*ARGS, *args, "--out", str(tmp_path / "out")]
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own refusals
        code = stop.code
    assert code == 2
    assert named in capsys.readouterr().err.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()
