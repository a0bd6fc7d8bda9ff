"""Issue 24, class 5: ``tournament --resume`` trusts no kept game. The partial
``tournament.json`` is read through the bounded records reader, and every kept game must be the
tournament's game at its place and replay from its seed and actions to its recorded hands,
totals and winners; anything else is one line naming the game, exit 2, nothing rewritten."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from odin_env.rules import Config, Game
from odin_lab.commands import evaluate

ARGV = ["tournament", "--agents", "greedy", "random", "--players", "2", "--threshold", "5",
        "--games", "12", "--seed", "3", "--no-progress"]  # fmt: skip
"""A tournament of 6 deals; the partial result keeps its first 4."""
KEPT = 8


def partial(out: Path) -> dict:
    """A complete tournament in ``out`` cut back to an honest partial of its first deals, as
    Ctrl-C writes one (the summary figures are recomputed on resume, so they are left)."""
    assert evaluate.main([*ARGV, "--out", str(out)]) == 0
    data = json.loads((out / "tournament.json").read_text())
    data["game_records"] = data["game_records"][:KEPT]
    data["partial"] = True
    for name in ("tournament.png", "tournament.pdf"):
        (out / name).unlink()
    return data


def save(out: Path, data: dict) -> None:
    (out / "tournament.json").write_text(json.dumps(data))


def snapshot(out: Path) -> dict[str, bytes | str]:
    return {
        p.name: p.read_bytes() if p.is_file() else "not a regular file"
        for p in sorted(out.iterdir())
    }


def illegal_first_action(game: dict) -> int:
    """An action that is not legal at the first decision of ``game``'s replay."""
    config = Config(players=2, threshold=5)
    state = Game(config, seed=game["seed"])
    state.play_forced()
    return next(a for a in range(3634) if a not in state.legal)


def test_resume_of_an_honest_partial_result_gives_the_uninterrupted_files(tmp_path, capsys):
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    data = partial(cut)
    save(cut, data)
    assert evaluate.main([*ARGV, "--out", str(whole)]) == 0
    assert evaluate.main([*ARGV, "--out", str(cut), "--resume"]) == 0, capsys.readouterr().err
    for name in ("tournament.json", "games.csv", "agents.csv"):
        assert (cut / name).read_bytes() == (whole / name).read_bytes(), name


def _winners(d):
    g = d["game_records"][5]
    g["winners"] = [1 - g["winners"][0]] if len(g["winners"]) == 1 else [0]


def _totals(d):
    d["game_records"][2]["totals"][0] += 1


def _hands(d):
    hand = d["game_records"][1]["hands"][0]
    hand[0] = (hand[0] + 1) % 10


def _action(d):
    g = d["game_records"][3]
    g["actions"][0] = illegal_first_action(g)


def _action_dropped(d):
    d["game_records"][4]["actions"].pop()


def _seed(d):
    d["game_records"][6]["seed"] += 1


def _seats(d):
    g = d["game_records"][0]
    g["agents"] = g["agents"][::-1]


def _deal_order(d):
    games = d["game_records"]
    games[2], games[4] = games[4], games[2]


def _winners_and_totals_together(d):
    g = d["game_records"][7]
    loser = next(s for s in range(2) if s not in g["winners"])
    g["winners"], g["totals"][loser] = [*g["winners"], loser], min(g["totals"])


def _spec(d):
    d["agents_specs"] = ["greedy", "planner"]


def _unfinished(d):
    d["game_records"][0]["winners"] = []


CORRUPTIONS = {
    "edited winners": (_winners, "game_records[5]"),
    "edited totals": (_totals, "game_records[2]"),
    "edited hand penalties": (_hands, "game_records[1]"),
    "an illegal action": (_action, "game_records[3]"),
    "an action dropped": (_action_dropped, "game_records[4]"),
    "an edited seed": (_seed, "game_records[6]"),
    "swapped seats": (_seats, "game_records[0]"),
    "games out of order": (_deal_order, "game_records[2]"),
    "a draw made up": (_winners_and_totals_together, "game_records[7]"),
    "another spec": (_spec, "agents_specs"),
    "a game marked unfinished": (_unfinished, "game_records[0]"),
}


@pytest.mark.parametrize("corruption", sorted(CORRUPTIONS))
def test_resume_refuses_a_kept_game_that_was_edited(corruption, tmp_path, capsys):
    change, named = CORRUPTIONS[corruption]
    out = tmp_path / "t"
    data = partial(out)
    change(data)
    save(out, data)
    capsys.readouterr()
    before = snapshot(out)
    assert evaluate.main([*ARGV, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "--resume" in lines[0] and named in lines[0], lines[0]
    assert snapshot(out) == before  # nothing rewritten


@pytest.mark.parametrize("damage", ["truncated JSON", "a FIFO", "a folder", "not JSON at all"])
def test_resume_refuses_a_tournament_json_that_cannot_be_read(damage, tmp_path, capsys):
    out = tmp_path / "t"
    data = partial(out)
    path = out / "tournament.json"
    text = json.dumps(data)
    path.unlink()
    if damage == "truncated JSON":
        path.write_text(text[: len(text) // 2])
    elif damage == "a FIFO":
        os.mkfifo(path)  # a reader that waited on it would hang here
    elif damage == "a folder":
        path.mkdir()
    else:
        path.write_bytes(b"\xff\xfe" + os.urandom(64))
    capsys.readouterr()
    before = snapshot(out)
    assert evaluate.main([*ARGV, "--out", str(out), "--resume"]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "--resume" in lines[0] and "tournament.json" in lines[0], lines[0]
    assert snapshot(out) == before
