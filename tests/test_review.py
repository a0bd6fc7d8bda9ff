"""Game reviews (``odin_lab.evaluation.review``, ``evaluate.py review``): every decision of the
chosen seat scored from its observation only (a review does not change when other seats' hidden
cards are laid out differently), the same file and seed give the same review, a 4-player game to
15 is reviewed within a minute, bad input is one line and exit 2."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from agents import make
from odin_env.cards import cards_of
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_lab.evaluation.records import (
    RecordsFile,
    Step,
    copy_game,
    load_records,
    replay_steps,
    write_person_game,
    write_records,
)
from odin_lab.evaluation.review import (
    REVIEW_ROLLOUTS,
    review_path,
    review_record,
    review_steps,
)
from odin_lab.evaluation.tournament import play_deals

ROOT = Path(__file__).resolve().parents[1]


def tournament_file(tmp_path: Path, players: int = 4, threshold: int = 15, seed: int = 1) -> Path:
    config = Config(players=players, threshold=threshold)
    specs = ["planner", "greedy", "random", "planner"][:players]
    games = play_deals([make(s) for s in specs], config, 1, seed=seed, rotate=False)
    path = tmp_path / "tournament.json"
    write_records(path, config, specs, games)
    return path


def test_a_review_scores_each_move_of_the_seat_and_sums_them_up(tmp_path):
    records = load_records(tournament_file(tmp_path, players=3, threshold=5))
    review = review_record(records, 0, 1, rollouts=32, seed=3)
    steps = replay_steps(records.games[0], records.config)
    moves = [(frame, s) for frame, s in enumerate(steps[:-1]) if not s.forced]
    mine = [(k, frame, s) for k, (frame, s) in enumerate(moves) if s.seat == 1]
    assert [d["step"] for d in review["decisions"]] == [k for k, _, _ in mine]
    assert [d["frame"] for d in review["decisions"]] == [frame for _, frame, _ in mine]
    for d, (k, _, step) in zip(review["decisions"], mine):
        assert d["action"] == step.action == records.games[0].actions[k]
        assert d["hand"] == step.game.hand_number
        assert d["best_action"] in step.game.legal
        assert d["loss"] == pytest.approx(d["best_value"] - d["value"], abs=2e-4)
        assert d["loss"] >= 0 and 0 <= d["value"] <= d["best_value"] <= 1
        if d["action"] == d["best_action"]:
            assert d["loss"] == 0 and d["points_lost"] == 0 and d["label"] == d["best_label"]
    decisions = review["decisions"]
    assert decisions and {"game", "seat", "costliest", "summary"} <= set(review)
    worst = review["costliest"]
    by_step = {d["step"]: d for d in decisions}
    assert len(worst) <= 5 and all(by_step[s]["loss"] > 0 for s in worst)
    losses = [by_step[s]["loss"] for s in worst]
    assert losses == sorted(losses, reverse=True)
    assert all(d["loss"] <= losses[-1] for d in decisions if d["step"] not in worst) or not worst
    summary = review["summary"]
    agreed = sum(d["action"] == d["best_action"] for d in decisions) / len(decisions)
    assert summary["decisions"] == len(decisions)
    assert summary["agreed"] == pytest.approx(agreed, abs=1e-4)
    hands = len(records.games[0].hands)
    lost = sum(d["points_lost"] for d in decisions) / hands
    assert summary["hands"] == hands
    assert summary["points_lost_per_hand"] == pytest.approx(lost, abs=1e-3)


def _relaid(steps: list[Step], seat: int, rng: np.random.Generator) -> list[Step]:
    """The steps of the same game with two cards swapped in one hand's deal, between other
    seats' hands or one and the cards set aside: cards never played, taken or shown in that
    hand, so that every seat's view (``seat``'s included), every move and whether it was forced
    stay the same. The other hands are dealt as before (the generator is carried over)."""
    hands_played = len(steps[-1].game.history)
    for _ in range(400):
        h = int(rng.integers(hands_played))
        at = next(k for k, s in enumerate(steps) if len(s.game.history) == h)
        deal = steps[at].game
        last = [s for s in steps if len(s.game.history) == h and s.action >= 0][-1].game
        # Cards still held when the hand ends and never shown: only their owner ever knew them.
        n = deal.config.players
        pools = [cards_of(last.hands[s] & ~last.known[s]) for s in range(n) if s != seat]
        owners = [s for s in range(n) if s != seat]
        pools, owners = pools + [cards_of(deal.set_aside)], owners + [-1]
        full = [k for k, pool in enumerate(pools) if pool]
        if len(full) < 2:
            continue
        i, j = rng.choice(full, 2, replace=False)
        x, y = int(rng.choice(pools[i])), int(rng.choice(pools[j]))
        hands = [cards_of(bits) for bits in deal.hands]
        for owner, out, into in ((owners[i], x, y), (owners[j], y, x)):
            if owner >= 0:
                hands[owner] = sorted((set(hands[owner]) - {out}) | {into})
        game = Game.from_position(
            deal.config, hands, deal.current, totals=deal.totals, hand_leader=deal.hand_leader
        )
        game.history = list(deal.history)
        game.rng = copy.deepcopy(deal.rng)  # the next hands are dealt as in the record
        relaid = list(steps[:at])
        for step in steps[at:-1]:
            if step.forced != (len(game.legal) == 1) or step.action not in game.legal:
                break
            relaid.append(Step(copy_game(game), game.current, step.action, step.forced))
            game.apply(step.action)
        else:
            assert game.totals == steps[-1].game.totals and game.is_over
            return [*relaid, Step(copy_game(game), -1, -1, False)]
    raise AssertionError("no swap kept the moves")


@pytest.mark.parametrize("seed", [1, 2])
def test_a_review_reads_no_hidden_state(tmp_path, seed):
    """The review of a record equals the review of the same game with other seats' hidden
    cards laid out differently (as the seat could not tell apart): the same views, the same
    review; and the hands did differ."""
    records = load_records(tournament_file(tmp_path, players=4, threshold=5, seed=seed))
    steps = replay_steps(records.games[0], records.config)
    relaid = _relaid(steps, 0, np.random.default_rng(seed))
    assert any(a.game.hands != b.game.hands for a, b in zip(steps, relaid))
    assert all(
        np.array_equal(observe(a.game, 0), observe(b.game, 0))
        for a, b in zip(steps[:-1], relaid[:-1])
    )
    first = review_steps(steps, 0, rollouts=32, seed=4)
    second = review_steps(relaid, 0, rollouts=32, seed=4)
    assert first["decisions"] and first == second


def test_the_same_file_and_seed_give_the_same_review_written_beside_it(tmp_path):
    path = tournament_file(tmp_path, players=3, threshold=5)
    out = tmp_path / "tournament.review-g0-s2.json"
    assert review_path(path, 0, 2) == review_path(tmp_path, 0, 2) == out
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [
                sys.executable,
                str(ROOT / "evaluate.py"),
                "review",
                str(path),
                "--seat",
                "2",
                "--rollouts",
                "32",
                "--seed",
                "7",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        runs.append(out.read_bytes())
    assert runs[0] == runs[1]
    written = json.loads(runs[0])
    assert written == {
        "file": str(path),
        **review_record(load_records(path), 0, 2, rollouts=32, seed=7),
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tournament.json", out.name]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("Review of game 0 of") and "seat 2 (random)" in lines[0]
    assert lines[-2].startswith(f"Summary: {written['summary']['decisions']} decisions")
    assert lines[-1] == f"written to {out}"
    assert sum(1 for line in lines if line[:5].strip().isdigit()) == len(written["decisions"])


def test_hints_asked_are_marked_in_the_review(tmp_path):
    """A person's record lists the steps where a hint was asked; the review marks them."""
    from odin_lab.evaluation.table import Table

    table = Table.against(Config(players=2, threshold=3), 0, ["random"], seed=5)
    asked = set()
    while not table.is_over:
        chosen = table.next_move()
        if chosen is None:
            if len(asked) < 2:
                table.hint(rollouts=16)
                asked.add(len(table.actions))
            table.apply(table.game.legal[0])
        else:
            table.apply(*chosen)
    path = tmp_path / "mine.json"
    table.save(path, "play")
    records = load_records(path)
    assert records.extra["hints"] == sorted(asked)
    review = review_record(records, 0, 0, rollouts=16)
    assert {d["step"] for d in review["decisions"] if d["hinted"]} == asked
    assert review["summary"]["hinted"] == 2 and review["agent"] == "human"


def test_a_four_player_game_to_15_is_reviewed_within_a_minute(tmp_path):
    records = load_records(tournament_file(tmp_path, players=4, threshold=15, seed=1))
    start = time.perf_counter()
    review = review_record(records, 0, 0, rollouts=REVIEW_ROLLOUTS)
    assert time.perf_counter() - start < 60
    assert review["summary"]["decisions"] >= 10


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["nothing.json", "--seat", "0"], "nothing.json: no such records file"),
        (["FILE", "--game", "3", "--seat", "0"], "--game must be 0-0 (the file holds 1 game)"),
        (["FILE", "--seat", "3"], "--seat must be 0-2 (3 players); got 3"),
        (["FILE", "--seat", "-1"], "--seat must be 0-2"),
        (["FILE"], "--seat is needed: a seat 0-2"),
        (["FILE", "--seat", "0", "--rollouts", "3"], "--rollouts must be an integer 16-100,000"),
        (["FILE", "--seat", "0", "--seed", "-1"], "--seed must be an integer >= 0"),
        (["PERSON", "--seat", "2"], "--seat must be 0-1 (2 players)"),
    ],
)
def test_bad_review_input_is_one_line_exit_2_and_writes_nothing(
    args, says, tmp_path, monkeypatch, capsys
):
    from odin_lab.commands import evaluate

    config = Config(players=3, threshold=3)
    games = play_deals([make("greedy")] * 3, config, 1, seed=0, rotate=False)
    write_records(tmp_path / "FILE", config, ["greedy"] * 3, games[:1])
    person = RecordsFile(Config(players=2, threshold=3), ("human", "random"), ())
    record = play_deals([make("random")] * 2, person.config, 1, seed=0, rotate=False)[0]
    write_person_game(tmp_path / "PERSON", person.config, person.specs, record, "play")
    monkeypatch.chdir(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert evaluate.main(["review", *args]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], captured.err
    assert captured.out == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_persons_game_is_reviewed_at_their_seat_by_default(tmp_path, monkeypatch, capsys):
    from odin_lab.commands import evaluate

    config = Config(players=2, threshold=3)
    record = play_deals([make("random")] * 2, config, 1, seed=2, rotate=False)[0]
    write_person_game(tmp_path / "p.json", config, ("random", "human"), record, "play")
    monkeypatch.chdir(tmp_path)
    assert evaluate.main(["review", "p.json", "--rollouts", "16"]) == 0
    assert "seat 1 (human)" in capsys.readouterr().out
    assert json.loads((tmp_path / "p.review-g0-s1.json").read_text())["seat"] == 1
