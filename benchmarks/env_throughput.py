"""Throughput of the Odin rules engine and AEC environment, against PettingZoo's leduc_holdem_v4.

For 4 players and random legal play it prints:

- decisions/s of the bare rules engine (``rules.Game``), the int8 legal mask produced at every
  decision and the action drawn from it;
- agent-steps/s of the AEC environment ``odin_env.env()`` with its wrappers: ``last()`` builds
  the full observation and mask at every step;
- agent-steps/s of ``leduc_holdem_v4.env()`` driven by the same loop, measured in the same run
  in alternating rounds, and the median over rounds of the ratio Odin AEC / leduc.

Both environments draw a uniform legal action with ``mask.view(bool).nonzero()[0]``. Usage::

    python benchmarks/env_throughput.py --seconds 30 [--clock cpu] [--json PATH]

The machine's other load moves every figure; the alternating rounds and the median ratio are
there so that the comparison with leduc survives that noise better than the absolute numbers.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
from tqdm import tqdm

import odin_env
from odin_env.rules import Config, Game
from odin_lab.cli import shell_command

CLOCKS = {"wall": time.perf_counter, "cpu": time.process_time}
"""``cpu`` counts only this process's CPU time: steadier on a machine shared with other work."""


def engine_decisions_per_second(
    seconds: float, rng: np.random.Generator, clock: Callable[[], float] = time.perf_counter
) -> float:
    """Random legal play on ``rules.Game`` for ``seconds``; every decision builds the mask."""
    config = Config(players=4)
    game = Game(config, seed=rng)
    decisions = 0
    start = clock()
    deadline = start + seconds
    while True:
        for _ in range(256):  # check the clock every 256 decisions, not every one
            if game.is_over:
                game = Game(config, seed=rng)
            legal = game.legal_mask().view(bool).nonzero()[0]
            game.apply(int(legal[rng.integers(len(legal))]))
        decisions += 256
        now = clock()
        if now >= deadline:
            return decisions / (now - start)


def aec_steps_per_second(
    make: Callable[[], object],
    seconds: float,
    rng: np.random.Generator,
    clock: Callable[[], float] = time.perf_counter,
) -> float:
    """Agent-steps/s of a PettingZoo AEC env made by ``make`` under random legal play."""
    environment = make()
    steps = 0
    start = clock()
    deadline = start + seconds
    while True:
        environment.reset(seed=int(rng.integers(2**31)))
        for _agent in environment.agent_iter():
            obs, _, termination, truncation, _ = environment.last()
            if termination or truncation:
                action = None
            else:
                legal = obs["action_mask"].view(bool).nonzero()[0]
                action = int(legal[rng.integers(len(legal))])
            environment.step(action)
            steps += 1
        now = clock()
        if now >= deadline:
            return steps / (now - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=30.0, help="total measuring time")
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--clock", choices=sorted(CLOCKS), default="wall", help="wall time, or process CPU time"
    )
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.seconds <= 0 or args.rounds < 1:
        parser.error("--seconds must be > 0 and --rounds >= 1")

    from pettingzoo.classic import leduc_holdem_v4  # the reference; needs pettingzoo[classic]

    rng = np.random.default_rng(args.seed)
    clock = CLOCKS[args.clock]
    slot = args.seconds / (3 * args.rounds)
    engine, odin, leduc, ratios = [], [], [], []
    for _ in tqdm(range(args.rounds), desc="rounds", unit="round"):
        engine.append(engine_decisions_per_second(slot, rng, clock))
        odin.append(aec_steps_per_second(lambda: odin_env.env(players=4), slot, rng, clock))
        leduc.append(aec_steps_per_second(leduc_holdem_v4.env, slot, rng, clock))
        ratios.append(odin[-1] / leduc[-1])

    def line(name: str, values: list[float], unit: str) -> str:
        spread = f"(min {min(values):,.0f}, max {max(values):,.0f})"
        return f"{name:<32} {statistics.median(values):>10,.0f} {unit}/s  {spread}"

    print(
        f"4 players, random legal play, {args.rounds} alternating rounds of {slot:.1f} s"
        f" ({args.clock} clock)"
    )
    print(line("rules engine (mask each decision)", engine, "decisions"))
    print(line("odin_env.env() AEC", odin, "agent-steps"))
    print(line("leduc_holdem_v4.env() AEC", leduc, "agent-steps"))
    print(f"{'median ratio odin AEC / leduc':<32} {statistics.median(ratios):>10.2f}x")
    if args.json:
        measured = [
            ("rules engine, mask each decision", "decisions/s", engine),
            ("odin_env.env() AEC", "agent-steps/s", odin),
            ("leduc_holdem_v4.env() AEC", "agent-steps/s", leduc),
        ]
        rates = [
            {
                "what": what,
                "unit": unit,
                "median": statistics.median(v),
                "min": min(v),
                "max": max(v),
            }
            for what, unit, v in measured
        ]
        settings = {"players": 4, "rounds": args.rounds, "seconds": slot, "clock": args.clock}
        ratio = statistics.median(ratios)
        _write_json(args.json, {"settings": settings, "rates": rates, "median_ratio": ratio})


def _write_json(path: Path, data: dict) -> None:
    """``data`` and the command that made it, as JSON (docs/benchmarks.md shows it)."""
    command = shell_command("benchmarks/env_throughput.py")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"command": command, **data}, indent=2) + "\n")


if __name__ == "__main__":
    main()
