"""``research/layout_inference.py``: its placement score is 1 for the true layout and less for
any other, the same seed gives the same figures, and bad input is refused in one line."""

from __future__ import annotations

import json

import numpy as np
import pytest
import research_file

layout_inference = research_file.load("layout_inference")


def test_placement_is_one_for_the_truth_and_counts_the_hidden_cards_put_right() -> None:
    truth = np.array([0b111, 0b111000, 0b111000000], dtype=np.int64)
    known = np.array([0, 0b1000, 0], dtype=np.int64)  # one card of slot 1 is public
    swapped = np.array([0b111, 0b1011000, 0b110100000], dtype=np.int64)  # cards 5 and 6 swapped
    scores = layout_inference.placement(np.stack([truth, swapped]), truth, known)
    assert scores[0] == 1.0
    assert scores[1] == pytest.approx(3 / 5)  # of the five hidden cards, three are in place


def test_the_same_seed_gives_the_same_figures_and_the_json_says_how(tmp_path) -> None:
    args = ["--deals", "1", "--players", "3", "--particles", "32", "--worlds", "16",
            "--seed", "3", "--sampler", "post"]  # fmt: skip
    rows = []
    for run in ("a", "b"):
        assert layout_inference.main([*args, "--out", str(tmp_path / run)]) == 0
        rows.append(json.loads((tmp_path / run / "layout_inference.json").read_text()))
    first, second = rows
    assert first["command"].startswith("python research/layout_inference.py --deals 1")
    del first["command"], second["command"]
    assert first == second
    assert first["decisions"] > 10 and 0 < first["uniform"] < 1
    assert [row["age"] for row in first["by_age"]] == ["0", "1", "2", "3+"]
    assert sum(row["decisions"] for row in first["by_age"]) >= first["decisions"]
    assert first["settings"]["sampler"] == "post"


@pytest.mark.parametrize(
    "bad,message",
    [(["--model", "search:8"], "--model must be an agent with a batched form"),
     (["--opponent", "nobody"], "unknown agent spec"),
     (["--players", "7"], "--players must be a table size 2-6"),
     (["--deals", "0"], "--deals must be >= 1"),
     (["--sampler", "post", "--rounds", "-1"], "--rounds must be >= 0"),
     (["--sampler", "track"], "invalid choice: 'track'")],
)  # fmt: skip
def test_bad_input_is_refused_in_one_line(bad, message, tmp_path, capsys) -> None:
    with pytest.raises(SystemExit) as stop:
        layout_inference.main([*bad, "--out", str(tmp_path)])
    assert stop.value.code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "layout_inference.json").exists()
