"""Decisions per second of the batched engine against the single AEC env, and the full
differential check against ``rules.py``.

Throughput: random legal play, an observation and a mask produced for every decision, at each
batch size of ``--batches`` (default 1, 64 and 1,024) and for ``odin_env.env()`` in the same run;
a decision is one action asked of an agent (forced decisions are applied by both engines without
asking, as ``auto_forced`` does by default). The batched agent is
:class:`agents.batch.BatchRandomAgent`, reading the mask like any agent; its time is counted.
``--parallel`` adds the figures with the games shared among numba's threads. The last line is
the best a pure-numpy engine could do (see ``numpy_bound``), the reason the engine uses numba.

``--differential N`` instead plays at least N random games in both engines over a grid of
settings (2-6 players, colours, first-player rules, episode and reward modes, auto_forced on and
off) and prints the number of games and decisions compared; any difference stops it with the
game, the decision and what differs.

    python benchmarks/batched_throughput.py
    python benchmarks/batched_throughput.py --differential 10000
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

import odin_env
from agents.batch import BatchRandomAgent
from odin_env.batched import BatchedGames
from odin_env.batched_check import compare_with_rules
from odin_env.combos import BEAT_HI, BEAT_LO, COMBO_BITS, NUM_COMBOS
from odin_env.observation import NUM_PLANES, OBS_SIZE
from odin_env.rules import FIRST_PLAYER_RULES, NUM_ACTIONS, Config
from odin_lab.cli import shell_command


def aec_rate(players: int, seconds: float, seed: int) -> float:
    """Decisions per second of ``odin_env.env()`` with random legal play."""
    env = odin_env.env(players=players)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    decisions = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(100):
            obs, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.reset()
                obs, *_ = env.last()
            legal = np.flatnonzero(obs["action_mask"])
            env.step(int(legal[rng.integers(legal.size)]))
            decisions += 1
    return decisions / (time.perf_counter() - start)


def batched_rate(players: int, batch: int, seconds: float, seed: int, parallel: bool) -> float:
    """Decisions per second of :class:`BatchedGames` with :class:`BatchRandomAgent`."""
    engine = BatchedGames(Config(players=players), batch=batch, seed=seed, parallel=parallel)
    agent = BatchRandomAgent(seed=seed + 1, parallel=parallel)
    obs, mask, *_ = engine.reset()
    engine.step(agent.act_batch(obs, mask))  # compiles (or loads) the kernels outside the clock
    steps = 0
    chunk = max(1, 20_000 // batch)
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(chunk):
            engine.step(agent.act_batch(obs, mask))
        steps += chunk
    return steps * batch / (time.perf_counter() - start)


def numpy_bound(batch: int, seconds: float, seed: int) -> float:
    """Decisions per second that a pure-numpy step could reach at best: it times only the
    vectorised legal mask (every combo against every hand and the table) and the unpacking of
    the observation planes, none of the rules, so a full numpy engine would be slower."""
    rng = np.random.default_rng(seed)
    bits = np.array(COMBO_BITS, dtype=np.int64)
    index = np.arange(NUM_COMBOS)
    hands = np.array(
        [sum(1 << int(c) for c in rng.choice(54, 9, replace=False)) for _ in range(batch)]
    )
    table = rng.integers(0, NUM_COMBOS, batch)
    sets = rng.integers(0, 1 << 54, (batch, NUM_PLANES))
    obs = np.zeros((batch, OBS_SIZE), dtype=np.float32)
    mask = np.zeros((batch, NUM_ACTIONS), dtype=np.int8)
    steps = 0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        inside = (bits[None, :] & ~hands[:, None]) == 0
        beats = (index[None, :] >= BEAT_LO[table][:, None]) & (
            index[None, :] < BEAT_HI[table][:, None]
        )
        mask[:, :NUM_COMBOS] = inside & beats
        mask[:, NUM_COMBOS] = 1
        raw = sets.view(np.uint8).reshape(batch, NUM_PLANES, 8)
        planes = np.unpackbits(raw, axis=2, bitorder="little")[:, :, :54]
        obs[:, : NUM_PLANES * 54] = planes.reshape(batch, -1)
        steps += 1
    return steps * batch / (time.perf_counter() - start)


def throughput(batches: list[int], players: int, seconds: float, seed: int, parallel: bool) -> dict:
    """Measure the AEC env and each batch size; print and return the figures."""
    single = aec_rate(players, seconds, seed)
    print(f"single AEC env odin_env.env(players={players}): {single:12,.0f} decisions/s")
    rows = []
    for batch, threads in itertools.product(batches, (False, True) if parallel else (False,)):
        rate = batched_rate(players, batch, seconds, seed, threads)
        rows.append(
            {
                "batch": batch,
                "parallel": threads,
                "decisions_per_s": rate,
                "ratio_vs_aec": rate / single,
            }
        )
        label = f"B={batch}" + (" parallel" if threads else "")
        print(
            f"batched {label:<16}: {rate:12,.0f} decisions/s  ({rate / single:6.1f}x the AEC env)"
        )
    bound = numpy_bound(max(batches), seconds, seed)
    print(
        f"numpy bound B={max(batches)} (mask and planes only, no rules): {bound:12,.0f} decisions/s"
    )
    return {
        "players": players,
        "aec_decisions_per_s": single,
        "batched": rows,
        "numpy_bound_decisions_per_s": bound,
    }


def _grid(seed: int) -> itertools.cycle:
    """Settings to cycle through: every rule x episode x reward x auto_forced, players 2-6."""
    rng = np.random.default_rng(seed)
    cases = []
    for j, (rule, episode, reward, auto_forced) in enumerate(
        itertools.product(FIRST_PLAYER_RULES, ("game", "hand"), ("penalty", "win"), (True, False))
    ):
        players = 2 + j % 5
        colours = None if rng.random() < 0.5 else int(rng.integers(max(2, players), 7))
        threshold = int(rng.choice([5, 10, 15, 20]))
        config = Config(players, threshold, colours, rule, episode, reward)
        cases.append((config, auto_forced))
    return itertools.cycle(cases)


def differential(games: int, seed: int, batch: int = 16, per_case: int = 48) -> dict:
    """Compare at least ``games`` random games with rules.py; print and return the counts."""
    done = decisions = 0
    grid = _grid(seed)
    with tqdm(total=games, unit="game", desc="differential") as bar:
        for case in itertools.count():
            if done >= games:
                break
            config, auto_forced = next(grid)
            played, compared = compare_with_rules(
                config, batch, seed=seed + case, games=min(per_case, games - done),
                auto_forced=auto_forced, action_seed=seed + case,
            )  # fmt: skip
            done += played
            decisions += compared
            bar.update(played)
    print(f"differential check: {done:,} games and {decisions:,} decisions identical to rules.py")
    return {"games": done, "decisions": decisions}


def _write_json(path: Path, data: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=2)
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 64, 1024])
    parser.add_argument("--players", type=int, default=4, help="seats per game (2-6)")
    parser.add_argument("--seconds", type=float, default=3.0, help="time per measurement")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--parallel", action="store_true", help="also measure the engine on numba's threads"
    )
    parser.add_argument(
        "--differential", type=int, metavar="N", help="compare N random games with rules.py"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    if any(b < 1 for b in args.batches) or args.seconds <= 0:
        parser.error("--batches must be >= 1 and --seconds > 0")
    if args.differential is not None:
        if args.differential < 1:
            parser.error("--differential must be >= 1")
        result = differential(args.differential, args.seed)
    else:
        result = throughput(args.batches, args.players, args.seconds, args.seed, args.parallel)
    if args.json:
        command = shell_command("benchmarks/batched_throughput.py", argv)
        _write_json(args.json, {"command": command, **result})


if __name__ == "__main__":
    main()
