"""Same seed, same game: a stored playthrough of one seeded 4-player game against a fresh run.

``tests/data/playthrough_4p_seed0.txt`` holds, for every decision, the acting agent, the reward
``last()`` gave it, the text ``render()`` showed it and the action it took (random legal play
from ``numpy.random.default_rng(0)``), then the final totals. A change to the rules, the
seeding, the deal or the render shows up here as a diff. When such a change is intended,
regenerate the file from the repository root and review the diff before committing it::

    python -m tests.test_playthrough --regenerate
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np

import odin_env

DATA = Path(__file__).resolve().parent / "data" / "playthrough_4p_seed0.txt"
SEED = 0
SETTINGS = {"players": 4, "threshold": 15}


def playthrough(seed: int = SEED) -> str:
    """The text record of one seeded game with random legal actions."""
    environment = odin_env.env(render_mode="ansi", **SETTINGS)
    environment.reset(seed=seed)
    rng = np.random.default_rng(seed)
    lines = [f"# odin_env.env({', '.join(f'{k}={v}' for k, v in SETTINGS.items())}) seed {seed}"]
    step = 0
    for agent in environment.agent_iter():
        obs, reward, termination, truncation, _ = environment.last()
        if termination or truncation:
            lines.append(f"end {agent} reward {reward:g}")
            environment.step(None)
            continue
        legal = obs["action_mask"].view(bool).nonzero()[0]
        action = int(legal[rng.integers(len(legal))])
        lines.append(f"step {step} {agent} reward {reward:g} legal {len(legal)}")
        lines.append(environment.render())
        lines.append(f"action {action}")
        environment.step(action)
        step += 1
    game = environment.unwrapped.game
    lines.append(f"totals {' '.join(map(str, game.totals))}")
    lines.append(f"winners {' '.join(f'player_{s}' for s in game.winners)}")
    return "\n".join(lines) + "\n"


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as out:
            out.write(text)
        os.replace(temp, path)
    except BaseException:
        os.unlink(temp)
        raise


def test_seeded_playthrough_equals_the_stored_one() -> None:
    stored = DATA.read_text(encoding="utf-8").splitlines()
    fresh = playthrough().splitlines()
    for number, (old, new) in enumerate(zip(stored, fresh), start=1):
        assert new == old, f"{DATA.name} line {number} differs (regenerate only if intended)"
    assert len(fresh) == len(stored)


def test_playthrough_is_a_whole_game_with_a_winner() -> None:
    # The stored game must end by the threshold (R14), not by running out of decisions.
    lines = DATA.read_text(encoding="utf-8").splitlines()
    totals = [int(t) for t in lines[-2].split()[1:]]
    assert max(totals) >= SETTINGS["threshold"]
    winners = lines[-1].split()[1:]
    assert winners == [f"player_{s}" for s, t in enumerate(totals) if t == min(totals)]
    assert sum(line.startswith("end ") for line in lines) == SETTINGS["players"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--regenerate", action="store_true", help=f"rewrite {DATA.name}")
    args = parser.parse_args()
    if args.regenerate:
        write_atomically(DATA, playthrough())
        print(f"wrote {DATA}")
    else:
        print(playthrough(), end="")


if __name__ == "__main__":
    main()
