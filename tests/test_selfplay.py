"""Self-play collection on the batched engine (training.selfplay): reward credit per seat, terminal
flags, GAE against a plain reference, rollouts carried across boundaries, training, seeding."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest
import torch as th

from odin_env.batched import BatchedGames
from odin_env.rules import Config
from odin_lab.training.algorithms import make_config
from odin_lab.training.collector import FinishedEpisode, SelfPlayCollector, gae
from odin_lab.training.model import build_model
from odin_lab.training.pool import LEARNER, OpponentPool
from odin_lab.training.selfplay import episode_summary, train_selfplay
from odin_lab.training.update import train_on_rollout

GAMMA, LAMBDA = 0.9, 0.8


def tiny_model(players: int = 4, seed: int = 0):
    """The real training's model (``build_model``), with small layers and minibatches."""
    th.set_num_threads(1)
    config = make_config(
        "ppo",
        game=Config(players=players),
        n_envs=1,
        n_steps=64,
        batch_size=128,
        n_epochs=2,
        net_pi=[32],
        net_vf=[32],
        gamma=GAMMA,
        gae_lambda=LAMBDA,
        seed=seed,
    )
    return build_model(config)


def collect(config: Config, batch: int, steps: int, rollouts: int = 1, seed: int = 0, pool=None):
    th.manual_seed(seed)
    games = BatchedGames(config, batch, seed)
    collector = SelfPlayCollector(tiny_model(config.players), games, pool)
    return collector, [collector.collect(batch * steps) for _ in range(rollouts)]


def rows_by_episode(rollouts) -> dict[tuple[int, int, int], list[tuple[float, bool]]]:
    """(game, episode, seat) -> [(reward, terminal), ...] in decision order, over all rollouts."""
    out: dict[tuple[int, int, int], list[tuple[float, bool]]] = defaultdict(list)
    for r in rollouts:
        for g, e, s, rew, term in zip(r.game, r.episode, r.seat, r.rewards, r.terminal):
            out[int(g), int(e), int(s)].append((float(rew), bool(term)))
    return out


def test_r13_hand_penalty_is_credited_to_each_seats_last_decision_and_closes_every_seat():
    # One hand per episode: each seat is paid minus its cards left (R13) once, at the hand's end,
    # whoever played last; that must land on that seat's own last decision, flagged terminal.
    config = Config(players=4, episode="hand")
    _, (rollout,) = collect(config, batch=8, steps=120)
    assert len(rollout.episodes) >= 12
    rows = rows_by_episode([rollout])
    finished = {(e.game, e.episode) for e in rollout.episodes}
    dropped = 0.0
    credited = 0
    for episode in rollout.episodes:
        assert episode.totals.sum() > 0  # R13: the losers hold cards
        for seat in range(4):
            decisions = rows.get((episode.game, episode.episode, seat), [])
            if not decisions:
                dropped += episode.totals[seat]
                continue
            rewards = [r for r, _ in decisions]
            flags = [t for _, t in decisions]
            assert rewards[-1] == -episode.totals[seat]
            assert rewards[:-1] == [0.0] * (len(rewards) - 1)
            assert flags == [False] * (len(flags) - 1) + [True]
            credited += episode.totals[seat] > 0 and len(decisions) > 0
    assert credited > len(rollout.episodes)  # several seats per hand paid, not only the last
    assert rollout.dropped_reward == pytest.approx(dropped)
    # Episodes still running hold no terminal flag and no reward yet.
    for (game, episode, _), decisions in rows.items():
        if (game, episode) not in finished:
            assert not any(t for _, t in decisions)
            assert all(r == 0.0 for r, _ in decisions)


@pytest.mark.parametrize("reward", ["penalty", "win"])
def test_r14_game_rewards_sum_to_each_seats_outcome_across_rollout_boundaries(reward):
    # Short games (threshold 6, ~60 decisions) over four rollouts of 40 steps: episodes straddle
    # rollout boundaries, so decisions carried over must keep their rewards and appear once.
    config = Config(players=3, threshold=6, reward=reward)
    _, rollouts = collect(config, batch=6, steps=40, rollouts=4, seed=1)
    rows = rows_by_episode(rollouts)
    episodes = [e for r in rollouts for e in r.episodes]
    assert len(episodes) >= 6
    straddle = 0
    for episode in episodes:
        totals = episode.totals
        winners = np.flatnonzero(totals == totals.min())  # R14: lowest total wins, ties share
        count = 0
        for seat in range(3):
            decisions = rows[episode.game, episode.episode, seat]
            count += len(decisions)
            paid = sum(r for r, _ in decisions)
            if reward == "penalty":
                assert paid == pytest.approx(-totals[seat])
            else:
                share = 1.0 / len(winners) if seat in winners else 0.0
                assert paid == pytest.approx(share)
            assert [t for _, t in decisions] == [False] * (len(decisions) - 1) + [True]
        assert count == episode.decisions  # every decision of the episode trained on, once
        where = [
            k
            for k, r in enumerate(rollouts)
            if np.any((r.game == episode.game) & (r.episode == episode.episode))
        ]
        straddle += len(where) > 1
    assert straddle >= 2
    collected = sum(r.collected for r in rollouts)
    assert sum(len(r) for r in rollouts) + rollouts[-1].carried == collected


@pytest.mark.parametrize("episode", ["hand", "game"])
def test_r13_against_opponents_only_the_learner_seat_is_collected_and_paid(episode):
    # Against a pool, each episode of each game has one learner seat (drawn per episode); only
    # its decisions are collected, and it is paid its own penalty (R13) also when an opponent
    # ends the hand. The opponents' seats never appear in the rollout.
    config = Config(players=4, threshold=8, episode=episode)
    pool = OpponentPool(["random", "greedy"], 4, seed=3)
    _, rollouts = collect(config, batch=8, steps=60, rollouts=3, seed=2, pool=pool)
    rows = rows_by_episode(rollouts)
    episodes = [e for r in rollouts for e in r.episodes]
    assert len(episodes) >= 8 and {e.kind for e in episodes} == {"random", "greedy"}
    seats_seen = set()
    for e in episodes:
        (seat,) = np.flatnonzero(e.learners)
        seats_seen.add(int(seat))
        for other in range(4):
            decisions = rows.get((e.game, e.episode, other), [])
            if other != seat:
                assert decisions == []
        decisions = rows[e.game, e.episode, seat]
        assert len(decisions) == e.decisions
        assert sum(r for r, _ in decisions) == pytest.approx(-e.totals[seat])
        assert [t for _, t in decisions] == [False] * (len(decisions) - 1) + [True]
    assert seats_seen == {0, 1, 2, 3}  # the learner's seat is drawn, not fixed
    # Every collected learner decision is trained on once (carried ones included).
    collected = sum(r.collected for r in rollouts)
    assert sum(len(r) for r in rollouts) + rollouts[-1].carried == collected
    assert all(r.collected >= 8 * 60 for r in rollouts)


def test_a_fixed_seat_and_a_learner_kind_set_who_learns():
    pool = OpponentPool(["greedy", LEARNER], 3, seat=2, seed=0)
    _, (rollout,) = collect(Config(players=3, threshold=5), batch=6, steps=80, seed=0, pool=pool)
    kinds = {e.kind for e in rollout.episodes}
    assert kinds == {"greedy", LEARNER}
    for e in rollout.episodes:
        expected = [True] * 3 if e.kind == LEARNER else [False, False, True]
        assert e.learners.tolist() == expected
    kind_of = {(e.game, e.episode): e.kind for e in rollout.episodes}
    seats: dict[str, set[int]] = defaultdict(set)
    for g, ep, seat in zip(rollout.game.tolist(), rollout.episode.tolist(), rollout.seat.tolist()):
        if (g, ep) in kind_of:
            seats[kind_of[g, ep]].add(seat)
    assert seats == {"greedy": {2}, LEARNER: {0, 1, 2}}


def test_episode_summary_gives_the_learners_win_share_and_penalty_per_kind():
    def finished(kind, learners, totals):
        totals = np.array(totals)
        return FinishedEpisode(0, 0, totals, 10, kind, np.array(learners), totals == totals.min())

    summary = episode_summary(
        [
            finished("greedy", [1, 0, 0], [3, 5, 7]),  # won alone
            finished("greedy", [0, 1, 0], [3, 3, 7]),  # tied with seat 0: half a win
            finished("random", [0, 0, 1], [1, 5, 7]),  # lost
            finished(LEARNER, [1, 1, 1], [2, 4, 6]),
        ]
    )
    assert summary["opponents/greedy/win_rate"] == pytest.approx(0.75)
    assert summary["opponents/greedy/mean_penalty"] == pytest.approx(3.0)
    assert summary["opponents/random/win_rate"] == 0.0
    assert summary["selfplay/mean_penalty"] == pytest.approx(4.0)
    assert summary["charts/episode_length"] == 10.0


def test_seeded_training_against_a_pool_is_reproducible():
    def params(seed):
        model = tiny_model(players=4, seed=0)
        pool = OpponentPool(["random", "greedy"], 4, seed=seed)
        train_selfplay(
            model,
            Config(players=4),
            256,
            batch=16,
            rollout_decisions=128,
            seed=seed,
            progress=False,
            pool=pool,
        )
        return [p.detach().clone() for p in model.policy.parameters()]

    a, b, c = params(4), params(4), params(5)
    assert all(th.equal(x, y) for x, y in zip(a, b))
    assert any(not th.equal(x, z) for x, z in zip(a, c))


def reference_gae(rewards, values, terminal, last_value, gamma, lam):
    """Textbook GAE over one seat's decisions in order (episode ends where terminal)."""
    adv = [0.0] * len(rewards)
    running = 0.0
    for t in reversed(range(len(rewards))):
        nxt = last_value if t == len(rewards) - 1 else values[t + 1]
        live = 0.0 if terminal[t] else 1.0
        delta = rewards[t] + gamma * nxt * live - values[t]
        running = delta + gamma * lam * live * running
        adv[t] = running
    return adv


def test_gae_on_interleaved_hand_made_trajectories_matches_the_reference():
    # Seat A: rows 0, 2, 3 (terminal at 3) then 5 (truncated, bootstrap 0.7);
    # seat B: rows 1, 4 (truncated, bootstrap -2.0).
    rewards = np.array([0.0, 1.0, 0.5, -3.0, 2.0, 0.25])
    values = np.array([0.1, -0.2, 0.3, -0.4, 0.5, 0.6])
    terminal = np.array([False, False, False, True, False, False])
    next_index = np.array([2, 4, 3, -1, -1, -1])
    next_values = np.array([0.3, 0.5, -0.4, 99.0, -2.0, 0.7])  # 99: ignored (terminal)
    adv, ret = gae(rewards, values, next_values, terminal, next_index, GAMMA, LAMBDA)
    a = reference_gae([0.0, 0.5, -3.0], [0.1, 0.3, -0.4], [False, False, True], 0.0, GAMMA, LAMBDA)
    a2 = reference_gae([0.25], [0.6], [False], 0.7, GAMMA, LAMBDA)
    b = reference_gae([1.0, 2.0], [-0.2, 0.5], [False, False], -2.0, GAMMA, LAMBDA)
    expected = [a[0], b[0], a[1], a[2], b[1], a2[0]]
    np.testing.assert_allclose(adv, expected, rtol=1e-6)
    np.testing.assert_allclose(ret, np.array(expected) + values, rtol=1e-6)


def test_gae_refuses_a_link_backwards():
    with pytest.raises(ValueError, match=r"next_index\[1\]"):
        gae(np.zeros(2), np.zeros(2), np.zeros(2), np.zeros(2, bool), np.array([1, 0]), 0.9, 0.9)


def test_collected_advantages_match_a_reference_gae_per_game_and_seat():
    # Rebuild each (game, seat) trajectory from the rows alone (game, seat, order) and run the
    # textbook GAE on it: the collector's links and bootstraps must agree.
    config = Config(players=3, threshold=4)
    _, (_, rollout) = collect(config, batch=4, steps=60, rollouts=2, seed=2)
    # Episodes end inside the rollout, and hands end mid-episode (rewards before the end).
    assert rollout.terminal.sum() >= 6
    assert np.count_nonzero(rollout.rewards[~rollout.terminal]) >= 6
    for game in range(4):
        for seat in range(3):
            idx = np.flatnonzero((rollout.game == game) & (rollout.seat == seat))
            assert len(idx) > 3
            expected = reference_gae(
                rollout.rewards[idx].tolist(),
                rollout.values[idx].tolist(),
                rollout.terminal[idx].tolist(),
                float(rollout.next_values[idx[-1]]),
                GAMMA,
                LAMBDA,
            )
            np.testing.assert_allclose(rollout.advantages[idx], expected, rtol=1e-5, atol=1e-6)
            # A seat's next value is the value of its own next decision here.
            live = ~rollout.terminal[idx[:-1]]
            np.testing.assert_array_equal(
                rollout.next_values[idx[:-1]][live], rollout.values[idx[1:]][live]
            )
    np.testing.assert_allclose(
        rollout.returns, rollout.advantages + rollout.values, rtol=1e-6, atol=1e-6
    )


def test_collect_and_train_change_the_policy_and_count_decisions():
    model = tiny_model()
    before = [p.detach().clone() for p in model.policy.parameters()]
    stats = train_selfplay(
        model, Config(players=4), 400, batch=32, rollout_decisions=128, seed=0, progress=False
    )
    assert model.num_timesteps >= 400 and stats.decisions == model.num_timesteps
    assert len(stats.history) >= 3 and stats.steps_per_s > 0
    after = list(model.policy.parameters())
    assert any(not th.equal(a, b) for a, b in zip(before, after))
    # The model's own buffer is untouched, so the single-seat path still works on it.
    assert model.rollout_buffer.buffer_size == model.n_steps


def params_after(seed: int) -> list[th.Tensor]:
    model = tiny_model(players=3, seed=0)
    train_selfplay(
        model, Config(players=3), 192, batch=16, rollout_decisions=96, seed=seed, progress=False
    )
    return [p.detach().clone() for p in model.policy.parameters()]


def test_seeded_self_play_training_is_reproducible():
    a, b, c = params_after(5), params_after(5), params_after(6)
    assert all(th.equal(x, y) for x, y in zip(a, b))
    assert any(not th.equal(x, z) for x, z in zip(a, c))


def test_bad_input_names_the_problem():
    model = tiny_model()
    collector = SelfPlayCollector(model, BatchedGames(Config(players=4), 8, 0))
    with pytest.raises(ValueError, match="multiple of the batch"):
        collector.collect(12)
    with pytest.raises(ValueError, match="auto_forced"):
        SelfPlayCollector(model, BatchedGames(Config(players=4), 2, 0, auto_forced=False))
    with pytest.raises(ValueError, match="total_decisions"):
        train_selfplay(model, Config(players=4), 10.5, progress=False)
    with pytest.raises(ValueError, match="pool seats 3 players"):
        SelfPlayCollector(model, BatchedGames(Config(players=4), 2, 0), OpponentPool("random", 3))
    with pytest.raises(ValueError, match="seat must be None"):
        OpponentPool(["greedy"], 4, seat=4)
    with pytest.raises(ValueError, match="unknown agent spec"):
        OpponentPool(["grandmaster"], 4)


def test_train_on_rollout_refuses_an_empty_rollout():
    model = tiny_model(players=2)
    collector = SelfPlayCollector(model, BatchedGames(Config(players=2), 1, 0))
    rollout = collector.collect(1)  # the only decision is still open
    assert len(rollout) == 0 and rollout.carried == 1
    with pytest.raises(ValueError, match="no closed decision"):
        train_on_rollout(model, rollout)
