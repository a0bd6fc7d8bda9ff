"""A person plays the Goat (RULES G1-G5): ``play.py --goat`` through a pseudo-terminal, and the
moves a person types with the Goat (``Goat R5``, ``take Goat``), read by
:mod:`odin_lab.evaluation.moves`."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import pexpect
import pytest

from odin_env.cards import GOAT_BIT, card_name, cards_of, parse_card
from odin_env.combos import GOAT_COMBO_CARDS
from odin_env.rules import Config, Game
from odin_env.spec import GOAT_PLAY, GOAT_TAKE, PASS, PLAY_NUMBER, PLAY_SIZE
from odin_lab.evaluation.moves import MoveError, menu, move_name, parse_move
from odin_lab.evaluation.records import load_records, replay

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "your move> "
CONFIG = Config(players=3, goat=True)


def ids(text: str) -> list[int]:
    return [parse_card(name) for name in text.split()]


def goat_play(text: str) -> int:
    return GOAT_PLAY + GOAT_COMBO_CARDS.index(tuple(sorted(ids(text))))


def test_g2_g5_a_person_names_the_goat_in_a_play_and_a_take():
    game = Game.from_position(
        CONFIG, [ids("Goat Y5 R1 R2"), ids("G2 P3"), ids("P7 B8")], 0, table=ids("R4 B4"), owner=1
    )
    assert parse_move("Goat Y5", game) == parse_move("y5 goat", game) == goat_play("Goat Y5")
    with pytest.raises(MoveError, match="the Goat joins cards of one colour only"):
        parse_move("Goat R1 Y5", game)
    with pytest.raises(MoveError, match=r"R1 Goat \(10\) does not beat R4 B4 \(44\)"):
        parse_move("Goat R1", game)
    assert parse_move("Goat R1 R2", game) == goat_play("Goat R1 R2")  # 210: one card more
    shown = menu(game)
    plays = [a for a in shown if a != PASS]
    assert shown[0] == PASS and plays == sorted(plays, key=lambda a: (PLAY_SIZE[a], PLAY_NUMBER[a]))
    taking = Game.from_position(
        CONFIG,
        [ids("R1 B2"), ids("G1 G2"), ids("P1 P2")],
        0,
        table=ids("R8 R9"),
        take_from=ids("Goat Y7"),
    )
    assert parse_move("take goat", taking) == parse_move("Goat", taking) == GOAT_TAKE
    assert move_name(GOAT_TAKE) == "take Goat" and move_name(goat_play("Goat Y5")) == "Y5 Goat"


def _seed_holding_the_goat(config: Config) -> int:
    return next(s for s in range(100) if Game(config, seed=s).hands[0] & GOAT_BIT)


def test_a_person_plays_a_goat_game_in_a_terminal_and_the_record_replays(tmp_path):
    config = Config(players=2, threshold=3, first_player="fixed", goat=True)
    seed, out = _seed_holding_the_goat(config), tmp_path / "goat.json"
    env = {**os.environ, "NO_COLOR": "1", "COLUMNS": "120"}
    child = pexpect.spawn(
        sys.executable,
        [
            str(ROOT / "play.py"),
            "--opponents",
            "planner",
            "--goat",
            "--threshold",
            "3",
            "--first-player",
            "fixed",
            "--seed",
            str(seed),
            "--out",
            str(out),
        ],
        cwd=str(tmp_path),
        env=env,
        encoding="utf-8",
        timeout=60,
        dimensions=(50, 120),
    )
    child.expect(r"-- your turn: hand 1, lead --")
    child.expect_exact(PROMPT)
    hand = Game(config, seed=seed).hands[0]
    assert re.search(r"seat 0 \(you\)\s+[^\[]*Goat", child.before)
    colours = {}
    for card in cards_of(hand & ~GOAT_BIT):
        colours.setdefault(card // 9, card)
    two = " ".join(card_name(c) for c in list(colours.values())[:2])
    for typed, says in (
        (f"Goat {two}", "the Goat joins cards of one colour only"),
        ("hint", "hint: the search's view of your moves"),
    ):
        child.sendline(typed)
        child.expect_exact(says)
        child.expect_exact(PROMPT)
    child.sendline("goat")  # the Goat alone: the lowest single, led (G3)
    child.expect(r"seat 0 \(you\)\s+leads Goat")
    while child.expect_exact([PROMPT, "Totals: "]) == 0:
        child.sendline("1")
    child.expect_exact(f"game saved to {out}")
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0
    loaded = load_records(out)
    assert loaded.config.goat and replay(loaded.games[0], loaded.config).is_over
    assert loaded.games[0].actions[0] == goat_play("Goat")
