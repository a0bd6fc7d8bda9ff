"""Learner env-steps per second of PPO: batched self-play (every seat learns) against the
single-seat SubprocVecEnv path, 4 players, same PPO settings, measured in the same run.

A learner step is one decision PPO trains on; each figure is whole training wall time
(collection and updates) over whole rollouts, after one warm-up rollout (numba compilation, the
subprocesses' start). Both use PPO's default settings (:class:`odin_lab.training.ppo.PPOConfig`:
``n_steps x n_envs`` decisions per update, 1,024-sample minibatches, 4 epochs, one torch thread)
and the lab's legal-set policy:

- ``single-seat``: SB3's own path, ``model.learn`` on a ``SubprocVecEnv`` of ``n_envs``
  ``SingleAgentEnv`` (``--opponent`` plays the other seats inside ``step``, default ``random``,
  the cheapest opponent, so the figure favours this path);
- ``self-play``: :class:`odin_lab.training.selfplay.SelfPlayCollector` on ``--batch`` games of
  :class:`odin_env.batched.BatchedGames` in the main process, then ``model.train()``, in steady
  state (decisions carried over from the previous rollout included).

    python benchmarks/selfplay_throughput.py [--batch 256] [--n-envs 4] [--rollouts 2] [--json PATH]

Timings on a shared machine are noisy: run it when nothing else is busy.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import torch as th

from odin_lab.cli import shell_command


def single_seat(config, opponent: str, n_envs: int, rollouts: int) -> float:
    """Steps/s of SB3's own path, ``model.learn`` on ``n_envs`` subprocesses of
    ``SingleAgentEnv`` (one learner seat each, ``opponent`` in the others), after one warm-up
    rollout."""
    from functools import partial

    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.vec_env import SubprocVecEnv

    from agents.registry import make
    from odin_env.single_agent import SingleAgentEnv
    from odin_lab.training.policy import LegalSetPolicy

    ppo = config.algo_config
    venv = SubprocVecEnv(
        [partial(SingleAgentEnv, config.game, opponents=make(opponent)) for _ in range(n_envs)]
    )
    try:
        model = MaskablePPO(
            LegalSetPolicy,
            venv,
            n_steps=ppo.n_steps * ppo.n_envs // n_envs,
            batch_size=ppo.batch_size,
            n_epochs=ppo.n_epochs,
            learning_rate=ppo.learning_rate,
            policy_kwargs={"net_arch": {"pi": ppo.net_pi, "vf": ppo.net_vf}},
            device="cpu",
            seed=config.seed,
        )
        size = ppo.n_steps * ppo.n_envs
        model.learn(size, reset_num_timesteps=False)
        start, steps = time.perf_counter(), model.num_timesteps
        model.learn(size * rollouts, reset_num_timesteps=False)
        return (model.num_timesteps - steps) / (time.perf_counter() - start)
    finally:
        venv.close()


def self_play(config, batch: int, rollouts: int) -> tuple[float, float, int]:
    """Steps/s of collection + update, the share of time spent collecting, decisions/rollout."""
    from odin_env.batched import BatchedGames
    from odin_lab.training.collector import SelfPlayCollector
    from odin_lab.training.model import build_model
    from odin_lab.training.update import train_on_rollout

    model = build_model(config)
    collector = SelfPlayCollector(model, BatchedGames(config.game, batch, config.seed))
    ppo = config.algo_config
    size = -(-ppo.n_steps * ppo.n_envs // batch) * batch
    train_on_rollout(model, collector.collect(size))
    steps = collecting = 0.0
    start = time.perf_counter()
    for _ in range(rollouts):
        began = time.perf_counter()
        rollout = collector.collect(size)
        collecting += time.perf_counter() - began
        train_on_rollout(model, rollout)
        steps += len(rollout)
    elapsed = time.perf_counter() - start
    return steps / elapsed, collecting / elapsed, size


def main() -> None:
    from odin_lab.training import make_config
    from odin_lab.training.ppo import PPOConfig

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=256, help="games in lockstep (self-play)")
    parser.add_argument("--n-envs", type=int, default=PPOConfig.n_envs, help="subprocess envs")
    parser.add_argument("--opponent", default="random", help="single-seat path's opponents")
    parser.add_argument("--rollouts", type=int, default=2, help="timed rollouts per path")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as runs:
        config = make_config("ppo", runs_dir=runs, opponents=[args.opponent])
        th.set_num_threads(config.torch_threads)
        ours, share, size = self_play(config, args.batch, args.rollouts)
        ref = single_seat(config, args.opponent, args.n_envs, args.rollouts)
    ppo = config.algo_config
    settings = (
        f"{ppo.n_steps * ppo.n_envs} decisions per update, minibatch {ppo.batch_size}, "
        f"epochs {ppo.n_epochs}, pi {ppo.net_pi}, vf {ppo.net_vf}, torch threads "
        f"{config.torch_threads}"
    )
    print(f"PPO settings : {settings}")
    print(
        f"single-seat  : {ref:8,.0f} learner steps/s  ({args.n_envs} SubprocVecEnv, "
        f"opponents {args.opponent})"
    )
    print(
        f"self-play    : {ours:8,.0f} learner steps/s  (batch {args.batch}, {size} decisions "
        f"per rollout, {share:.0%} of the time collecting)"
    )
    print(f"ratio        : {ours / ref:8.2f}x")
    if args.json:
        paths = [
            {
                "path": "single-seat",
                "learner_steps_per_s": ref,
                "how": f"{args.n_envs} SubprocVecEnv, opponents {args.opponent}",
            },
            {
                "path": "self-play",
                "learner_steps_per_s": ours,
                "how": f"batch {args.batch}, {share:.0%} of the time collecting",
            },
        ]
        command = shell_command("benchmarks/selfplay_throughput.py")
        report = {"command": command, "ppo_settings": settings, "paths": paths, "ratio": ours / ref}
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
