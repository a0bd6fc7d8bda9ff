"""Learner steps per second of batched PPO training in one process and on N Ray actors, and
what each part of a Ray update costs, 4 players against ``--opponent`` (default ``greedy``).

All settings are :class:`odin_lab.training.TrainConfig`'s defaults (``n_steps x n_envs`` = 4,096
decisions per update, ``selfplay_batch`` 256 games per collector, 1,024-sample minibatches, 4
epochs, one torch thread). Measured in the same run, after one warm-up update each (numba,
actor start-up):

- ``one process``: :func:`odin_lab.training.selfplay.train_selfplay` as ``train.py`` runs it;
- ``ray, N actors``: the same with :class:`odin_lab.training.actors.RayCollector` on a local Ray of
  N CPUs (``--actors 1 2``): each actor collects 4,096 / N decisions of its own games;
- the parts of one update cycle: collecting 4,096 decisions in one process and the update
  (``train_on_rollout``) on them, in wall and CPU seconds (CPU time holds up when other
  processes share the cores); moving that rollout from an actor to the learner (a Ray call
  returning it, minus an empty call); putting the weights in the object store.

    python benchmarks/ray_throughput.py [--actors 1 2] [--updates 3] [--opponent greedy]
                                        [--json PATH]

Timings on a shared machine are noisy: run it when nothing else is busy, and say when not.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import torch as th

from odin_lab.cli import shell_command


def steps_per_s(config, updates: int, actors: int | None) -> tuple[float, float]:
    """Learner steps/s and the share of the time spent collecting (waiting for the actors),
    after one warm-up update; ``actors`` None: in this process."""
    from dataclasses import replace

    from odin_lab.training.actors import RayCollector
    from odin_lab.training.model import build_model
    from odin_lab.training.pool import OpponentPool
    from odin_lab.training.selfplay import train_selfplay

    size = config.algo_config.n_steps * config.algo_config.n_envs
    common = dict(batch=config.selfplay_batch, rollout_decisions=size, progress=False)
    if actors is None:
        model = build_model(config)
        pool = OpponentPool(config.opponents, config.game.players, seed=config.seed)
        common["pool"] = pool
        train_selfplay(model, config.game, size, seed=0, **common)
        stats = train_selfplay(model, config.game, size * (updates + 1), seed=1, **common)
        return stats.steps_per_s, stats.collect_seconds / stats.seconds
    config = replace(config, ray="local", actors=actors)
    model = build_model(config)
    collector = RayCollector(model, config, [(k, 100 + k) for k in range(actors)])
    try:
        train_selfplay(model, config.game, size, seed=0, collector=collector, **common)
        stats = train_selfplay(
            model, config.game, size * (updates + 1), seed=1, collector=collector, **common
        )
    finally:
        collector.close()
    return stats.steps_per_s, stats.collect_seconds / stats.seconds


def parts(config, repeats: int = 3) -> dict[str, float]:
    """The costs of one update cycle, best of ``repeats`` after a warm-up: collecting a
    default-sized rollout in one process and the update on it (wall and CPU seconds: the CPU
    time holds when other processes share the cores), moving that rollout from an actor to
    the learner, putting the weights in the object store, an empty actor call (wall)."""
    import ray

    from odin_env.batched import BatchedGames
    from odin_lab.training.collector import SelfPlayCollector
    from odin_lab.training.model import build_model
    from odin_lab.training.pool import OpponentPool
    from odin_lab.training.update import train_on_rollout

    model = build_model(config)
    pool = OpponentPool(config.opponents, config.game.players, seed=config.seed)
    games = BatchedGames(config.game, config.selfplay_batch, seed=config.seed)
    collector = SelfPlayCollector(model, games, pool)
    size = config.algo_config.n_steps * config.algo_config.n_envs

    def timed(call) -> tuple[float, float, object]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = call()
        return time.perf_counter() - wall, time.process_time() - cpu, out

    train_on_rollout(model, collector.collect(size))  # warm-up
    collects, updates = [], []
    for _ in range(repeats):
        *took, rollout = timed(lambda: collector.collect(size))
        collects.append(took)
        updates.append(timed(lambda r=rollout: train_on_rollout(model, r))[:2])

    @ray.remote(num_cpus=1)
    class Holder:
        def __init__(self, held):
            self.held = held

        def get(self):
            return self.held

        def nothing(self):
            return None

    holder = Holder.remote(rollout)
    ray.get(holder.nothing.remote())

    def best(call) -> float:
        return min(timed(call)[0] for _ in range(repeats))

    empty = best(lambda: ray.get(holder.nothing.remote()))
    move = best(lambda: ray.get(holder.get.remote())) - empty
    state = model.policy.state_dict()
    weights = {k: v.detach().numpy() for k, v in state.items()}
    put = best(lambda: ray.put(weights))
    ray.kill(holder)
    return {
        "decisions": len(rollout),
        "rollout_mb": sum(v.nbytes for v in vars(rollout).values() if hasattr(v, "nbytes")) / 1e6,
        "weights_mb": sum(v.nbytes for v in weights.values()) / 1e6,
        "collect_wall_s": min(c[0] for c in collects),
        "collect_cpu_s": min(c[1] for c in collects),
        "update_wall_s": min(u[0] for u in updates),
        "update_cpu_s": min(u[1] for u in updates),
        "move_s": move,
        "put_s": put,
        "empty_call_s": empty,
    }


def main() -> None:
    import ray

    from odin_lab.evaluation.distributed import connect
    from odin_lab.training import make_config

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--actors", type=int, nargs="+", default=[1, 2], help="actor counts")
    parser.add_argument("--updates", type=int, default=3, help="timed updates per setting")
    parser.add_argument("--opponent", default="greedy", help="agent playing the 3 other seats")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    settings = []  # the figures, for --json

    with tempfile.TemporaryDirectory() as runs:
        config = make_config("ppo", runs_dir=runs, opponents=[args.opponent])
        ppo = config.algo_config
        th.set_num_threads(config.torch_threads)
        print(
            f"settings: {ppo.n_steps * ppo.n_envs} decisions per update, "
            f"{config.selfplay_batch} games per collector, minibatch {ppo.batch_size}, "
            f"{ppo.n_epochs} epochs, opponents {args.opponent}; {os.cpu_count()} CPUs, "
            f"load average {os.getloadavg()[0]:.2f} at the start"
        )
        rate, share = steps_per_s(config, args.updates, None)
        print(f"one process     : {rate:7,.0f} learner steps/s ({share:.0%} collecting)")
        settings.append(
            {"setting": "one process", "learner_steps_per_s": rate, "collecting": share}
        )
        connect("local", max(args.actors))
        for n in args.actors:
            rate, share = steps_per_s(config, args.updates, n)
            print(f"ray, {n:2d} actors  : {rate:7,.0f} learner steps/s ({share:.0%} collecting)")
            settings.append(
                {"setting": f"ray, {n} actors", "learner_steps_per_s": rate, "collecting": share}
            )
        cost = parts(config)
        print(
            f"one update      : collecting {cost['decisions']} decisions "
            f"{cost['collect_wall_s']:.3f} s ({cost['collect_cpu_s']:.3f} s CPU), the update "
            f"{cost['update_wall_s']:.3f} s ({cost['update_cpu_s']:.3f} s CPU)"
        )
        print(
            f"ray transfers   : that rollout ({cost['rollout_mb']:.1f} MB) actor -> learner "
            f"{cost['move_s'] * 1e3:.1f} ms, the weights ({cost['weights_mb']:.1f} MB) into the "
            f"object store {cost['put_s'] * 1e3:.1f} ms, an empty actor call "
            f"{cost['empty_call_s'] * 1e3:.1f} ms"
        )
        print(f"load average {os.getloadavg()[0]:.2f} at the end")
        if args.json:
            command = shell_command("benchmarks/ray_throughput.py")
            report = {"command": command, "settings": settings, "one_update": cost}
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2) + "\n")
        ray.shutdown()


if __name__ == "__main__":
    main()
