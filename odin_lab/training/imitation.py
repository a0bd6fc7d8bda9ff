"""Imitation warm start: fit a fresh policy to a hand-written agent's play before PPO.

The teacher plays every seat of seeded games; each real decision gives an observation, its mask
and the teacher's action (the cross-entropy target), and the discounted return that seat then
received (the critic's target, so the critic starts calibrated).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch as th
from tqdm import tqdm

from agents.ppo import prior_actions
from agents.registry import make
from odin_env.observation import observe
from odin_env.rules import NUM_ACTIONS, Config, Game
from odin_env.seeding import spawn_seed
from odin_lab.training.config import TrainConfig


def collect_demonstrations(
    teacher: str,
    game_config: Config,
    games: int,
    seed: int,
    gamma: float,
    prior: str | None = None,
) -> dict[str, np.ndarray]:
    """Every real decision of ``teacher`` playing all seats: observations, packed masks,
    actions, and each seat's discounted return from that decision on (the rewards the
    single-agent env would pay that seat, so the critic starts calibrated). ``prior``: each
    observation also holds that agent's action (the input of a prior policy)."""
    n = game_config.players
    agents = [make(teacher, seed=spawn_seed(seed, s)) for s in range(n)]
    prior_agent = None if prior is None or prior == teacher else make(prior)
    obs, masks, actions, returns = [], [], [], []
    rng = np.random.default_rng(spawn_seed(seed, n))
    for _ in tqdm(range(games), desc=f"imitate {teacher}", unit="game", mininterval=2.0):
        game = Game(game_config, seed=int(rng.integers(2**63)))
        rows: list[list[int]] = [[] for _ in range(n)]
        paid: list[list[float]] = [[] for _ in range(n)]
        while True:
            _credit(paid, game.play_forced())
            if game.is_over:
                break
            seat = game.current
            o, m = observe(game, seat), game.legal_mask()
            a = agents[seat].act(o, m)
            if prior is not None:
                p = a if prior_agent is None else prior_actions(prior_agent, o[None], m[None])[0]
                o = np.append(o, np.float32(p))
            rows[seat].append(len(obs))
            paid[seat].append(0.0)
            obs.append(o)
            masks.append(np.packbits(m.view(np.bool_)))
            actions.append(a)
            returns.append(0.0)
            _credit(paid, game.apply(a))
        for s in range(n):
            g = 0.0
            for row, r in zip(reversed(rows[s]), reversed(paid[s])):
                g = r + gamma * g
                returns[row] = g
    return {
        "obs": np.array(obs, dtype=np.float32),
        "masks": np.array(masks),
        "actions": np.array(actions, dtype=np.int64),
        "returns": np.array(returns, dtype=np.float32),
    }


def _credit(paid: list[list[float]], rewards: list[float] | None) -> None:
    """Add what a move paid each seat to that seat's latest decision (as the env does)."""
    if rewards is not None:
        for seat, decisions in enumerate(paid):
            if decisions:
                decisions[-1] += rewards[seat]


def imitate(model: Any, config: TrainConfig) -> dict[str, float]:
    """Fit ``model``'s policy to the choices of ``config.algo_config.imitate`` (cross-entropy over
    the legal actions) and its value to the returns seen (MSE); return the final losses."""
    ppo = config.algo_config
    data = collect_demonstrations(
        ppo.imitate, config.game, ppo.imitate_games, config.seed, ppo.gamma, ppo.prior
    )
    policy = model.policy
    size = len(data["actions"])
    rng = np.random.default_rng(config.seed)
    obs = th.as_tensor(data["obs"])
    actions = th.as_tensor(data["actions"])
    returns = th.as_tensor(data["returns"])
    losses = {"imitation/cross_entropy": 0.0, "imitation/value_mse": 0.0, "imitation/samples": size}
    batches = range(0, size, ppo.batch_size)
    bar = tqdm(total=ppo.imitate_epochs * len(batches), desc="fit", unit="batch", mininterval=2.0)
    for _ in range(ppo.imitate_epochs):
        order = rng.permutation(size)
        for lo in batches:
            bar.update()
            idx = order[lo : lo + ppo.batch_size]
            masks = np.unpackbits(data["masks"][idx], axis=1, count=NUM_ACTIONS)
            values, log_prob, _ = policy.evaluate_actions(
                obs[idx], actions[idx], action_masks=th.as_tensor(masks)
            )
            cross_entropy = -log_prob.mean()
            value_mse = th.nn.functional.mse_loss(values.flatten(), returns[idx])
            loss = cross_entropy + ppo.vf_coef * value_mse
            policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
            policy.optimizer.step()
            losses["imitation/cross_entropy"] = cross_entropy.item()
            losses["imitation/value_mse"] = value_mse.item()
            bar.set_postfix_str(f"cross-entropy {losses['imitation/cross_entropy']:.3f}")
    bar.close()
    return losses


__all__ = ["collect_demonstrations", "imitate"]
