"""PPO's model: sb3-contrib's MaskablePPO with the legal-set policy and the run's settings,
optionally starting from the weights of a lab model file (``init``). The model is trained on
the batched engine (:mod:`odin_lab.training.ppo`); SB3 only holds the policy, its optimizer and
the update's settings, so its env is a spaces-only one that is never stepped."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import torch as th
from stable_baselines3.common.vec_env import DummyVecEnv

from agents.model_file import read_model
from odin_env.single_agent import SingleAgentEnv
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.learner import device_of
from odin_lab.training.policy import LegalSetPolicy, observation_space


def spaces_env(config: TrainConfig) -> DummyVecEnv:
    """One in-process ``SingleAgentEnv`` of the run's game: it gives the model its observation
    and action spaces; it is never stepped."""

    ppo = config.algo_config

    def make() -> gym.Env:
        env = SingleAgentEnv(config.game)
        if ppo.prior is not None or ppo.critic != "observation":
            # The policy also reads the prior's action or the hidden state: only the space
            # changes (the env is never stepped).
            space = observation_space(ppo.prior, ppo.critic)
            env = gym.wrappers.TransformObservation(env, lambda o: o, space)
        return env

    return DummyVecEnv([make])


def build_model(config: TrainConfig) -> Any:
    """A new MaskablePPO with the run's settings (and ``init`` weights when given)."""
    from sb3_contrib import MaskablePPO

    ppo = config.algo_config
    model = MaskablePPO(
        LegalSetPolicy,
        spaces_env(config),
        learning_rate=ppo.learning_rate,
        n_steps=ppo.n_steps,
        batch_size=ppo.batch_size,
        n_epochs=ppo.n_epochs,
        gamma=ppo.gamma,
        gae_lambda=ppo.gae_lambda,
        clip_range=ppo.clip_range,
        ent_coef=ppo.ent_coef,
        vf_coef=ppo.vf_coef,
        policy_kwargs={
            "net_arch": {"pi": list(ppo.net_pi), "vf": list(ppo.net_vf)},
            "activation_fn": th.nn.ReLU,
            **({"prior": ppo.prior} if ppo.prior else {}),
            **({"critic": ppo.critic} if ppo.critic != "observation" else {}),
        },
        seed=config.seed,
        device=device_of(config),
        verbose=0,
    )
    if config.init:
        try:
            info, state = read_model(config.init)
        except (FileNotFoundError, ValueError) as error:
            raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
        mine = model.policy.state_dict()
        for key, value in state.items():
            if key in mine and tuple(mine[key].shape) != value.shape:
                arch = info["architecture"]
                raise TrainingError(
                    f"--init {config.init}: its {key} is {list(value.shape)}, these settings make "
                    f"it {list(mine[key].shape)}: the file's network is --net-pi "
                    f"{' '.join(map(str, arch.get('net_pi', [])))} --net-vf "
                    f"{' '.join(map(str, arch.get('net_vf', [])))} (prior {arch.get('prior')}, "
                    f"critic {arch.get('critic', 'observation')})"
                )
        try:
            model.policy.load_state_dict({k: th.from_numpy(v.copy()) for k, v in state.items()})
        except RuntimeError as error:
            raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
    return model


__all__ = ["build_model", "spaces_env"]
