"""Bad input is refused with a clear ``ValueError`` and changes nothing."""

from __future__ import annotations

import numpy as np
import oracle
import pytest

import odin_env
from odin_env import combos
from odin_env.rules import NUM_ACTIONS, PASS, TAKE, Config, Game, check_action


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
        ("threshold", {"threshold": 0}, "1-1000"),
        ("threshold", {"threshold": -5}, "1-1000"),
        ("threshold", {"threshold": 1001}, "1-1000"),
        ("threshold", {"threshold": 10**30}, "1-1000"),  # was an endless game, or OverflowError
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


# -- what an action may be: one rule (rules.check_action) for the engine and every env mode ------

BAD_ACTIONS = [
    pytest.param(float(PASS), TypeError, id="float"),
    pytest.param(np.float32(0), TypeError, id="np.float32"),
    pytest.param(None, TypeError, id="None"),
    pytest.param("pass", TypeError, id="str"),
    pytest.param(True, TypeError, id="bool"),
    pytest.param(np.bool_(True), TypeError, id="np.bool_"),
    pytest.param(np.array([PASS]), TypeError, id="array"),
    pytest.param(-1, ValueError, id="-1"),
    pytest.param(NUM_ACTIONS, ValueError, id="NUM_ACTIONS"),
    pytest.param(5000, ValueError, id="5000"),
    pytest.param(np.int64(-1), ValueError, id="np.int64(-1)"),
    pytest.param(10**30, ValueError, id="10**30"),
]


def _names_action_and_range(message: str, action: object) -> bool:
    named = repr(action) in message or str(action) in message
    return named and f"integer 0-{NUM_ACTIONS - 1}" in message


@pytest.mark.parametrize(("action", "error"), BAD_ACTIONS)
def test_check_action_refuses_non_integers_and_out_of_range_actions(action, error) -> None:
    with pytest.raises(error) as raised:
        check_action(action)
    assert _names_action_and_range(str(raised.value), action), raised.value
    # A non-integer is a TypeError that is also a ValueError: handlers written for "every
    # refused action is a ValueError" keep working.
    assert isinstance(raised.value, ValueError)
    # The engine applies the same rule and changes nothing.
    game = Game(Config(), seed=0)
    before = game.snapshot()
    with pytest.raises(error):
        game.apply(action)
    assert game.snapshot() == before


@pytest.mark.parametrize("illegal", ["raise", "terminate"])
@pytest.mark.parametrize(("action", "error"), BAD_ACTIONS)
def test_env_refuses_non_integer_and_out_of_range_actions_in_every_mode(
    action, error, illegal: str
) -> None:
    environment = odin_env.env(players=3, illegal=illegal)
    environment.reset(seed=0)
    game = environment.unwrapped.game
    before = game.snapshot()
    agent = environment.agent_selection
    with pytest.raises(error) as raised:
        environment.step(action)
    assert _names_action_and_range(str(raised.value), action), raised.value
    # Refused before anything happened: no move, no termination, no reward.
    assert game.snapshot() == before
    assert environment.agent_selection == agent
    assert not any(environment.terminations.values())
    assert not any(environment.rewards.values())
    # The episode goes on with a legal action.
    legal = np.flatnonzero(environment.observe(agent)["action_mask"])
    environment.step(int(legal[0]))


@pytest.mark.parametrize("illegal", ["raise", "terminate"])
def test_numpy_integer_actions_are_accepted_and_dead_agents_step_with_none(illegal: str) -> None:
    assert check_action(np.int64(PASS)) == PASS and type(check_action(np.uint16(7))) is int
    environment = odin_env.env(players=3, episode="hand", illegal=illegal)
    environment.reset(seed=1)
    rng = np.random.default_rng(1)
    kinds = (np.int64, np.int32, np.int16, int)
    steps = 0
    for _agent in environment.agent_iter():
        obs, _, termination, truncation, _ = environment.last()
        if termination or truncation:
            environment.step(None)  # PettingZoo's protocol for a dead agent
            continue
        legal = np.flatnonzero(obs["action_mask"])
        environment.step(kinds[steps % 4](legal[rng.integers(len(legal))]))
        steps += 1
    assert not environment.agents and steps > 0


def test_terminate_mode_still_ends_the_episode_on_an_illegal_integer_action() -> None:
    environment = odin_env.env(players=3, illegal="terminate")
    environment.reset(seed=0)
    mask = environment.observe(environment.agent_selection)["action_mask"]
    environment.step(np.int64(np.flatnonzero(mask == 0)[0]))  # in range, not legal here
    assert all(environment.terminations.values())
    for _agent in environment.agent_iter():  # every dead agent is stepped with None
        environment.step(None)
    assert not environment.agents
