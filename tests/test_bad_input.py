"""Bad input is refused with a clear ``ValueError`` and changes nothing."""

from __future__ import annotations

import numpy as np
import oracle
import pytest

import odin_env
from odin_env import combos
from odin_env.rules import NUM_ACTIONS, PASS, TAKE, Config, Game


def _positions() -> list[tuple[str, Game]]:
    """One position per phase, built by hand: lead, follow, take."""
    config = Config(players=3)
    hands = [oracle.ids(h) for h in ("R1 R5 Y2", "B9 B4 Y1", "O6 O7")]
    lead = Game.from_position(config, hands, 0)
    follow = Game.from_position(config, hands, 1, table=oracle.ids("R8 R3"), owner=0)
    follow.apply(combos.combo_index(oracle.ids("B9 B4")))
    take_phase = follow
    follow = Game.from_position(config, hands, 1, table=oracle.ids("R8 R3"), owner=0)
    return [("lead", lead), ("follow", follow), ("take", take_phase)]


@pytest.mark.parametrize("phase_index", [0, 1, 2])
def test_illegal_action_raises_naming_action_phase_and_legal_count(phase_index: int) -> None:
    phase, game = _positions()[phase_index]
    illegal = [a for a in (PASS, 0, TAKE, NUM_ACTIONS - 1, 3578) if a not in game.legal]
    assert illegal
    for action in illegal:
        before = game.snapshot()
        with pytest.raises(ValueError) as error:
            game.apply(action)
        message = str(error.value)
        assert f"illegal action {action}" in message
        assert f"phase {phase}" in message
        assert f"{len(game.legal)} actions are legal" in message
        assert game.snapshot() == before


@pytest.mark.parametrize("action", [-1, NUM_ACTIONS, 10**9, None, "pass"])
def test_out_of_range_or_non_int_actions_are_refused(action: object) -> None:
    game = Game(Config(), seed=0)
    before = game.snapshot()
    with pytest.raises(ValueError, match="illegal action"):
        game.apply(action)  # type: ignore[arg-type]
    assert game.snapshot() == before


def test_env_illegal_action_raises_and_leaves_the_game_unchanged() -> None:
    environment = odin_env.env(players=4)
    environment.reset(seed=0)
    game = environment.unwrapped.game
    mask = environment.observe(environment.agent_selection)["action_mask"]
    illegal = int(np.flatnonzero(mask == 0)[0])
    before = game.snapshot()
    agent = environment.agent_selection
    with pytest.raises(ValueError, match=rf"illegal action {illegal} .* phase lead"):
        environment.step(illegal)
    assert game.snapshot() == before
    assert environment.agent_selection == agent


def test_env_illegal_terminate_mode_uses_pettingzoo_wrapper() -> None:
    environment = odin_env.env(players=3, illegal="terminate")
    environment.reset(seed=0)
    mask = environment.observe(environment.agent_selection)["action_mask"]
    offender = environment.agent_selection
    environment.step(int(np.flatnonzero(mask == 0)[0]))
    assert all(environment.terminations.values())
    assert environment.rewards[offender] == -1


@pytest.mark.parametrize(
    ("field", "kwargs", "allowed"),
    [
        ("players", {"players": 7}, "2-6"),
        ("players", {"players": 1}, "2-6"),
        ("players", {"players": 4.0}, "2-6"),
        ("threshold", {"threshold": 0}, ">= 1"),
        ("threshold", {"threshold": -5}, ">= 1"),
        ("first_player", {"first_player": "loser"}, "rotate, winner, random, fixed"),
        ("colours", {"colours": 7, "players": 2}, "2-6"),
        ("colours", {"colours": 7}, "4-6"),
        ("colours", {"colours": 1, "players": 2}, "2-6"),
        ("colours", {"colours": 3, "players": 4}, "4-6"),  # 27 cards cannot deal 4 x 9
        ("episode", {"episode": "match"}, "game, hand"),
        ("reward", {"reward": "score"}, "penalty, win"),
    ],
)
def test_invalid_config_raises_naming_field_and_allowed_values(
    field: str, kwargs: dict, allowed: str
) -> None:
    with pytest.raises(ValueError) as error:
        Config(**kwargs)
    assert field in str(error.value) and allowed in str(error.value)
    # The same check through the environment.
    with pytest.raises(ValueError) as error:
        odin_env.env(**kwargs)
    assert field in str(error.value) and allowed in str(error.value)


def test_env_refuses_unknown_render_mode_and_illegal_mode() -> None:
    with pytest.raises(ValueError, match="render_mode must be None, ansi or human"):
        odin_env.env(render_mode="rgb_array")
    with pytest.raises(ValueError, match="illegal must be one of raise, terminate"):
        odin_env.env(illegal="ignore")


@pytest.mark.parametrize("num_players", [0, 1, 7])
def test_env_num_players_alias_is_checked_like_players(num_players: int) -> None:
    with pytest.raises(ValueError, match="players must be 2-6"):
        odin_env.env(num_players=num_players)
    with pytest.raises(ValueError, match="disagree"):
        odin_env.env(players=3, num_players=4)
