"""The PettingZoo AEC environment: API conformance, seeding, rewards, forced moves, rendering."""

from __future__ import annotations

import re

import numpy as np
import pytest
from pettingzoo.test import api_test, seed_test

import odin_env
from odin_env.cards import card_name, cards_of, mask_of
from odin_env.observation import OBS_SIZE, views
from odin_env.rules import NUM_ACTIONS, PASS

# PettingZoo warns about every Dict observation with an action mask (its classic games too).
pytestmark = [
    pytest.mark.filterwarnings("ignore:Observation space for each agent probably should be"),
    pytest.mark.filterwarnings("ignore:Observation is not a NumPy array"),
]

PLAYERS = [2, 3, 4, 5, 6]
EPISODES = ["hand", "game"]


@pytest.mark.parametrize("episode", EPISODES)
@pytest.mark.parametrize("players", PLAYERS)
def test_pettingzoo_api_test_passes(players: int, episode: str) -> None:
    api_test(odin_env.env(players=players, episode=episode, threshold=10), num_cycles=1000)


@pytest.mark.parametrize("episode", EPISODES)
@pytest.mark.parametrize("players", PLAYERS)
def test_pettingzoo_seed_test_passes(players: int, episode: str) -> None:
    seed_test(lambda: odin_env.env(players=players, episode=episode, threshold=10), num_cycles=500)


def play_episode(environment, seed: int) -> tuple[dict[str, float], list[np.ndarray]]:
    """Random legal play; returns each agent's summed rewards and every acting agent's mask."""
    environment.reset(seed=seed)
    rng = np.random.default_rng(seed)
    returns = dict.fromkeys(environment.possible_agents, 0.0)
    masks = []
    for agent in environment.agent_iter():
        obs, reward, termination, truncation, _ = environment.last()
        returns[agent] += reward
        assert obs["observation"].shape == (OBS_SIZE,) and obs["observation"].dtype == np.float32
        assert obs["action_mask"].shape == (NUM_ACTIONS,) and obs["action_mask"].dtype == np.int8
        if termination or truncation:
            environment.step(None)
            continue
        mask = obs["action_mask"]
        masks.append(mask)
        for other in environment.possible_agents:
            if other != agent:
                assert not environment.observe(other)["action_mask"].any()
        legal = mask.view(bool).nonzero()[0]
        environment.step(int(legal[rng.integers(len(legal))]))
    return returns, masks


@pytest.mark.parametrize("auto_forced", [True, False])
@pytest.mark.parametrize(("players", "episode"), [(2, "game"), (4, "game"), (6, "hand")])
def test_r13_penalty_reward_reaches_every_seat_whoever_ends_the_hand(
    players: int, episode: str, auto_forced: bool
) -> None:
    environment = odin_env.env(
        players=players, episode=episode, threshold=12, auto_forced=auto_forced
    )
    for seed in range(3):
        returns, _ = play_episode(environment, seed)
        game = environment.unwrapped.game
        assert game.is_over
        # Every agent received minus its own cards left, in every hand, whoever went out.
        expected = [-float(sum(row[s] for row in game.history)) for s in range(players)]
        assert [returns[a] for a in environment.possible_agents] == expected
        assert environment.agents == []


@pytest.mark.parametrize("episode", EPISODES)
def test_r14_win_reward_is_the_shared_win_at_the_end(episode: str) -> None:
    environment = odin_env.env(players=3, episode=episode, threshold=10, reward="win")
    for seed in range(4):
        returns, _ = play_episode(environment, seed)
        winners = environment.unwrapped.game.winners
        share = [1.0 / len(winners) if s in winners else 0.0 for s in range(3)]
        assert [returns[a] for a in environment.possible_agents] == pytest.approx(share)


def test_auto_forced_asks_only_real_choices_and_off_asks_every_decision() -> None:
    on = odin_env.env(players=4, threshold=10, auto_forced=True)
    off = odin_env.env(players=4, threshold=10, auto_forced=False)
    _, masks_on = play_episode(on, seed=5)
    _, masks_off = play_episode(off, seed=5)
    assert all(m.sum() >= 2 for m in masks_on)
    forced = [m for m in masks_off if m.sum() == 1]
    assert forced, "auto_forced=False must present the forced decisions too"
    assert any(m[PASS] for m in forced)  # a follower who can only pass is asked
    assert len(masks_off) > len(masks_on)


def test_observation_is_the_acting_seats_view() -> None:
    environment = odin_env.env(players=4)
    environment.reset(seed=3)
    game = environment.unwrapped.game
    for agent in environment.possible_agents:
        seat = int(agent.split("_")[1])
        v = views(environment.observe(agent)["observation"])
        assert np.array_equal(v["hand"], mask_of(game.hands[seat]))
    assert environment.agent_selection == f"player_{game.current}"


@pytest.mark.parametrize("seed", [0, 1])
def test_render_ansi_shows_the_acting_seat_and_nothing_hidden(seed: int) -> None:
    environment = odin_env.env(players=4, render_mode="ansi")
    environment.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(40):
        agent = environment.agent_selection
        seat = int(agent.split("_")[1])
        game = environment.unwrapped.game
        text = environment.render()
        assert isinstance(text, str)
        mine = " ".join(card_name(c) for c in cards_of(game.hands[seat]))
        assert f"your hand: {mine}" in text
        assert f"*player_{seat}:" in text
        for other in range(4):
            assert f"player_{other}: {game.hands[other].bit_count()} cards" in text
            if other != seat:
                for card in cards_of(game.hands[other] & ~game.known[other]):
                    assert not re.search(rf"\b{card_name(card)}\b", text)
        mask = environment.observe(agent)["action_mask"]
        legal = mask.view(bool).nonzero()[0]
        environment.step(int(legal[rng.integers(len(legal))]))


def test_render_human_prints_the_ansi_text(capsys: pytest.CaptureFixture[str]) -> None:
    ansi = odin_env.env(players=3, render_mode="ansi")
    human = odin_env.env(players=3, render_mode="human")
    ansi.reset(seed=2)
    human.reset(seed=2)
    capsys.readouterr()
    assert human.render() is None
    assert capsys.readouterr().out.strip() == ansi.render().strip()
    plain = odin_env.env(players=3)
    plain.reset(seed=2)
    with pytest.warns(UserWarning, match='^render\\(\\) needs a render mode: .*render_mode="ansi"'):
        assert plain.render() is None
