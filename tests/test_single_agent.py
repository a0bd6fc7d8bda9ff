"""The single-learner Gymnasium env: its API, who acts when, and which reward reaches whom."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

from agents import make
from odin_env.cards import parse_card
from odin_env.combos import combo_index
from odin_env.rules import PASS, Config, Game
from odin_env.single_agent import ILLEGAL_REWARD, SingleAgentEnv
from odin_lab.training.pool import OpponentPool


class FirstPlay:
    """A stub opponent: always the lowest-numbered legal action (a play before a pass)."""

    name = "first-play"

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        return int(np.flatnonzero(action_mask)[0])

    def reset(self, seat: int, seed: int | None = None) -> None:
        pass


def pool(*kinds: str, players: int = 4) -> OpponentPool:
    """Training's opponent pool, as the env's per-episode opponent draw."""
    return OpponentPool(kinds, players, batched=False)


def cards(*names: str) -> list[int]:
    return [parse_card(n) for n in names]


def stub_env(**kwargs) -> SingleAgentEnv:
    return SingleAgentEnv(opponents=FirstPlay(), **kwargs)


def test_passes_gymnasium_env_checker():
    check_env(SingleAgentEnv(opponents=make("greedy")), skip_render_check=True)


def opponent_ends_hand(config: Config) -> Game:
    """Seat 0 (the learner) leads holding R1, Y5; seat 1 holds only G9 and empties its hand
    whenever it plays; seats 2 and 3 keep 3 and 5 cards. Lead R1 and the hand's penalties are
    (1, 0, 3, 5)."""
    hands = [
        cards("R1", "Y5"),
        cards("G9"),
        cards("B2", "P4", "O6"),
        cards("R3", "Y7", "G2", "B8", "P1"),
    ]
    return Game.from_position(config, hands, current=0, totals=[2, 10, 4, 4], seed=7)


@pytest.mark.parametrize("episode", ["hand", "game"])
def test_r13_learner_gets_its_own_penalty_when_an_opponent_ends_the_hand(episode):
    env = stub_env(episode=episode, threshold=50)
    game = opponent_ends_hand(env.config)
    obs, info = env.reset(seed=0, options={"game": game, "seat": 0})
    assert info["seat"] == 0
    _, reward, terminated, _, info = env.step(combo_index(cards("R1")))
    assert env.game.history == [(1, 0, 3, 5)]
    # Its own -1: not the hand-ender's 0, not the next player's -3.
    assert reward == -1.0
    assert terminated == (episode == "hand")
    if episode == "game":
        # The next hand is dealt and the learner is asked again: the reward was not held back.
        assert env.game.hand_number == 2 and env.game.current == 0
        assert info["action_mask"].sum() >= 2


def test_r14_learner_gets_its_win_when_an_opponent_ends_the_game():
    env = stub_env(episode="game", threshold=15, reward="win")
    game = opponent_ends_hand(env.config)
    game.totals = [2, 14, 12, 4]  # seat 1 empties at 14; seat 2 reaches 15: the game ends
    env.reset(seed=0, options={"game": game, "seat": 0})
    _, reward, terminated, _, info = env.step(combo_index(cards("R1")))
    assert terminated and env.game.totals == [3, 14, 15, 9]
    assert (reward, info["win"], info["penalty"]) == (1.0, 1.0, 3)


def test_r14_losing_learner_gets_nothing_when_an_opponent_wins_the_game():
    env = stub_env(episode="game", threshold=15, reward="win")
    game = opponent_ends_hand(env.config)
    game.totals = [12, 1, 12, 4]  # the learner reaches 13, seat 2 reaches 15; seat 1 wins on 1
    env.reset(seed=0, options={"game": game, "seat": 0})
    _, reward, terminated, _, info = env.step(combo_index(cards("R1")))
    assert terminated and (reward, info["win"]) == (0.0, 0.0)


@pytest.mark.parametrize("reward", ["penalty", "win"])
def test_rewards_over_an_episode_sum_to_the_learners_outcome(reward):
    """Every hand's penalty (or the final win share) reaches the learner exactly once, whoever
    ended the hand."""
    env = SingleAgentEnv(opponents=pool("greedy", "random"), reward=reward)
    rng = np.random.default_rng(1)
    for episode in range(6):
        _, info = env.reset(seed=episode)
        total, done = 0.0, False
        while not done:
            action = rng.choice(np.flatnonzero(info["action_mask"]))
            _, r, done, _, info = env.step(action)
            total += r
        expected = -info["penalty"] if reward == "penalty" else info["win"]
        assert total == pytest.approx(expected)
        assert sum(env.game.history[h][env.seat] for h in range(info["hands"])) == info["penalty"]


def test_learner_is_asked_only_for_its_own_real_choices():
    env = SingleAgentEnv(opponents=make("greedy"))
    rng = np.random.default_rng(2)
    _, info = env.reset(seed=3)
    for _ in range(200):
        game = env.game
        assert game.current == env.seat and len(game.legal) >= 2
        mask = env.action_masks()
        assert np.array_equal(np.flatnonzero(mask), game.legal)
        assert np.array_equal(info["action_mask"], mask)
        _, _, done, _, info = env.step(rng.choice(game.legal))
        if done:
            assert not env.action_masks().any()
            _, info = env.reset()


def test_seat_is_drawn_per_episode_or_fixed():
    drawn = SingleAgentEnv(players=5)
    seats = {drawn.reset(seed=s)[1]["seat"] for s in range(40)}
    assert seats == set(range(5))
    fixed = SingleAgentEnv(players=5, seat=3)
    assert {fixed.reset(seed=s)[1]["seat"] for s in range(10)} == {3}


def test_opponent_kind_is_drawn_per_episode_from_the_pool():
    env = SingleAgentEnv(opponents=pool("greedy", "random"))
    kinds = {env.reset(seed=s)[1]["opponent"] for s in range(30)}
    assert kinds == {"greedy", "random"}


def test_self_without_snapshots_falls_back_then_draws_each_seat_from_the_snapshots():
    draw = pool("self")
    env = SingleAgentEnv(opponents=draw)
    assert env.reset(seed=0)[1]["opponent"] == "random"
    stubs = [FirstPlay() for _ in range(2)]
    draw.set_snapshots(stubs)
    assert env.reset(seed=0)[1]["opponent"] == "self"
    assert {id(p) for p in env._players if p is not None} <= {id(s) for s in stubs}


def test_fixed_opponents_play_the_other_seats_in_seat_order():
    first, second, third = FirstPlay(), FirstPlay(), FirstPlay()
    env = SingleAgentEnv(opponents=[first, second, third], seat=1)
    env.reset(seed=0)
    assert env._players == [first, None, second, third]


def test_default_opponents_are_seeded_by_the_env():
    def trace(seed: int) -> list:
        env = SingleAgentEnv()
        obs, info = env.reset(seed=seed)
        return [obs.tobytes()] + [
            env.step(int(np.flatnonzero(env.action_masks())[0]))[0].tobytes() for _ in range(5)
        ]

    assert trace(3) == trace(3)


def test_same_seed_same_episode():
    def trace(seed: int) -> list:
        env = SingleAgentEnv(opponents=pool("greedy", "random"))
        obs, info = env.reset(seed=seed)
        out = [obs.tobytes()]
        for _ in range(30):
            obs, r, done, _, info = env.step(int(np.flatnonzero(info["action_mask"])[-1]))
            out.append((obs.tobytes(), r))
            if done:
                break
        return out

    assert trace(5) == trace(5)
    assert trace(5) != trace(6)


def test_illegal_action_raises_and_changes_nothing():
    env = SingleAgentEnv(illegal="raise")
    env.reset(seed=0)
    before = env.game.snapshot()
    illegal = int(np.flatnonzero(env.action_masks() == 0)[0])
    with pytest.raises(ValueError, match="illegal action"):
        env.step(illegal)
    assert env.game.snapshot() == before


def test_illegal_action_terminates_by_default():
    env = SingleAgentEnv(reward="penalty")
    env.reset(seed=0)
    illegal = PASS if PASS not in env.game.legal else int(np.flatnonzero(~env.action_masks())[0])
    _, reward, terminated, _, info = env.step(illegal)
    assert terminated and reward == ILLEGAL_REWARD["penalty"] and info["illegal_action"] == illegal
    with pytest.raises(RuntimeError, match="after the episode ended"):
        env.step(int(np.flatnonzero(env.game.legal_mask())[0]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"opponents": ["nobody"]}, "opponents must be None, one policy"),
        ({"opponents": []}, "opponents must be None, one policy"),
        ({"opponents": 5}, "opponents must be None, one policy"),
        ({"ployers": 4}, "unknown game setting 'ployers'"),
        ({"seat": 4}, "seat must be"),
        ({"players": 7}, "players must be"),
        ({"illegal": "ignore"}, "illegal must be"),
    ],
)
def test_bad_settings_raise_clear_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SingleAgentEnv(**kwargs)


def test_registered_with_gymnasium_and_usable_by_sb3_by_its_id():
    import gymnasium as gym
    from stable_baselines3.common.env_util import make_vec_env

    import odin_env

    env = gym.make(odin_env.GYM_ID, players=3, opponents=make("greedy"))
    obs, info = env.reset(seed=0)
    assert obs.shape == env.observation_space.shape and info["action_mask"].any()
    venv = make_vec_env(odin_env.GYM_ID, n_envs=2, env_kwargs={"players": 5})
    assert venv.reset().shape == (2, *env.observation_space.shape)
    assert venv.get_attr("config")[0].players == 5


def test_reset_from_a_position_plays_on_a_copy():
    env = stub_env(threshold=50)
    game = opponent_ends_hand(env.config)
    before = game.snapshot()
    first, _ = env.reset(seed=0, options={"game": game, "seat": 0})
    env.step(combo_index(cards("R1")))
    assert game.snapshot() == before
    again, _ = env.reset(seed=0, options={"game": game, "seat": 0})
    assert np.array_equal(first, again)


@pytest.mark.parametrize(
    ("action", "error"), [(None, TypeError), ("3", TypeError), (2.5, TypeError), (-1, ValueError)]
)
def test_a_non_integer_or_out_of_range_action_is_refused_naming_it(action, error):
    for illegal in ("terminate", "raise"):
        env = SingleAgentEnv(illegal=illegal)
        env.reset(seed=0)
        before = env.game.snapshot()
        with pytest.raises(error, match="illegal action"):
            env.step(action)
        assert env.game.snapshot() == before


def test_a_negative_seed_is_one_clear_error():
    with pytest.raises(ValueError, match="seed must be None or an integer >= 0; got -1"):
        SingleAgentEnv().reset(seed=-1)
