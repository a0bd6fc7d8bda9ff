"""The notebooks' analysis helpers: behaviour measures, round robins, rate tests, TensorBoard."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from odin_env.cards import parse_card
from odin_env.combos import SINGLE, combo_index
from odin_env.observation import observe
from odin_env.rules import PASS, TAKE, Config, Game
from odin_lab.evaluation.analysis import (
    action_text,
    agent_available,
    behaviour,
    decision_of,
    read_scalars,
    round_robin,
    summarise,
    two_proportions,
)
from odin_lab.evaluation.tournament import play_tournament

CONFIG = Config(players=4)


def cards(*names: str) -> list[int]:
    return [parse_card(n) for n in names]


def decide(game: Game, action: int):
    return decision_of(observe(game, game.current), game.legal_mask(), action)


# -- decisions at built positions ------------------------------------------------------------------


def take_position() -> Game:
    """Seat 0 holds R2 G2, has just played Y3 Y4 Y5 over B2 B9 and takes one of those (R10)."""
    hands = [cards("R2", "G2"), cards("R7", "R8"), cards("O1", "O4"), cards("P6", "P8")]
    return Game.from_position(
        CONFIG, hands, current=0, table=cards("Y3", "Y4", "Y5"), take_from=cards("B2", "B9")
    )


def test_r10_take_of_the_high_card_is_highest_but_not_the_best_fit():
    d = decide(take_position(), TAKE + parse_card("B9"))
    assert d.phase == "take"
    assert d.take_highest and not d.take_most_joins and not d.take_fewest_combos


def test_r10_take_that_completes_a_value_line_is_the_best_fit():
    # B2 with R2 G2 forms combos of 2s (joins) and leaves one combo (cover 1) instead of two.
    d = decide(take_position(), TAKE + parse_card("B2"))
    assert not d.take_highest and d.take_most_joins and d.take_fewest_combos


def follow_position() -> Game:
    """Seat 0 follows a single Y5 holding R2 G2: the pair of 2s (one card more, R7) empties it."""
    hands = [cards("R2", "G2"), cards("R7", "R8"), cards("O1", "O4"), cards("P6", "P8")]
    return Game.from_position(CONFIG, hands, current=0, table=cards("Y5"), owner=3)


def test_r7_r9_pass_when_a_finishing_play_exists_is_recorded_as_a_missed_finish():
    game = follow_position()
    pair = combo_index(cards("R2", "G2"))
    assert pair in game.legal and PASS in game.legal
    passed, played = decide(game, PASS), decide(game, pair)
    assert passed.passed and passed.could_finish and not passed.finished
    assert played.finished and played.size == 2 and played.table_size == 1
    summary = summarise([passed, played])
    assert summary["pass_rate"] == 0.5 and summary["finish_rate"] == 0.5
    assert summary["cards_per_play"] == 2.0 and summary["follow_one_more"] == 1.0
    assert math.isnan(summary["lead_lowest"]) and math.isnan(summary["take_highest"])


def test_r8_single_card_lead_records_its_value_against_the_hand():
    hands = [cards("R2", "B7", "G5"), cards("R7", "R8"), cards("O1", "O4"), cards("P6", "P8")]
    game = Game.from_position(CONFIG, hands, current=0)
    low, high = decide(game, SINGLE[parse_card("R2")]), decide(game, SINGLE[parse_card("B7")])
    assert (low.lead_value, low.hand_low, low.hand_high) == (2, 2, 7)
    assert not low.could_finish  # R2 B7 G5 is no combo (R4)
    summary = summarise([low, high])
    assert summary["lead_lowest"] == 0.5 and summary["lead_highest"] == 0.5


def test_illegal_action_is_refused():
    with pytest.raises(ValueError, match="not a legal take"):
        decide(take_position(), TAKE + parse_card("R2"))
    with pytest.raises(ValueError, match="not a legal play"):
        decide(follow_position(), SINGLE[parse_card("R2")])


# -- behaviour in games ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def greedy_games():
    return behaviour("greedy", ["random"] * 3, CONFIG, deals=3, seed=5, progress=False)


def test_greedy_behaviour_matches_its_definition(greedy_games):
    # agents.heuristics.Greedy: never passes with a legal play, leads its lowest card, goes out
    # whenever it can, takes the card joining the most combos.
    decisions, _ = greedy_games
    s = summarise(decisions)
    assert s["decisions"] == len(decisions) > 50
    assert s["pass_rate"] == 0.0 and s["finish_rate"] == 1.0
    assert s["lead_lowest"] == 1.0 and s["take_most_joins"] == 1.0


def test_shaper_takes_the_card_that_leaves_the_fewest_combos():
    decisions, _ = behaviour("shaper", ["greedy"] * 3, CONFIG, deals=2, seed=1, progress=False)
    s = summarise(decisions)
    assert s["take_fewest_combos"] == 1.0 and s["pass_rate"] == 0.0


def test_random_passes_sometimes():
    decisions, _ = behaviour("random", ["greedy"] * 3, CONFIG, deals=2, seed=1, progress=False)
    assert 0.0 < summarise(decisions)["pass_rate"] < 1.0


def test_behaviour_games_are_the_rotated_tournament_games(greedy_games):
    # Same deals and seats as play_tournament: the same deterministic agents give the same games.
    _, records = greedy_games
    expected = play_tournament(
        ["greedy", *["random"] * 3], CONFIG, 3, seed=5, engine="single", progress=False
    )
    assert records == expected


def test_behaviour_needs_one_opponent_per_other_seat():
    with pytest.raises(ValueError, match="4 players need 3 opponents"):
        behaviour("greedy", ["random"], CONFIG, deals=1)


# -- round robin -----------------------------------------------------------------------------------


def test_round_robin_plays_every_table_and_indexes_the_full_list():
    specs = ["random", "greedy", "shaper", "planner"]
    config = Config(players=3)
    records = round_robin(specs, config, deals=1, seed=2, progress=False)
    assert len(records) == 4 * 3  # C(4, 3) tables x 3 seat rotations
    games = [sum(i in r.agents for r in records) for i in range(4)]
    assert games == [9, 9, 9, 9]  # each agent sits at 3 tables
    first = play_tournament(specs[:3], config, 1, seed=2, progress=False)
    assert records[:3] == first
    last = {frozenset(r.agents) for r in records[-3:]}
    assert last == {frozenset({1, 2, 3})}


def test_round_robin_refuses_too_few_or_repeated_agents():
    with pytest.raises(ValueError, match="at least 4 agents"):
        round_robin(["random", "greedy"], CONFIG, deals=1)
    with pytest.raises(ValueError, match="distinct"):
        round_robin(["random", "random", "greedy", "shaper"], CONFIG, deals=1)


# -- rates, TensorBoard, availability ------------------------------------------------------------


def test_two_proportions_agrees_with_the_chi_square_test():
    result = two_proportions(30, 100, 45, 100)
    table = [[30, 70], [45, 55]]
    chi2, p, _, _ = scipy_stats.chi2_contingency(table, correction=False)
    assert result["p"] == pytest.approx(p) and result["z"] ** 2 == pytest.approx(chi2)
    assert result["diff"] == pytest.approx(0.15)
    assert result["diff_low"] < 0.15 < result["diff_high"]
    assert two_proportions(10, 40, 25, 100)["p"] == pytest.approx(1.0)


def test_two_proportions_refuses_impossible_counts():
    with pytest.raises(ValueError, match="sample b"):
        two_proportions(3, 10, 12, 10)


def test_read_scalars_reads_what_the_training_logger_wrote(tmp_path):
    from stable_baselines3.common.logger import configure

    logger = configure(str(tmp_path / "tb"), ["tensorboard"])
    for step, value in [(10, 0.5), (20, 0.25), (30, 0.75)]:
        logger.record("eval/greedy/win_rate", value)
        logger.dump(step)
    logger.close()
    scalars = read_scalars(tmp_path / "tb")
    series = scalars["eval/greedy/win_rate"]
    assert series.steps.tolist() == [10, 20, 30]
    assert np.allclose(series.values, [0.5, 0.25, 0.75])


def test_read_scalars_without_logs_names_the_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="no TensorBoard event files"):
        read_scalars(tmp_path)


def test_agent_available_says_why_not():
    assert agent_available("greedy") == (True, "")
    ok, why = agent_available("ppo:/no/such/model.zip")
    assert not ok and "no PPO model" in why
    ok, why = agent_available("wizard")
    assert not ok and "unknown agent spec" in why


def test_action_text_names_the_cards_of_each_kind_of_action():
    pair = combo_index(cards("R3", "B3"))
    assert action_text(pair) == "play R3 B3 (33)"
    assert action_text(PASS) == "pass"
    assert action_text(TAKE + parse_card("O9")) == "take O9"
    with pytest.raises(ValueError, match="action must be 0-3633"):
        action_text(3634)
