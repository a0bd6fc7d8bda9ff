"""Issue 57: pruning the lab changed no kept player. Every spec that stayed plays the same actions
on the same seeded deals as before the pruning: ``tests/data/kept_playthroughs.json`` holds digests
of seeded tournaments (1 deal, every rotation, at 2 and 4 players; 8 deals on the batched engine)
recorded at commit 282f95f, where ``search:48`` was spelled ``search:48:net:one``."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from odin_env.rules import Config
from odin_lab.evaluation.tournament import play_tournament

KEPT = json.loads((Path(__file__).parent / "data" / "kept_playthroughs.json").read_text())
SEED = KEPT["seed"]


def digest(records) -> str:
    """One hash of every game's deal, rotation, actions and final totals, in order."""
    h = hashlib.sha256()
    for r in records:
        h.update(json.dumps([r.deal, r.rotation, list(r.actions), list(r.totals)]).encode())
    return h.hexdigest()


@pytest.mark.parametrize("case", sorted(KEPT["single"]))
def test_kept_spec_plays_as_before(case: str) -> None:
    spec, _, players = case.rpartition("@")
    specs = [spec] + ["planner"] * (int(players) - 1)
    config = Config(players=int(players))
    records = play_tournament(specs, config, deals=1, seed=SEED, progress=False, engine="single")
    assert digest(records) == KEPT["single"][case]


@pytest.mark.parametrize("spec", sorted(KEPT["batched"]))
def test_kept_batched_form_plays_as_before(spec: str) -> None:
    specs = [spec, "planner", "shaper", "greedy"]
    records = play_tournament(
        specs, Config(players=4), deals=8, seed=SEED, progress=False, engine="batched"
    )
    assert digest(records) == KEPT["batched"][spec]
