"""PPO (sb3-contrib's MaskablePPO update, the lab's legal-set policy) as a learner of the run
services: :class:`PPOConfig` (its settings section, ``train.py --algo ppo``) and
:class:`PPOLearner`.

Each :meth:`PPOLearner.train_step` collects ``n_steps x n_envs`` learner decisions (rounded up
to whole engine steps) on ``selfplay_batch`` games of the batched engine
(:class:`odin_lab.training.collector.SelfPlayCollector`, or Ray actors with ``ray``) and runs
one PPO update on them (:func:`odin_lab.training.selfplay.rollout_update`). The warm start is
an optional imitation of a heuristic (``imitate``); ``prior`` makes the policy a residual over a
heuristic. The played model is the actor alone, run with numpy (:class:`agents.ppo.PPOAgent`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch as th
from stable_baselines3.common.logger import Logger

from agents.model_file import model_info
from agents.ppo import NumpyPolicy, check_prior
from odin_env.batched import BatchedGames
from odin_env.seeding import spawn_seed
from odin_lab.files import write_model
from odin_lab.training.checkpoints import load_optimizer, optimizer_arrays
from odin_lab.training.collector import SelfPlayCollector
from odin_lab.training.config import TrainConfig
from odin_lab.training.imitation import imitate
from odin_lab.training.learner import GAMES_STREAM, POOL_STREAM
from odin_lab.training.model import build_model
from odin_lab.training.policy import CRITICS, snapshot
from odin_lab.training.pool import LEARNER, SELF, OpponentPool
from odin_lab.training.selfplay import rollout_update
from odin_lab.training.settings import (
    MAX_BATCH,
    MAX_COEF,
    MAX_DECISIONS,
    MAX_LAYERS,
    MAX_RATE,
    MAX_WIDTH,
    setting,
)

IMITATION = "imitation.safetensors"
"""The policy after the imitation warm start, before any PPO step."""


@dataclass
class PPOConfig:
    """PPO's settings (``train.py --algo ppo``)."""

    n_envs: int = setting(4, 1, 4096)
    """With ``n_steps``, sizes the rollout: ``n_steps x n_envs`` learner decisions per update."""
    n_steps: int = setting(1024, 1, MAX_DECISIONS)
    """Steps per rollout and per env (see ``n_envs``)."""
    batch_size: int = setting(1024, 1, MAX_BATCH)
    """Minibatch size of the PPO update."""
    n_epochs: int = setting(4, 1, 1000)
    """Passes over each rollout."""
    learning_rate: float = setting(1e-3, 0.0, MAX_RATE, above=True)
    """Adam step size."""
    gamma: float = setting(0.995, 0.0, 1.0)
    """Discount per learner decision."""
    gae_lambda: float = setting(0.95, 0.0, 1.0)
    """GAE lambda."""
    clip_range: float = setting(0.2, 0.0, MAX_COEF, above=True)
    """PPO clip range."""
    ent_coef: float = setting(0.01, 0.0, MAX_COEF)
    """Entropy bonus weight."""
    vf_coef: float = setting(0.5, 0.0, MAX_COEF)
    """Value loss weight."""
    net_pi: list[int] = setting([256, 128], 1, MAX_WIDTH, length=(1, MAX_LAYERS))
    """Hidden layers of the actor."""
    net_vf: list[int] = setting([256, 128], 1, MAX_WIDTH, length=(1, MAX_LAYERS))
    """Hidden layers of the critic."""
    imitate: str | None = None
    """Warm start: before PPO, fit the policy (and value) to this agent's play (e.g. planner)."""
    prior: str | None = None
    """A residual policy over this heuristic: the policy adds a learned bonus to the
    heuristic's choice at every decision, so it starts as that heuristic and learns where to
    depart from it (see :mod:`odin_lab.training.policy`)."""
    imitate_games: int = setting(1000, 1, 10**6)
    """Games of the imitated agent against itself used for the warm start."""
    imitate_epochs: int = setting(4, 1, 1000)
    """Passes over the imitation data."""

    SPEC_FIELDS: ClassVar[tuple[str, ...]] = ("imitate",)
    """The settings that hold an agent spec (checked before a resume builds any:
    :func:`odin_lab.training.config.specs_in`)."""
    critic: str = setting("observation", choices=CRITICS)
    """What the value network reads: ``observation`` (the learner's) or ``full`` (also every
    other hand and the cards set aside, in training only: the actor, and so the played model,
    reads the observation alone; PerfectDou)."""

    def check(self, run: TrainConfig) -> None:
        """Raise ``ValueError`` naming the first setting that does not fit the others (each
        setting's own range: :func:`odin_lab.training.settings.check_settings`)."""
        rollout = self.n_steps * self.n_envs
        if rollout > MAX_DECISIONS:
            raise ValueError(
                f"n_steps x n_envs must be an integer 1-{MAX_DECISIONS:,}; got {rollout:,}"
            )
        check_prior(self.prior)
        if self.critic == "full" and self.imitate:
            raise ValueError(
                "imitate reads recorded games, which hold no hidden state: use "
                "critic 'observation' with imitate, or train critic 'full' --init "
                "from the imitated model"
            )


class PPOLearner:
    """PPO on the batched engine (see the module docstring): a
    :class:`odin_lab.training.learner.Learner`."""

    kind = "ppo"

    def __init__(self, config: TrainConfig):
        th.set_num_threads(config.torch_threads)
        self.config, self.settings = config, config.algo_config
        self.model = build_model(config)
        # The update records its figures here; train_step hands them to the run's log.
        self.model.set_logger(Logger(folder=None, output_formats=[]))
        self.snapshots: list[NumpyPolicy] = []
        self.last_snapshot = 0
        self.collector: Any = None
        self._ray = False

    @property
    def steps(self) -> int:
        return int(self.model.num_timesteps)

    def warm_start(self, run_dir: Path, provenance: dict[str, Any]) -> dict[str, float]:
        """``imitate``: fit the policy to that agent's play and keep it as
        ``imitation.safetensors``."""
        if not self.settings.imitate:
            return {}
        figures = imitate(self.model, self.config)
        self.write_player(run_dir / IMITATION, provenance)
        return figures

    def start(self) -> None:
        config, steps = self.config, self.steps
        pool: Any = None
        if config.ray is not None:
            from odin_lab.training.actors import RayCollector

            # Actor k's streams: sub-streams k of the run's; a resumed run deals new games.
            seeds = [
                (
                    spawn_seed(config.seed, GAMES_STREAM, steps, k),
                    spawn_seed(config.seed, POOL_STREAM, steps, k),
                )
                for k in range(config.actors)
            ]
            pool = self.collector = RayCollector(self.model, config, seeds)
            self._ray = True
        elif config.opponents != [LEARNER]:
            seed = spawn_seed(config.seed, POOL_STREAM, steps)
            pool = OpponentPool(config.opponents, config.game.players, config.seat, seed)
        self.pool = pool
        if SELF in config.opponents and not self.snapshots:
            self.snapshot()
        elif self.snapshots and pool is not None:
            pool.set_snapshots(self.snapshots)
        seed = spawn_seed(config.seed, GAMES_STREAM, steps)
        self.model.set_random_seed(seed % 2**32)  # SB3 seeds numpy's legacy 32-bit generator
        if not self._ray:
            games = BatchedGames(config.game, config.selfplay_batch, seed=seed)
            self.collector = SelfPlayCollector(self.model, games, pool)
        rollout = self.settings.n_steps * self.settings.n_envs
        self._per_rollout = -(-rollout // self.collector.batch) * self.collector.batch

    def train_step(self) -> dict[str, float]:
        while True:
            done = rollout_update(
                self.model, self.collector, self._per_rollout, self.config.total_steps
            )
            if done is not None:
                break
        rollout, entry, _ = done
        figures = {(k if "/" in k else f"charts/{k}"): v for k, v in entry.items() if k != "step"}
        figures.pop("charts/decisions", None)
        logger = self.model.logger
        figures.update({k: float(v) for k, v in logger.name_to_value.items()})
        logger.dump()  # clears it: there is no output format
        return figures

    def snapshot(self) -> None:
        snap = snapshot(self.model.policy, deterministic=False, name=SELF)
        self.snapshots = [*self.snapshots, snap][-self.config.max_snapshots :]
        self.last_snapshot = self.steps
        if self.pool is not None:
            self.pool.set_snapshots(self.snapshots)

    def info(self) -> dict[str, Any]:
        """The ``model`` metadata of the current policy (docs/model-format.md)."""
        return policy_info(self.model.policy, self.config.game.players)

    def write_player(self, path: Path, provenance: dict[str, Any]) -> Path:
        return write_policy(self.model, path, self.config.game.players, provenance)

    def checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        tensors = {f"policy/{k}": _numpy(v) for k, v in self.model.policy.state_dict().items()}
        arrays, optimizer = optimizer_arrays(self.model.policy.optimizer)
        tensors.update(arrays)
        for k, snap in enumerate(self.snapshots):
            for i, (w, b) in enumerate(snap.layers):
                tensors[f"snapshot/{k}/w{i}"], tensors[f"snapshot/{k}/b{i}"] = w, b
        run = {
            "n_updates": int(getattr(self.model, "_n_updates", 0)),
            "last_snapshot": self.last_snapshot,
            "snapshots": [
                [len(s.layers), s.activation, s.prior, s.prior_weight] for s in self.snapshots
            ],
            "optimizer": optimizer,
        }
        return tensors, self.info(), run

    def load_checkpoint(self, tensors: dict[str, Any], run: dict[str, Any]) -> None:
        policy = self.model.policy
        weights = {
            k[len("policy/") :]: _tensor(v) for k, v in tensors.items() if k.startswith("policy/")
        }
        policy.load_state_dict(weights)
        load_optimizer(policy.optimizer, tensors, run["optimizer"])
        self.model.num_timesteps = int(run["step"])
        self.model._n_updates = int(run.get("n_updates", 0))
        self.last_snapshot = int(run.get("last_snapshot", 0))
        self.snapshots = read_snapshots(run, tensors)

    def close(self) -> None:
        if self._ray and self.collector is not None:
            self.collector.close()
        self.collector = None


def policy_info(policy: Any, players: int | None = None) -> dict[str, Any]:
    """The ``model`` metadata of a live :class:`odin_lab.training.policy.LegalSetPolicy`
    (``architecture.critic`` only for the full critic, which the played actor never reads)."""
    arch = policy.net_arch if isinstance(policy.net_arch, dict) else {}
    info = model_info(
        arch.get("pi", []),
        arch.get("vf", []),
        policy.activation_fn.__name__,
        getattr(policy, "action_features", False),
        getattr(policy, "prior", None),
        players,
    )
    if getattr(policy, "critic", "observation") != "observation":
        info["architecture"]["critic"] = policy.critic
    return info


def write_policy(
    model: Any, path: str | Path, players: int | None = None, provenance: dict | None = None
) -> Path:
    """Write a live model's policy as a lab model file (no optimizer state), atomically."""
    info = {**policy_info(model.policy, players), "provenance": provenance or {}}
    return write_model(path, model.policy.state_dict(), info)


def read_snapshots(run: dict[str, Any], tensors: dict[str, Any]) -> list[NumpyPolicy]:
    """The ``self`` snapshots a PPO checkpoint holds."""
    return [
        NumpyPolicy(
            [
                (_numpy(tensors[f"snapshot/{k}/w{i}"]), _numpy(tensors[f"snapshot/{k}/b{i}"]))
                for i in range(count)
            ],
            activation,
            deterministic=False,
            name=SELF,
            prior=prior,
            prior_weight=weight,
        )
        for k, (count, activation, prior, weight) in enumerate(run.get("snapshots", []))
    ]


def _numpy(value: Any) -> np.ndarray:
    return value.detach().cpu().numpy() if isinstance(value, th.Tensor) else np.asarray(value)


def _tensor(value: Any) -> th.Tensor:
    return value if isinstance(value, th.Tensor) else th.from_numpy(np.array(value))


__all__ = [
    "IMITATION", "PPOConfig", "PPOLearner", "policy_info", "read_snapshots", "write_policy",
]  # fmt: skip
