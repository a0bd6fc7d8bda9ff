"""Deep Monte Carlo (DMC; Zha et al., DouZero, ICML 2021) as a learner of the run services:
:class:`DMCConfig` (its settings section, ``train.py --algo dmc``) and :class:`DMCLearner`.

The learner holds a Q-network (:class:`odin_lab.training.qnet.QNet`, the network
:class:`agents.dmc.DMCAgent` plays with numpy). Epsilon-greedy actors play ``selfplay_batch``
games in lockstep on the batched engine (:class:`odin_lab.training.dmc_collector.TableActors`),
the learner in the seats the same :class:`odin_lab.training.pool.OpponentPool` as PPO's gives it
(``self`` snapshots and ``learner`` = every seat included), all legal (row, action) pairs of a
step scored in one forward pass. Each :meth:`DMCLearner.train_step` plays until at least
``decisions_per_update`` learner decisions have their returns, then regresses (MSE, ``epochs``
passes of ``batch_size`` minibatches) ``Q(o, a)`` of each such decision onto its Monte Carlo
return: what its seat was paid from that decision to the end of its hand (``horizon`` hand, the
default: a game's later hands are new deals the decision does not choose) or of its episode
(``horizon`` episode, DouZero's return), credited as PPO's collector credits rewards. No
bootstrapping and no critic: the target is the outcome, as in DouZero. The settings that did not
pay (``horizon`` win, ``game_loss``, ``acting_symmetries``) are on docs/findings/dmc-settings.md.

With ``ray`` the actors are Ray actors (:mod:`odin_lab.training.dmc_actors`): the learner trains
on their batches as they arrive (or, ``synchronous``, on each actor's share in turn), on
``device``, and publishes its weights as numpy arrays after every update.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch as th

from odin_env.seeding import spawn_seed
from odin_env.symmetry import colour_relabellings, colours_in_play
from odin_lab.training.config import MAX_STEPS, TrainConfig
from odin_lab.training.dmc_actors import RayActors
from odin_lab.training.dmc_collector import HORIZONS, Finished, TableActors, check_tables
from odin_lab.training.learner import GAMES_STREAM, held_interrupts
from odin_lab.training.pool import SELF
from odin_lab.training.qnet import QNet, QSettings
from odin_lab.training.selfplay import episode_summary
from odin_lab.training.settings import (
    MAX_BATCH,
    MAX_DECISIONS,
    MAX_RATE,
    Retired,
    setting,
)

RELABEL = 5
"""Sub-stream of the games stream (``spawn_seed(seed, GAMES_STREAM, steps, RELABEL)``): the
labellings of ``relabel`` (the others: :data:`odin_lab.training.dmc_collector.EXPLORE` ...)."""
FINDINGS = "docs/findings/dmc-settings.md"


@dataclass
class DMCConfig(QSettings):
    """Deep Monte Carlo's settings (``train.py --algo dmc``): the Q-network's, then its own."""

    learning_rate: float = setting(1e-3, 0.0, MAX_RATE, above=True)
    """Step size of the optimizer."""
    batch_size: int = setting(256, 1, MAX_BATCH)
    """Minibatch size of the regression."""
    epochs: int = setting(1, 1, 1000)
    """Passes over each update's decisions."""
    decisions_per_update: int = setting(4096, 1, MAX_DECISIONS)
    """Learner decisions of finished episodes gathered before each update (an update trains on
    all it has then, at least this many)."""
    gamma: float = setting(1.0, 0.0, 1.0)
    """Discount per later decision of the same seat (1: the return of the episode)."""
    horizon: str = setting("hand", choices=HORIZONS)
    """Where a decision's return stops: ``hand`` (the end of the hand it was taken in, which
    pays the hand's penalty: later hands' deals, which the decision does not choose, only add
    noise; needs ``reward`` penalty) or ``episode`` (its end: DouZero's return)."""
    epsilon: float = setting(0.05, 0.0, 1.0)
    """Chance that an actor's decision is a uniformly random legal action (else the argmax of
    Q); with ``epsilon_start``, the rate it decays to."""
    epsilon_start: float | None = setting(None, 0.0, 1.0)
    """Exploration at step 0, falling linearly to ``epsilon`` over ``epsilon_decay_steps``
    (None: ``epsilon`` throughout)."""
    epsilon_decay_steps: int = setting(1_000_000, 1, MAX_STEPS)
    """Learner decisions over which ``epsilon_start`` falls to ``epsilon``."""
    relabel: bool = False
    """Regress each decision under a labelling of the colours in play drawn uniformly for it
    (:mod:`odin_env.symmetry`: the observation and the action relabelled alike, the target
    unchanged), so the network learns the symmetry that its player, reading a position under
    several labellings (a model's ``symmetries``), averages over. The actors play unrelabelled."""
    synchronous: bool = False
    """With ``ray``: every update waits for each actor's share, collected with the latest
    weights, and trains on them in actor order: reproducible for a seed and ``actors``, where
    the default (asynchronous: the actors play on while the learner trains) is not
    (docs/ray.md)."""

    RETIRED: ClassVar[dict[str, Retired]] = {
        "horizon": Retired(FINDINGS, values=("win",)),
        "game_loss": Retired(FINDINGS, kept=0.0),
        "acting_symmetries": Retired(FINDINGS, kept=1),
    }
    """What a run made before may hold that the lab no longer trains with."""

    def check(self, run: TrainConfig) -> None:
        """Raise ``ValueError`` naming the first setting that does not fit ``run`` (each
        setting's own range: :func:`odin_lab.training.settings.check_settings`)."""
        check_tables(self.other_tables, run)
        if self.horizon == "hand" and run.game.reward != "penalty":
            raise ValueError(
                "horizon hand needs reward penalty (a hand's end pays nothing with reward "
                f"{run.game.reward!r}); use horizon episode"
            )
        if run.ray is None and self.synchronous:
            raise ValueError("synchronous is a setting of Ray actors: add --ray [ADDRESS]")

    def exploration(self, steps: int) -> float:
        """Epsilon after ``steps`` learner decisions."""
        if self.epsilon_start is None:
            return float(self.epsilon)
        left = max(0.0, 1.0 - steps / self.epsilon_decay_steps)
        return float(self.epsilon + (self.epsilon_start - self.epsilon) * left)


class DMCLearner:
    """Deep Monte Carlo on the batched engine (see the module docstring): a
    :class:`odin_lab.training.learner.Learner`."""

    kind = "dmc"

    def __init__(self, config: TrainConfig):
        self.config, self.settings = config, config.algo_config
        self.qnet = QNet(config, self.settings, self.settings.learning_rate, self.settings.horizon)
        self.steps, self.n_updates, self.last_snapshot = 0, 0, 0
        self.actors: TableActors | None = None
        self.remote: RayActors | None = None
        self.snapshot_changes = 0
        """How many times the ``self`` snapshots changed in this process (Ray actors reload
        them when it moves)."""

    def warm_start(self, run_dir: Path, provenance: dict[str, Any]) -> dict[str, float]:
        """DMC has no warm start (``init`` weights are loaded when the learner is built)."""
        return {}

    def start(self) -> None:
        config, steps = self.config, self.steps
        self.qnet.start(config.seed, steps)
        self.relabel_rng = np.random.default_rng(
            spawn_seed(config.seed, GAMES_STREAM, steps, RELABEL)
        )
        settings = self.settings
        if config.ray is not None:
            self.remote = RayActors(config, steps, self.n_updates, self.qnet.info)
            if SELF in config.opponents and not self.qnet.snapshots:
                self.snapshot()
            else:
                self._publish()
            return
        self.actors = TableActors(
            config,
            settings.other_tables,
            steps,
            self.qnet.greedy,
            settings.gamma,
            settings.horizon,
        )
        if SELF in config.opponents and not self.qnet.snapshots:
            self.snapshot()
        else:
            self.actors.set_snapshots(self.qnet.snapshots)

    def train_step(self) -> dict[str, float]:
        settings = self.settings
        epsilon = settings.exploration(self.steps)
        if self.remote is not None:
            batch, sources = self.remote.collect(self.n_updates, epsilon)
        else:
            collector = self.actors.turn(self.n_updates)
            batch = collector.collect(settings.decisions_per_update, epsilon)
        with held_interrupts():
            figures = self._update(batch)
            self.steps += len(batch)
            self.n_updates += 1
            if self.remote is not None:
                self._publish()
                lag = [self.n_updates - 1 - version for _, version in sources]
                figures["ray/weights_lag"] = float(np.mean(lag))
                figures["ray/actors_replaced"] = float(self.remote.replaced)
        figures.update(episode_summary(batch.episodes))
        figures["train/epsilon"] = epsilon
        figures["train/mean_return"] = float(batch.returns.mean())
        return figures

    def _update(self, batch: Finished) -> dict[str, float]:
        """``epochs`` passes of minibatch regressions of Q onto the returns."""
        qnet, settings = self.qnet, self.settings
        obs, actions = batch.obs, batch.actions
        if settings.relabel:
            obs, actions = self.relabelled(obs, actions)
        obs = th.as_tensor(obs, device=qnet.device)
        actions = th.as_tensor(actions, device=qnet.device)
        returns = th.as_tensor(batch.returns, device=qnet.device)
        if qnet.refit_head and self.n_updates == 0:  # an init network of another horizon
            qnet.refit(obs, actions, returns)
        picks = qnet.passes(len(batch), settings.batch_size, settings.epochs)
        loss = qnet.regress(obs, actions, returns, picks)
        return {"train/q_loss": loss, "train/decisions": float(len(batch))}

    def relabelled(self, obs: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the decisions ``(obs, actions)``, each under a labelling of its colours in
        play drawn uniformly from all of them (the identity among them) by ``relabel_rng``."""
        colours = colours_in_play(obs)
        obs, actions = obs.copy(), actions.copy()
        for count in np.unique(colours):
            rows = np.flatnonzero(colours == count)
            obs_maps, action_maps = colour_relabellings(int(count), math.factorial(int(count)))
            pick = self.relabel_rng.integers(len(obs_maps), size=len(rows))
            obs[rows] = np.take_along_axis(obs[rows], obs_maps[pick], axis=1)
            actions[rows] = action_maps[pick, actions[rows]]
        return obs, actions

    def snapshot(self) -> None:
        snapshots = self.qnet.snapshot(self.config.max_snapshots)
        self.last_snapshot = self.steps
        if self.actors is not None:
            self.actors.set_snapshots(snapshots)
        if self.remote is not None:
            self.snapshot_changes += 1
            self._publish()

    def _publish(self) -> None:
        """The current weights (version: the update count) and snapshots to the Ray actors."""
        self.remote.publish(
            self.n_updates, self.qnet.state(), self.qnet.snapshots, self.snapshot_changes
        )

    def write_player(self, path: Path, provenance: dict[str, Any]) -> Path:
        return self.qnet.write(path, provenance)

    def checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        tensors, entries = self.qnet.checkpoint()
        run = {"n_updates": self.n_updates, "last_snapshot": self.last_snapshot, **entries}
        return tensors, self.qnet.info, run

    def load_checkpoint(self, tensors: dict[str, Any], run: dict[str, Any]) -> None:
        self.qnet.load(tensors, run)
        self.steps = int(run["step"])
        self.n_updates = int(run.get("n_updates", 0))
        self.last_snapshot = int(run.get("last_snapshot", 0))

    def close(self) -> None:
        self.actors = None
        if self.remote is not None:
            self.remote.close()
            self.remote = None


__all__ = ["FINDINGS", "RELABEL", "DMCConfig", "DMCLearner"]
