"""Random DMC networks and real positions for the tests of DMC players (ensembles, colour
labellings)."""

from __future__ import annotations

import numpy as np

from agents.dmc import dmc_info
from agents.features import NUM_ACTION_FEATURES
from odin_env.batched import BatchedGames
from odin_env.observation import OBS_SIZE
from odin_env.rules import Config


def random_dmc(net: list[int], seed: int, scale: float = 0.3, players=None, **info) -> tuple:
    """A random DMC network of widths ``net`` (normal weights of std ``scale``): ``(info,
    state)``; ``info``: more of :func:`agents.dmc.dmc_info`'s arguments (``horizon``,
    ``symmetries``)."""
    rng = np.random.default_rng(seed)
    sizes = {
        "state_in.weight": (net[0], OBS_SIZE),
        "state_in.bias": (net[0],),
        "action_in.weight": (net[0], NUM_ACTION_FEATURES),
        "q.weight": (1, net[-1]),
        "q.bias": (1,),
    }
    for i, (a, b) in enumerate(zip(net, net[1:])):
        sizes[f"hidden.{i}.weight"], sizes[f"hidden.{i}.bias"] = (b, a), (b,)
    state = {k: rng.normal(0, scale, size).astype(np.float32) for k, size in sizes.items()}
    return dmc_info(net, players, **info), state


def positions(players: int, steps: int, batch: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of real positions: ``batch`` games at a table of ``players``, each
    playing its first legal action, ``steps`` times."""
    games = BatchedGames(Config(players=players), batch=batch, seed=seed)
    obs, masks = [], []
    for _ in range(steps):
        obs.append(games.obs.copy())
        masks.append(games.mask.copy())
        games.step(games.first_legal)
    return np.concatenate(obs), np.concatenate(masks)
