"""Games told as a person tells them (``odin_lab.evaluation.narrate``), moves read as a person types
them (``odin_lab.evaluation.moves``), and ``evaluate.py replay`` / ``watch`` as a user runs them."""

from __future__ import annotations

import io
import json
import re
import subprocess
import sys
from pathlib import Path

import oracle
import pytest

from agents import make
from odin_env.cards import parse_card
from odin_env.combos import combo_index_of_bits
from odin_env.rules import LEAD, PASS, TAKE, Config, Game
from odin_lab.evaluation.moves import MoveError, menu, move_name, parse_move
from odin_lab.evaluation.narrate import Narrator, Style, seat_labels, tell_steps, use_colour
from odin_lab.evaluation.records import load_records, replay_steps, write_records
from odin_lab.evaluation.tournament import play_deals

ROOT = Path(__file__).resolve().parents[1]
CARD = re.compile(r"\b[RYGBPO][1-9]\b")


@pytest.fixture(scope="module")
def played():
    config = Config(players=4, threshold=6)
    specs = ["planner", "greedy", "random", "shaper"]
    record = play_deals([make(s) for s in specs], config, 1, seed=4, rotate=False)[0]
    return config, specs, record, replay_steps(record, config)


def _story(played, seat=None) -> list[str]:
    config, specs, record, steps = played
    narrator = Narrator(config, seat_labels(specs, record.agents), seat)
    return list(tell_steps(steps, narrator))


def test_the_story_tells_every_decision_trick_and_hand(played):
    config, specs, record, steps = played
    lines = _story(played)
    decisions = steps[:-1]
    count = {
        verb: sum(bool(re.search(rf"\b{verb}\b(?! the trick)", line)) for line in lines)
        for verb in ("leads", "plays", "passes", "takes")
    }
    count["leads"] -= sum(line.startswith("  Trick ") for line in lines)  # "Trick 2: X leads"
    assert count["takes"] == sum(s.action >= TAKE for s in decisions)
    assert count["passes"] == sum(s.action == PASS for s in decisions)
    assert count["leads"] == sum(s.game.phase == LEAD for s in decisions)
    assert count["plays"] == sum(s.action < PASS and s.game.phase != LEAD for s in decisions)
    ends = [line for line in lines if "ends:" in line]
    assert len(ends) == len(record.hands)
    for end, penalties in zip(ends, record.hands):
        out = penalties.index(0)
        assert f"{seat_labels(specs, record.agents)[out]} went out" in end
    assert any(line.startswith("Totals: ") for line in lines)
    totals = next(line for line in lines if line.startswith("Totals: "))
    assert [int(t) for t in re.findall(r"\) (\d+)", totals)] == list(record.totals)
    winner = next(line for line in lines if line.startswith("Game over"))
    assert all(f"seat {s} (" in winner for s in record.winners)
    # Each trick that ends by passes names who won it (a pass never ends a hand).
    tricks = sum(a.action == PASS and b.game.phase == LEAD for a, b in zip(steps, steps[1:]))
    assert sum("wins the trick" in line for line in lines) == tricks > 0


def test_a_seat_sees_only_its_own_cards_and_the_public_ones(played):
    config, specs, record, steps = played
    viewer = 1
    narrator = Narrator(config, seat_labels(specs, record.agents), viewer)
    for step in steps[::7]:
        for seat, line in enumerate(narrator.hands(step.game)):
            shown = {parse_card(c) for c in CARD.findall(line)}
            if seat == viewer:
                assert shown == set(oracle_cards(step.game.hands[seat]))
            else:
                # only the cards taken in the open and still held, never the rest of the hand
                assert shown == set(oracle_cards(step.game.known[seat]))
                assert re.search(rf"{step.game.hands[seat].bit_count()} cards?", line)
    # Whether another seat could have played is hidden: only the viewer's passes say so.
    for line in _story(played, viewer):
        if "nothing beats it" in line:
            assert line.strip().startswith(f"seat {viewer} (")
    assert any("nothing beats it" in line for line in _story(played))


def oracle_cards(bits: int) -> list[int]:
    return [c for c in range(54) if bits >> c & 1]


def test_colour_only_on_a_terminal_without_no_color(monkeypatch):
    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.delenv("NO_COLOR", raising=False)
    assert use_colour(Tty()) and not use_colour(io.StringIO())
    assert not use_colour(Tty(), no_colour=True)
    monkeypatch.setenv("NO_COLOR", "1")
    assert not use_colour(Tty())
    assert Style(True).card(parse_card("R3")) == "\x1b[31mR3\x1b[0m"
    assert Style(False).card(parse_card("O9")) == "O9"


# -- typed moves -------------------------------------------------------------------------------

C4 = Config(players=2, threshold=5)
OTHER = oracle.ids("R1 R2 Y7 G8")


def _game(kind: str) -> Game:
    """Seat 0 to move with R3 Y3 G5 B9: leading, following Y2 or B8 B7, or (after playing
    R3 Y3) taking one of G1 B1."""
    hand = oracle.ids("R3 Y3 G5 B9")
    if kind == "lead":
        return Game.from_position(C4, [hand, OTHER], 0)
    if kind in ("follow", "follow_high"):
        table = oracle.ids("Y2" if kind == "follow" else "B8 B7")
        return Game.from_position(C4, [hand, OTHER], 0, table=table, owner=1)
    return Game.from_position(
        C4,
        [oracle.ids("G5 B9"), OTHER],
        0,
        table=oracle.ids("R3 Y3"),
        take_from=oracle.ids("G1 B1"),
        owner=0,
    )


@pytest.mark.parametrize(
    ("kind", "typed", "says"),
    [
        ("lead", "", "no move typed"),
        ("lead", "zz", "cannot read 'zz'"),
        ("lead", "R10", "cannot read 'R10'"),
        ("lead", "pass", "a leader cannot pass"),
        ("lead", "take R1", "nothing to take"),
        ("lead", "R3 R3", "R3 is named twice"),
        ("lead", "O9", "you do not hold O9"),
        ("lead", "R3 G5", "R3 G5 is not a combo"),
        ("lead", "R3 Y3", "led with one card, or with your whole hand"),
        ("lead", "7", "no move 7 in the menu: choose 1-4"),
        (
            "follow_high",
            "R3 Y3",
            "R3 Y3 (33) does not beat B7 B8 (87): play 2 cards with a "
            "number above 87, or 3 cards, or pass",
        ),
        ("follow_high", "G5", "G5 does not beat B7 B8 (87)"),
        ("follow", "take G5", "nothing to take"),
        ("take", "pass", "first take one card of G1 B1"),
        ("take", "take G5", "you can take only one of G1 B1"),
        ("take", "R3 Y3", "first take one card"),
    ],
)
def test_a_refused_move_says_why_and_changes_nothing(kind, typed, says):
    game = _game(kind)
    before = game.snapshot()
    with pytest.raises(MoveError) as caught:
        parse_move(typed, game)
    assert says in str(caught.value)
    assert game.snapshot() == before


@pytest.mark.parametrize(
    ("kind", "typed", "move"),
    [
        ("lead", "r3", "R3"),
        ("lead", "4", "B9"),  # the menu: the four single cards by value
        ("follow", "1", "pass"),  # pass first
        ("follow", "y3  R3", "Y3 R3"),
        ("follow", "y3,R3", "Y3 R3"),
        ("follow", "pass", "pass"),
        ("take", "g1", "take G1"),
        ("take", "take B1", "take B1"),
    ],
)
def test_typed_moves_name_the_legal_action(kind, typed, move):
    game = _game(kind)
    if move == "pass":
        expected = PASS
    elif move.startswith("take"):
        expected = TAKE + parse_card(move.split()[1])
    else:
        expected = combo_index_of_bits(sum(1 << c for c in oracle.ids(move)))
    assert parse_move(typed, game) == expected
    assert expected in game.legal


def test_the_menu_lists_every_legal_move_once_pass_first():
    for kind in ("lead", "follow", "follow_high", "take"):
        game = _game(kind)
        shown = menu(game)
        assert sorted(shown) == sorted(game.legal)
        assert all(parse_move(str(k), game, shown) == a for k, a in enumerate(shown, 1))
        assert all(parse_move(move_name(a), game) == a for a in shown)
    assert menu(_game("follow"))[0] == PASS


# -- the CLI -----------------------------------------------------------------------------------


def run(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "evaluate.py"), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_watch_saves_a_record_that_replay_tells_the_same(tmp_path):
    out = tmp_path / "w.json"
    watch = run(
        "watch",
        "--agents",
        "greedy",
        "planner",
        "random",
        "--threshold",
        "4",
        "--seed",
        "2",
        "--out",
        str(out),
        cwd=tmp_path,
    )
    assert watch.returncode == 0, watch.stderr
    assert "\x1b[" not in watch.stdout  # not a terminal: plain text
    story = watch.stdout.splitlines()
    assert story[-1] == f"saved to {out} (python evaluate.py replay {out})"
    again = run("replay", str(out), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    told = again.stdout.splitlines()
    assert told[0].startswith(f"Game 0 of {out}: deal 0, rotation 0")
    assert told[1:] == story[1:-1]
    record = load_records(out).games[0]
    totals = next(line for line in told if line.startswith("Totals: "))
    assert [int(t) for t in re.findall(r"\) (\d+)", totals)] == list(record.totals)
    seat = run("replay", str(out), "--seat", "2", cwd=tmp_path)
    assert "as seat 2 (random) sees it" in seat.stdout
    assert re.search(r"seat 0 \(greedy\)\s+9 cards  \[total 0\]", seat.stdout)
    assert not re.search(r"seat 0 \(greedy\)\s+9 cards", again.stdout)


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["replay", "FILE", "--game", "5"], "--game must be 0-0 (the file holds 1 game)"),
        (["replay", "FILE", "--seat", "3"], "--seat must be 0-2"),
        (["replay", "OLD"], "version 1 tournament file"),
        (["replay", "nothing.json"], "no such records file"),
        (["watch", "--agents", "greedy", "bogus", "--out", "x.json"], "unknown agent spec"),
        (["watch", "--agents", "greedy", "random", "--players", "3"], "fewer agents"),
        (["watch", "--agents", "greedy", "random", "--seat", "2", "--out", "x.json"], "--seat"),
    ],
)
def test_bad_replay_and_watch_input_is_one_line_exit_2(args, says, tmp_path, monkeypatch, capsys):
    from odin_lab.commands import evaluate

    config = Config(players=3, threshold=3)
    record = play_deals([make("greedy")] * 3, config, 1, seed=0, rotate=False)[0]
    write_records(tmp_path / "FILE", config, ["greedy"] * 3, [record])
    data = json.loads((tmp_path / "FILE").read_text())
    del data["format"], data["version"]
    (tmp_path / "OLD").write_text(json.dumps(data))
    monkeypatch.chdir(tmp_path)
    assert evaluate.main(args) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0], captured.err
    assert captured.out == ""
    assert not (tmp_path / "x.json").exists()
