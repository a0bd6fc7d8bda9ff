"""``research/search_strength.py``: the search's games are the same whatever the worker count
and however the deals are cut into parts, the parts make the whole tournament, and a stopped run
resumes from the parts it wrote."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import research_file

ROOT = Path(__file__).resolve().parents[1]
search_strength = research_file.load("search_strength")

TIMINGS = ("median_ms", "p90_ms")


def figures(monkeypatch, workers: int, part: int) -> dict:
    monkeypatch.setattr(search_strength, "PART", part)
    row = search_strength.measure("search:4", "greedy", 3, 15, deals=3, seed=7, workers=workers)
    return {key: value for key, value in row.items() if key not in TIMINGS}


def test_the_games_do_not_depend_on_workers_or_parts(monkeypatch):
    one = figures(monkeypatch, workers=1, part=5)
    assert one["games"] == 9 and one["decisions"] > 9  # every deal from every seat
    assert 0 <= one["ci_low"] <= one["win_share"] <= one["ci_high"] <= 1
    assert figures(monkeypatch, workers=2, part=2) == one
    assert figures(monkeypatch, workers=1, part=1) == one


def test_a_stopped_run_resumes_from_the_parts_it_finished(monkeypatch, tmp_path):
    monkeypatch.setattr(search_strength, "PART", 2)
    run = dict(
        spec="search:4",
        opponent="greedy",
        players=3,
        threshold=15,
        deals=5,
        seed=7,
        workers=1,
        out=tmp_path,
    )
    whole = search_strength.measure(**run)
    folder = tmp_path / "parts" / "search_4"
    names = ["deals-0-1.json", "deals-2-3.json", "deals-4-4.json"]
    assert sorted(f.name for f in folder.iterdir()) == names  # each part as it finished
    (folder / names[1]).unlink()  # the part a killed run was playing
    again = search_strength.measure(**run, resume=True)
    assert (folder / names[1]).is_file()
    assert {k: v for k, v in again.items() if k not in TIMINGS} == {
        k: v for k, v in whole.items() if k not in TIMINGS
    }
    # A finished part is read, not played again: its games as the file has them count.
    first = json.loads((folder / names[0]).read_text())
    for record in first["records"]:
        record["winners"] = [record["agents"].index(0)]  # the searcher wins all of them
    (folder / names[0]).write_text(json.dumps(first))
    read = search_strength.measure(**run, resume=True)
    won = sum(0 not in [r["agents"][w] for w in r["winners"]] for r in first["records"])
    assert won == 0 and read["win_share"] > whole["win_share"]


def test_a_part_of_another_run_is_one_line_and_exit_2(tmp_path):
    (tmp_path / "parts" / "search_4").mkdir(parents=True)
    part = tmp_path / "parts" / "search_4" / "deals-0-0.json"
    part.write_text(json.dumps({"settings": {"seed": 1}, "records": [], "times": []}))
    before = part.read_bytes()
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "research" / "search_strength.py"),
            "--budgets",
            "4",
            "--opponent",
            "greedy",
            "--players",
            "3",
            "--deals",
            "1",
            "--seed",
            "7",
            "--workers",
            "1",
            "--out",
            str(tmp_path),
            "--resume",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 2
    line = done.stderr.strip().splitlines()[-1]
    assert str(part) in line and "not a part of this run" in line and "--resume" in line
    assert part.read_bytes() == before and sorted(tmp_path.iterdir()) == [tmp_path / "parts"]


def test_see_all_gives_the_search_the_true_hands_laid_out_as_its_worlds(tmp_path):
    """``--see-all``: every world the search plays is the game's true layout, in the slots
    :func:`agents.worlds.sample_hands` uses (the searcher first, then table order), so it agrees
    with every card the position knows and every hand size; its parts and rows are its own."""
    from agents.registry import make
    from odin_env.cards import cards_of
    from odin_env.rules import Config
    from odin_lab.evaluation.tournament import play_deals

    search = make("search:8")
    seeing = search_strength._SeesAll(search)
    true_hands = search._sample  # what --see-all put in the search's place
    checked = []

    def sample(position, unseen, needs, worlds):
        hands = true_hands(position, unseen, needs, worlds)
        game, n = seeing.game, seeing.game.config.players
        assert hands.shape == (worlds, n) and (hands == hands[0]).all()
        assert hands[0, 0] == position.hands[0] == game.hands[game.current]
        for slot in range(1, n):
            known = position.known[slot]
            assert hands[0, slot] & known == known  # the cards public in that hand are there
            assert hands[0, slot].bit_count() == known.bit_count() + needs[slot]
            hidden = cards_of(int(hands[0, slot]) & ~known)  # drawn from the unseen cards
            assert set(hidden) <= {int(c) for c in unseen}
        assert (
            sum(int(h).bit_count() for h in hands[0])
            == int(np.bitwise_or.reduce(hands[0])).bit_count()
        )
        checked.append(worlds)
        return hands

    search._sample = sample
    table = [search] + [make("planner") for _ in range(2)]
    records = play_deals(table, Config(players=3, threshold=15), 1, seed=11, watch=seeing.watch)
    assert len(records) == 3 and len(checked) > 10

    row = search_strength.measure(
        "search:4", "greedy", 3, 15, deals=1, seed=7, workers=1, out=tmp_path, sees=1.0
    )
    assert row["agent"] == "search:4 (sees every hand)" and row["games"] == 3
    assert [p.name for p in (tmp_path / "parts").iterdir()] == ["search_4_sees_all"]


@pytest.mark.parametrize(
    "bad,message",
    [
        (["--see-share", "1.5"], "--see-share must be a chance between 0 and 1"),
        (["--see-share", "0.5", "--see-all"], "give one of them"),
        (["--others", "nobody"], "--others: unknown agent spec 'nobody'"),
        (["--others", "search:8"], "has no batched form"),
        (["--others", "dmc:no.safetensors"], "--others: no DMC model at no.safetensors"),
    ],
)
def test_bad_see_share_or_others_is_one_line_and_exit_2(bad, message, tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "research" / "search_strength.py"),
            "--budgets",
            "4",
            "--deals",
            "1",
            "--out",
            str(tmp_path / "out"),
            *bad,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert done.returncode == 2 and message in done.stderr.strip().splitlines()[-1]
    assert not (tmp_path / "out").exists()


def test_see_share_keeps_that_share_of_the_hidden_cards_in_their_seats_and_deals_the_rest():
    """``--see-share P`` (:func:`partly_true`): every layout keeps seat 0's hand, each seat's
    known cards and hand size, and deals each unseen card once; the share of the other seats'
    hidden cards in their true seat is P plus what a uniform deal of the rest puts right."""
    rng = np.random.default_rng(0)
    deck = rng.permutation(54)
    truth = [sum(1 << int(c) for c in deck[9 * s : 9 * s + 9]) for s in range(4)]
    known = [0, 1 << int(deck[9]), 0, (1 << int(deck[27])) | (1 << int(deck[28]))]
    unseen = np.array(
        sorted(
            set(range(54))
            - set(int(c) for c in deck[:9])
            - {9, 27, 28}
            - {int(deck[9]), int(deck[27]), int(deck[28])}
        )
    )
    needs = [0, 8, 9, 7]
    hidden = sum(needs)
    for share in (0.0, 0.5, 0.9):
        layouts = search_strength.partly_true(truth, known, unseen, needs, 400, share, rng)
        assert (layouts[:, 0] == truth[0]).all()
        for seat in range(1, 4):
            assert ((layouts[:, seat] & known[seat]) == known[seat]).all()
            assert (
                np.bitwise_count(layouts[:, seat]) == known[seat].bit_count() + needs[seat]
            ).all()
        dealt = np.bitwise_or.reduce(layouts[:, 1:], axis=1)
        assert (np.bitwise_count(dealt) == np.bitwise_count(layouts[:, 1:]).sum(axis=1)).all()
        right = (
            sum(np.bitwise_count(layouts[:, s] & (truth[s] & ~known[s])) for s in range(1, 4))
            / hidden
        )
        # a card not kept lands in its seat with chance (the places left there) / (the cards
        # left): about needs * (1 - P) / (unseen - P * hidden)
        left = sum(n * n * (1 - share) for n in needs) / hidden / (unseen.size - share * hidden)
        expected = share + (1 - share) * left
        assert abs(right.mean() - expected) < 0.03, (share, right.mean(), expected)


def test_others_plays_every_seat_of_the_playouts(tmp_path):
    """``--others SPEC`` (:func:`model_others`): every seat of the playouts is SPEC's; its rows
    and parts are its own."""
    from agents.registry import make
    from agents.search import SearchAgent
    from odin_env.observation import observe
    from odin_env.rules import Config, Game

    game = Game(Config(players=4), seed=3)
    for _ in range(6):
        game.play_forced()
        game.apply(min(game.legal))
    game.play_forced()
    obs, mask = observe(game, game.current), game.legal_mask()
    assert mask.sum() > 2
    search = make("search:64", seed=4)
    search_strength.model_others(search, "greedy")
    others = search.evaluate(obs, mask).win
    reference = SearchAgent(seed=4, rollouts=64, policy="greedy")
    np.testing.assert_array_equal(others, reference.evaluate(obs, mask).win)
    assert not np.array_equal(others, make("search:64", seed=4).evaluate(obs, mask).win)

    row = search_strength.measure(
        "search:4", "greedy", 3, 15, deals=1, seed=7, workers=1, out=tmp_path, others="random"
    )
    assert row["agent"] == "search:4 (others played out by random)" and row["games"] == 3
    [folder] = (tmp_path / "parts").iterdir()
    assert folder.name == "search_4_others_random"
    part = json.loads(next(folder.iterdir()).read_text())
    assert part["settings"]["others"] == "random"
