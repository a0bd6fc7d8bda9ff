"""Environments for training: ``SingleAgentEnv`` in subprocesses (the ``subproc`` engine), and
the spaces-only env that gives a batched run's model its spaces.

Masks travel in each step's ``info``, so the trainer does not query every subprocess for them
(:class:`MasksFromInfo`).
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Sequence
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecEnvWrapper

from odin_env.seeding import spawn_seed
from odin_env.single_agent import SingleAgentEnv
from odin_lab.training.config import TrainConfig
from odin_lab.training.policy import prior_space
from odin_lab.training.pool import OpponentPool


class PoolEnv(SingleAgentEnv):
    """A ``SingleAgentEnv`` whose opponents are an :class:`OpponentPool`; ``set_snapshots``
    reaches the pool through ``VecEnv.env_method``."""

    def set_snapshots(self, snapshots: Sequence[Any]) -> None:
        """Replace the pool's ``self`` snapshots."""
        self.opponents.set_snapshots(snapshots)


class _EnvFactory:
    """Builds one environment inside its worker (picklable, unlike a closure over the config)."""

    def __init__(self, config: TrainConfig, seed: int):
        self.config, self.seed = config, seed

    def __call__(self) -> PoolEnv:
        config = self.config
        th.set_num_threads(config.torch_threads)
        # Ctrl-C goes to the whole process group: the trainer saves a checkpoint, so the
        # workers must keep serving until it closes them.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        pool = OpponentPool(
            config.opponents, config.game.players, config.seat, self.seed, batched=False
        )
        return PoolEnv(config.game, opponents=pool, seat=config.seat, illegal="raise")


class MasksFromInfo(VecEnvWrapper):
    """Answers MaskablePPO's per-step ``env_method("action_masks")`` from the masks the
    environments already sent in their step (or reset) ``info``: one round trip per step to the
    subprocesses instead of two."""

    def __init__(self, venv: VecEnv):
        super().__init__(venv)
        self.masks: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        self.masks = np.stack([info["action_mask"] for info in self.venv.reset_infos])
        return obs

    def step_wait(self):  # noqa: ANN201 - VecEnv's own signature
        obs, rewards, dones, infos = self.venv.step_wait()
        resets = self.venv.reset_infos
        self.masks = np.stack(
            [
                (resets[i] if done else info)["action_mask"]
                for i, (done, info) in enumerate(zip(dones, infos))
            ]
        )
        return obs, rewards, dones, infos

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list:
        if method_name == "action_masks" and self.masks is not None and not args and not kwargs:
            return list(self.masks[self.venv._get_indices(indices)])
        return self.venv.env_method(method_name, *args, indices=indices, **kwargs)


def make_vec_env(config: TrainConfig, seed: int) -> MasksFromInfo:
    """``n_envs`` environments (subprocesses when more than one); environment ``i`` and its
    opponent pool are seeded from sub-streams ``i`` of ``seed``."""
    factories = [_EnvFactory(config, spawn_seed(seed, i, 1)) for i in range(config.n_envs)]
    venv: VecEnv
    if config.n_envs == 1:
        venv = DummyVecEnv(factories)
    else:
        # forkserver: forking a process that already runs torch threads is unsafe.
        venv = SubprocVecEnv(factories, start_method="forkserver")
    venv.seed(seed)  # SB3 seeds environment i with seed + i
    return MasksFromInfo(venv)


def spaces_env(config: TrainConfig) -> DummyVecEnv:
    """One in-process ``SingleAgentEnv`` of the run's game: it gives the batched engine's model
    its observation and action spaces (and a loaded checkpoint its env); it is never stepped."""

    def make() -> gym.Env:
        env = SingleAgentEnv(config.game)
        if config.prior is not None:
            # The policy also reads the prior's action: only the space changes (never stepped).
            env = gym.wrappers.TransformObservation(env, lambda o: o, prior_space())
        return env

    return DummyVecEnv([make])


def close_vec_env(venv: VecEnv, timeout: float = 10.0) -> None:
    """Close the environments, also after an interrupt in the middle of a step; never hangs.

    Ctrl-C inside ``SubprocVecEnv.step_wait`` (or ``env_method``) can leave some workers'
    replies read and others not; SB3's ``close`` would then wait for a reply that was already
    read. Here each worker is told to close, given ``timeout`` seconds, and terminated if it is
    still alive then."""
    inner = venv.venv if isinstance(venv, VecEnvWrapper) else venv
    if not isinstance(inner, SubprocVecEnv):
        venv.close()
        return
    if inner.closed:
        return
    inner.waiting = False
    for remote in inner.remotes:
        with contextlib.suppress(OSError):  # that worker is gone already (broken pipe)
            remote.send(("close", None))
    for process in inner.processes:
        process.join(timeout)
        if process.is_alive():
            process.terminate()
            process.join(timeout)
    inner.closed = True


__all__ = ["MasksFromInfo", "PoolEnv", "close_vec_env", "make_vec_env", "spaces_env"]
