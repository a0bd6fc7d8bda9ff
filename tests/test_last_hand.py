"""``research/last_hand.py``: the count of who ends the last hands reads a tournament's
games.csv right and refuses other files in one line; the rule never goes out into a game it
loses while another legal action remains, and leaves every other choice to the network; the
search at game point decides exactly the game-point decisions with a choice; the paired games are
the same on any worker count."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import research_file

from odin_env.cards import parse_card
from odin_env.observation import observe
from odin_env.rules import Config, Game
from odin_env.spec import NUM_ACTIONS, NUM_COMBOS

ROOT = Path(__file__).resolve().parents[1]
last_hand = research_file.load("last_hand")

GAMES = """deal,rotation,seed,seats,first_leader,hand_penalties,totals,winners,winner_seats
0,0,1,a b c,0,0-4-6;5-0-9,5-4-15,b,1
0,1,1,c a b,0,3-0-2;0-8-9,3-8-11,c,0
1,0,2,a b c,0,2-0-2;0-6-9,2-6-11,a,0
1,1,2,c a b,0,2-2-0;9-0-9,11-2-9,a,1
"""


def test_count_reads_who_ended_the_last_hand_and_won_by_it(tmp_path):
    """Each last hand's 0 names who ended the game; here every such seat was behind before it
    (b: 4 against 0; c: 3 against 0; a: 2 against 0, twice) and won, and every seat that led
    into the last hand lost it. Then one game is changed so that a ends it from behind (5
    against 0) and c wins it: a lost game."""
    path = tmp_path / "games.csv"
    path.write_text(GAMES)
    rows = last_hand.count(path)
    led = {"led": 2, "won_led": 0, "behind": 2}  # a and b led two games each into the last hand
    assert rows["a"] == {
        "games": 4,
        "ended": 2,
        "won": 2,
        "lost_behind": 0,
        **led,
        "behind_points": 0,
    }
    assert rows["b"] == {
        "games": 4,
        "ended": 1,
        "won": 1,
        "lost_behind": 0,
        **led,
        "behind_points": 0 + 9,
    }
    assert rows["c"] == {
        "games": 4,
        "ended": 1,
        "won": 1,
        "lost_behind": 0,
        "led": 0,
        "won_led": 0,
        "behind": 4,
        "behind_points": 9 + 0 + 9 + 9,
    }
    path.write_text(
        GAMES.replace("1,0,2,a b c,0,2-0-2;0-6-9,2-6-11,a,0", "1,0,2,a b c,0,5-0-1;0-3-1,5-3-2,c,2")
    )
    rows = last_hand.count(path)
    assert rows["a"] == {
        "games": 4,
        "ended": 2,
        "won": 1,
        "lost_behind": 1,
        "led": 2,
        "won_led": 0,
        "behind": 2,
        "behind_points": 0,
    }
    assert rows["c"]["won"] == 1  # it ended game 2; game 3's win is not by its going out
    assert rows["c"]["behind_points"] == 9 + 0 + 1 + 9


def test_count_refuses_a_file_that_is_not_a_games_csv_in_one_line(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("a,b\n1,2\n")
    done = subprocess.run(
        [sys.executable, str(ROOT / "research" / "last_hand.py"), "count", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
    )
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.strip() == f"last_hand.py: {path}:2: not a row of a tournament's games.csv"


class _Values:
    """A stand-in network: ``values`` gives the action ``best`` 1, every other legal one 0."""

    def __init__(self, best: int):
        self.best = best

    def reset(self, seat, seed=None):
        pass

    def values(self, observations, masks):
        legal = np.where(masks > 0, 0.0, -np.inf)
        legal[:, self.best] += 1.0
        return legal


def _lead(totals: list[int], hand: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    """Seat 0 leads ``hand`` at 4 players, threshold 15; the others hold three cards each. Also
    the action that plays the whole hand."""
    others = [["B1", "B2", "B3"], ["G4", "G5", "G6"], ["P7", "P8", "P9"]]
    game = Game.from_position(
        Config(players=4),
        [[parse_card(c) for c in h] for h in [hand, *others]],
        0,
        totals=totals,
    )
    mask = np.zeros((1, NUM_ACTIONS), dtype=np.int8)
    mask[0, sorted(game.legal)] = 1
    whole = [a for a in game.legal if a < NUM_COMBOS and last_hand._SIZE[a] == len(hand)]
    assert len(whole) == 1
    return observe(game, 0)[None], mask, whole[0]


@pytest.mark.parametrize(
    ("totals", "loses"),
    [([10, 5, 13, 8], True), ([4, 5, 13, 8], False), ([10, 5, 3, 8], False)],
    ids=["ends-and-loses", "ends-and-wins", "does-not-end"],
)
def test_the_rule_never_goes_out_into_a_lost_game_while_another_action_remains(totals, loses):
    """Seat 0 can lead its pair R1 Y1 and go out: the others then score 3 each (R13). With
    totals 10, 5, 13, 8 that ends the game (13 + 3 >= 15) with seat 1 on 8 below seat 0's 10: a
    lost game, so the rule leads a single instead. Ending it on the lowest total, or not ending
    it, the network's choice (going out) stands."""
    obs, mask, whole = _lead(totals, ["R1", "Y1"])
    player = last_hand.NoLosingGoOut(_Values(whole))
    chosen = player.act(obs[0], mask[0])
    assert mask[0, chosen] == 1
    assert (chosen != whole) == loses
    assert player.changed == int(loses)


def test_the_rule_goes_out_when_every_legal_action_goes_out():
    """A lone card led: the only action goes out, into a lost game or not."""
    obs, mask, whole = _lead([10, 5, 13, 8], ["R1"])
    assert mask.sum() == 1
    assert last_hand.NoLosingGoOut(_Values(whole)).act(obs[0], mask[0]) == whole


@pytest.mark.parametrize(
    ("totals", "point"),
    [([10, 5, 13, 8], True), ([12, 5, 3, 8], False), ([13, 5, 3, 8], True)],
    ids=["another-seat-reaches", "none-reaches", "its-own-two-cards-reach"],
)
def test_game_point_is_a_total_plus_the_cards_held_reaching_the_threshold(totals, point):
    """Seat 0 holds two cards, the others three each, threshold 15 (R13-R14): 13 + 3 and 13 + 2
    reach it, 12 + 2 and 8 + 3 do not."""
    obs, mask, _ = _lead(totals, ["R1", "Y1"])
    assert last_hand.game_point(obs[0], mask[0]) is point


class _Fixed:
    """A stand-in player that always plays ``action`` and counts its calls and resets."""

    def __init__(self, action: int):
        self.action, self.calls, self.resets = action, 0, []

    def reset(self, seat, seed=None):
        self.resets.append((seat, seed))

    def act(self, obs, mask):
        self.calls += 1
        return self.action


@pytest.mark.parametrize(
    ("totals", "hand", "searched"),
    [
        ([10, 5, 13, 8], ["R1", "Y1"], True),
        ([2, 5, 3, 8], ["R1", "Y1"], False),
        ([10, 5, 13, 8], ["R1"], False),
    ],
    ids=["game-point", "not-game-point", "no-choice"],
)
def test_the_search_decides_exactly_the_game_point_decisions_with_a_choice(totals, hand, searched):
    obs, mask, whole = _lead(totals, hand)
    inner, search = _Fixed(whole), _Fixed(int(np.flatnonzero(mask[0])[0]))
    player = last_hand.SearchAtGamePoint(inner, search)
    player.reset(2, 99)
    assert inner.resets == search.resets == [(2, 99)]
    chosen = player.act(obs[0], mask[0])
    assert (search.calls, inner.calls, player.changed) == ((1, 0, 1) if searched else (0, 1, 0))
    assert chosen == (search.action if searched else whole)


def test_the_paired_games_do_not_depend_on_the_worker_count():
    """The same deals split over one or two processes: the same rows, the same difference."""
    one = last_hand.paired("rule", "greedy", 3, 4, seed=21, workers=1)
    two = last_hand.paired("rule", "greedy", 3, 4, seed=21, workers=2)
    assert one == two
    assert [r["games"] for r in one[:2]] == [12, 12]
    assert -1.0 <= one[2]["difference"] <= 1.0
