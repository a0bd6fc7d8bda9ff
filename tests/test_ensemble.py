"""DMC output ensembles (``train.py --ensemble``, ``agents.dmc.ensemble_state``): one network
whose value of every legal action is the mean of its members' values, written as a lab model
file that plays as ``dmc:PATH``; members that cannot be averaged are refused in one line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from dmc_networks import positions, random_dmc

from agents.dmc import BUNDLED_DMC, DMCAgent, ensemble_state, read_dmc_model
from agents.ppo import BUNDLED_MODEL
from odin_lab.files import write_model

ROOT = Path(__file__).resolve().parents[1]


def _network(net: list[int], seed: int, horizon: str = "hand", players=None):
    """A random DMC network of widths ``net``: ``(info, state)``."""
    return random_dmc(net, seed, players=players, horizon=horizon)


def _positions(players: int = 4, steps: int = 30):
    """Observations and masks of real positions (batched games, first legal actions)."""
    return positions(players, steps, batch=8, seed=3)


def test_the_ensemble_values_every_legal_action_at_the_mean_of_its_members():
    members = [read_dmc_model(BUNDLED_DMC), _network([64, 32, 16], 1), _network([32, 8, 48], 2)]
    info, state = ensemble_state(members)
    a, b, c = members[0][0]["architecture"]["net"]
    assert info["architecture"]["net"] == [a + 64 + 32, b + 32 + 8, c + 16 + 48]
    obs, masks = _positions()
    together = DMCAgent(state, info).values(obs, masks)
    # Each member as its network alone: an ensemble does not carry its members' labellings.
    each = [DMCAgent(s, {**i, "symmetries": 1}).values(obs, masks) for i, s in members]
    legal = masks.astype(bool)
    assert np.isneginf(together[~legal]).all()
    np.testing.assert_allclose(together[legal], np.mean(each, axis=0)[legal], rtol=1e-4, atol=1e-4)
    # The mean, not the sum or one member: the members disagree, and the ensemble's choices
    # are the mean's.
    assert not np.allclose(each[0][legal], each[1][legal], atol=1e-2)
    mean_choice = np.where(legal, np.mean(each, axis=0), -np.inf).argmax(1)
    assert (DMCAgent(state, info).act_batch(obs, masks) == mean_choice).mean() > 0.99


@pytest.mark.parametrize(
    ("other", "named"),
    [
        (_network([16, 16], 4), "member 1 has 2 layers, member 0 3: same depth only"),
        (_network([16, 16, 16], 4, horizon="win"), "values horizon 'win', member 0 'hand'"),
        (_network([16, 16, 16], 4, players=4), "member 1 plays players 4, member 0 None"),
    ],
)
def test_members_that_cannot_be_averaged_are_refused(other, named):
    with pytest.raises(ValueError, match=named):
        ensemble_state([_network([16, 16, 16], 3), other])


def _train_py(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "train.py", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_train_py_ensemble_writes_a_model_that_plays_as_the_mean(tmp_path):
    small = tmp_path / "small.safetensors"
    write_model(small, *reversed(_network([64, 32, 16], 5)))
    done = _train_py(
        "--runs-dir", tmp_path / "runs", "--name", "both", "--ensemble", BUNDLED_DMC, small
    )
    assert done.returncode == 0, done.stderr
    out = tmp_path / "runs" / "both" / "ensemble.safetensors"
    assert done.stdout.strip() == f"done: {out}"
    info, state = read_dmc_model(out)
    assert info["provenance"]["ensemble"] == [str(BUNDLED_DMC), str(small)]
    obs, masks = _positions(players=3, steps=10)
    alone = [read_dmc_model(path) for path in (BUNDLED_DMC, small)]
    values = [DMCAgent(s, {**i, "symmetries": 1}).values(obs, masks) for i, s in alone]
    expected = np.mean(values, 0)  # of the networks alone: the members' labellings are not kept
    legal = masks.astype(bool)
    got = DMCAgent(state, info).values(obs, masks)
    np.testing.assert_allclose(got[legal], expected[legal], rtol=1e-4, atol=1e-4)


SHALLOW = "shallow"
"""A member path in the cases below: a DMC network of another depth than the bundled one's."""


@pytest.mark.parametrize(
    ("job", "member", "named"),
    [
        ("--ensemble", BUNDLED_MODEL, "--ensemble: cannot load DMC model"),
        ("--ensemble", Path("nowhere.safetensors"), "--ensemble: no model at nowhere.safetensors"),
        ("--ensemble", SHALLOW, "--ensemble: member 1 has 2 layers, member 0 3: same depth only"),
        ("--average", SHALLOW, "--average: cannot average"),
        ("--average", Path("nowhere.safetensors"), "--average: no model at nowhere.safetensors"),
    ],
)
def test_train_py_combining_refuses_a_member_in_one_line_and_writes_nothing(
    job, member, named, tmp_path
):
    if member == SHALLOW:
        member = tmp_path / "shallow.safetensors"
        write_model(member, *reversed(_network([16, 16], 6)))
    done = _train_py("--runs-dir", tmp_path / "runs", "--name", "both", job, BUNDLED_DMC, member)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and named in lines[0], done.stderr
    assert not (tmp_path / "runs" / "both").exists()
