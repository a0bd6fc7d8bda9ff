"""The model a run trains: sb3-contrib's MaskablePPO with the legal-set policy and the run's
settings, optionally starting from the weights of a lab model file (``init``)."""

from __future__ import annotations

from typing import Any

import torch as th
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import VecEnv

from agents.ppo import read_model
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.policy import LegalSetPolicy


def build_model(config: TrainConfig, env: VecEnv, tensorboard: bool = True) -> Any:
    """A new MaskablePPO with the run's settings (and ``init`` weights when given)."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO(
        LegalSetPolicy,
        env,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        policy_kwargs={
            "net_arch": {"pi": list(config.net_pi), "vf": list(config.net_vf)},
            "activation_fn": th.nn.ReLU,
            **({"prior": config.prior} if config.prior else {}),
        },
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    if config.init:
        try:
            _, state = read_model(config.init)
            model.policy.load_state_dict({k: th.from_numpy(v.copy()) for k, v in state.items()})
        except (FileNotFoundError, ValueError, RuntimeError) as error:
            raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
    if tensorboard:
        model.set_logger(configure(str(config.run_dir / "tb"), ["tensorboard"]))
    return model


__all__ = ["build_model"]
