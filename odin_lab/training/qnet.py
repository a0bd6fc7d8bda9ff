"""The Q-network that deep Monte Carlo (:mod:`odin_lab.training.dmc`) and expert iteration
(:mod:`odin_lab.training.exit`) train, written once: each of their learners holds a
:class:`QNet` (the network, its optimizer, the minibatch regression, the frozen copies that are
the ``self`` opponents, and the checkpoint's tensors of all of them) and declares its settings
on :class:`QSettings`.

:class:`QNetwork` scores (observation, action) pairs, the action given by its row of the lab's
shared action features, so one network handles any legal set; :class:`agents.dmc.DMCAgent`
plays the same network with numpy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from agents.base import argmax_by_row, legal_pairs
from agents.dmc import ALGO, DMCAgent, dmc_info, read_dmc_model, value_horizon
from agents.features import ACTION_FEATURES, NUM_ACTION_FEATURES
from odin_env.observation import OBS_SIZE
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS
from odin_env.seeding import spawn_seed
from odin_lab.files import write_model
from odin_lab.training.checkpoints import load_optimizer, optimizer_arrays
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.dmc_collector import table_sizes
from odin_lab.training.learner import GAMES_STREAM, device_of
from odin_lab.training.pool import SELF
from odin_lab.training.settings import MAX_COEF, MAX_LAYERS, MAX_WIDTH, setting

OPTIMIZERS = ("adam", "rmsprop")
SHUFFLE, INIT = 2, 3
"""Sub-streams of the games stream (``spawn_seed(seed, GAMES_STREAM, steps, KEY)``): the
minibatches' order and (at step 0) the network's initial weights."""


@dataclass
class QSettings:
    """The settings every learner of a :class:`QNet` shares (each declares its own optimizer
    step, minibatch and passes): the network, its optimizer and the table sizes it plays."""

    net: list[int] = setting([256, 256, 128], 1, MAX_WIDTH, length=(1, MAX_LAYERS))
    """Hidden layers of the Q-network (its input: the observation and the action's features)."""
    optimizer: str = setting("adam", choices=OPTIMIZERS)
    """adam, or rmsprop (DouZero's: alpha 0.99, eps 1e-5)."""
    max_grad_norm: float = setting(40.0, 0.0, MAX_COEF, above=True)
    """Gradients are clipped to this norm (DouZero's 40)."""
    other_tables: list[int] = setting(
        [], MIN_PLAYERS, MAX_PLAYERS, length=(0, MAX_PLAYERS - MIN_PLAYERS + 1)
    )
    """Other table sizes (numbers of players) the learner also plays: one update at each size in
    turn, the game's ``players`` first, so one network learns every listed size (the
    observation says the size). Evaluations play the game's ``players``. Empty: that size
    alone."""


class QNetwork(th.nn.Module):
    """``Q(o, a)`` (see :mod:`agents.dmc` for the layers; the tensors' names are
    :data:`agents.dmc.TENSORS`)."""

    def __init__(self, net: list[int]):
        super().__init__()
        self.state_in = th.nn.Linear(OBS_SIZE, net[0])
        self.action_in = th.nn.Linear(NUM_ACTION_FEATURES, net[0], bias=False)
        self.hidden = th.nn.ModuleList(th.nn.Linear(a, b) for a, b in zip(net, net[1:]))
        self.q = th.nn.Linear(net[-1], 1)
        # The shared table, not a parameter and not saved: the player has its own copy.
        self.register_buffer("features", th.from_numpy(ACTION_FEATURES.copy()), persistent=False)

    def forward(
        self, obs: th.Tensor, actions: th.Tensor, rows: th.Tensor | None = None
    ) -> th.Tensor:
        """Q of each pair ``(obs[rows[k]], actions[k])`` (``rows`` None: pair ``k`` is row
        ``k``): ``(P,)``."""
        z = self.state_in(obs)
        z = z if rows is None else z[rows]
        z = th.relu(z + self.action_in(self.features[actions]))
        for layer in self.hidden:
            z = th.relu(layer(z))
        return self.q(z).squeeze(-1)


class QNet:
    """A :class:`QNetwork` with its optimizer on the run's device, seeded from the run's seed
    (or loaded from ``config.init``, a DMC model file), whose values estimate ``horizon``; the
    ``self`` snapshots are frozen :class:`agents.dmc.DMCAgent` copies of it.

    An init network of another horizon values in other units: :attr:`refit_head` says that its
    head is to be refitted (:meth:`refit`) to the first update's targets before that update."""

    def __init__(
        self, config: TrainConfig, settings: QSettings, learning_rate: float, horizon: str
    ):
        th.set_num_threads(config.torch_threads)
        self.device = th.device(device_of(config))
        with th.random.fork_rng(devices=[]):
            th.manual_seed(spawn_seed(config.seed, GAMES_STREAM, 0, INIT))
            self.net = QNetwork(list(settings.net))
        self.refit_head = False
        if config.init:
            try:
                info, state = read_dmc_model(config.init)
                self.net.load_state_dict({k: th.from_numpy(v.copy()) for k, v in state.items()})
            except (FileNotFoundError, ValueError, RuntimeError) as error:
                raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
            self.refit_head = value_horizon(info) != horizon
        self.net.to(self.device)
        if settings.optimizer == "rmsprop":
            self.optimizer: th.optim.Optimizer = th.optim.RMSprop(
                self.net.parameters(), lr=learning_rate, alpha=0.99, eps=1e-5
            )
        else:
            self.optimizer = th.optim.Adam(self.net.parameters(), lr=learning_rate)
        self.max_grad_norm = settings.max_grad_norm
        sizes = table_sizes(settings.other_tables, config)
        self.info = dmc_info(settings.net, sizes[0] if len(sizes) == 1 else None, horizon=horizon)
        """The ``model`` metadata of its players (docs/model-format.md)."""
        self.snapshots: list[DMCAgent] = []
        self.shuffle = th.Generator()

    def start(self, seed: int, steps: int) -> None:
        """Seed the minibatches' order of a run (of ``seed``) going on from ``steps``."""
        self.shuffle = th.Generator().manual_seed(spawn_seed(seed, GAMES_STREAM, steps, SHUFFLE))

    def pair_values(self, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """Q of each pair ``(obs[rows[k]], actions[k])``, without gradients."""
        device = self.device
        with th.no_grad():
            q = self.net(
                th.as_tensor(obs, device=device),
                th.as_tensor(actions, device=device),
                th.as_tensor(rows, device=device),
            )
        return q.cpu().numpy()

    def greedy(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The legal action of highest Q for each row (ties: the lowest index, as the numpy
        player), all legal pairs scored in one forward pass."""
        rows, actions = legal_pairs(mask)
        return argmax_by_row(rows, actions, self.pair_values(obs, rows, actions))

    def passes(self, count: int, batch_size: int, epochs: int) -> list[th.Tensor]:
        """The minibatches of ``epochs`` passes over ``count`` items, each pass in an order of
        its own (drawn from :attr:`shuffle`)."""
        orders = [th.randperm(count, generator=self.shuffle) for _ in range(epochs)]
        return [
            order[at : at + batch_size] for order in orders for at in range(0, count, batch_size)
        ]

    def regress(
        self,
        obs: th.Tensor,
        actions: th.Tensor,
        targets: th.Tensor,
        picks: Iterable[th.Tensor],
        rows: th.Tensor | None = None,
    ) -> float:
        """One optimizer step per minibatch of pair indices in ``picks``: the mean squared error
        of Q of those pairs (``rows``: as :meth:`QNetwork.forward`'s) to their ``targets``,
        gradients clipped to ``max_grad_norm``; return the mean loss."""
        losses = []
        self.net.train()
        for pick in picks:
            pick = pick.to(self.device)
            # The minibatch's observations only: a replay holds far more than one minibatch.
            seen = obs[pick] if rows is None else obs[rows[pick]]
            loss = th.nn.functional.mse_loss(self.net(seen, actions[pick]), targets[pick])
            self.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(self.net.parameters(), self.max_grad_norm)
            self.optimizer.step()
            losses.append(float(loss.detach()))
        self.net.eval()
        return float(np.mean(losses))

    def refit(
        self,
        obs: th.Tensor,
        actions: th.Tensor,
        targets: th.Tensor,
        rows: th.Tensor | None = None,
    ) -> None:
        """Map the network's values affinely, ``a * Q + b`` with ``a > 0`` (the least-squares fit
        of ``targets`` on ``Q``; where they do not rise together, ``a`` matches their spreads),
        by rescaling the last layer: the actions' order, and so the player, stay as they were,
        and the first updates fit the new targets without tearing down the features an init
        network of another horizon brings. Clears :attr:`refit_head`."""
        with th.no_grad():
            q = self.net(obs, actions, rows).double()
            target = targets.double()
            spread = q.var(unbiased=False)
            slope = ((q - q.mean()) * (target - target.mean())).mean() / spread
            if not bool(th.isfinite(slope)) or slope <= 0:
                slope = target.std(unbiased=False) / spread.sqrt()
            if not bool(th.isfinite(slope)) or slope <= 0:
                slope = th.tensor(1.0, dtype=th.float64)
            shift = target.mean() - slope * q.mean()
            head = self.net.q
            head.bias.copy_(slope * head.bias.double() + shift)
            head.weight.mul_(slope)
        self.refit_head = False

    def state(self) -> dict[str, np.ndarray]:
        """The network's arrays (a copy), by their names."""
        return {k: v.detach().cpu().numpy().copy() for k, v in self.net.state_dict().items()}

    def player(self, name: str = ALGO) -> DMCAgent:
        """The network as it is now, as a numpy player."""
        return DMCAgent(self.state(), self.info, name)

    def write(self, path: Path, provenance: dict[str, Any]) -> Path:
        """Write the network as a DMC model file (docs/model-format.md); return ``path``."""
        return write_model(path, self.state(), {**self.info, "provenance": provenance})

    def snapshot(self, keep: int) -> list[DMCAgent]:
        """Add a frozen copy of the network to the snapshots, which keep the last ``keep``;
        return them."""
        self.snapshots = [*self.snapshots, self.player(SELF)][-keep:]
        return self.snapshots

    def checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """The checkpoint's tensors of the network (``policy/``), its optimizer and its
        snapshots, and its run entries (``snapshots``, ``optimizer``)."""
        tensors = {f"policy/{k}": v for k, v in self.state().items()}
        arrays, optimizer = optimizer_arrays(self.optimizer)
        tensors.update(arrays)
        for k, snap in enumerate(self.snapshots):
            for name, value in snap.arrays.items():
                tensors[f"snapshot/{k}/{name}"] = value
        return tensors, {"snapshots": len(self.snapshots), "optimizer": optimizer}

    def load(self, tensors: dict[str, Any], run: dict[str, Any]) -> None:
        """Restore what :meth:`checkpoint` saved."""
        prefix = "policy/"
        weights = {
            k[len(prefix) :]: th.from_numpy(np.array(v))
            for k, v in tensors.items()
            if k.startswith(prefix)
        }
        self.net.load_state_dict(weights)
        load_optimizer(self.optimizer, tensors, run["optimizer"])
        self.snapshots = [
            DMCAgent({n: np.array(tensors[f"snapshot/{k}/{n}"]) for n in weights}, self.info, SELF)
            for k in range(int(run.get("snapshots", 0)))
        ]


__all__ = ["INIT", "OPTIMIZERS", "SHUFFLE", "QNet", "QNetwork", "QSettings"]
