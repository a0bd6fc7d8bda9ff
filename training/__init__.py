"""PPO training for Odin agents. Imports :mod:`agents`, :mod:`evaluation` (in-training
evaluations) and :mod:`odin_env`; nothing imports it but the CLIs, benchmarks and notebooks.

- :mod:`training.config`: the run's settings (:class:`TrainConfig`), declared once;
- :mod:`training.policy`: the policy trained (legal-set masked actor-critic, residual priors);
- :mod:`training.model`: the MaskablePPO model of a run;
- :mod:`training.pool`: the opponents drawn per episode;
- :mod:`training.subproc` and :mod:`training.collector`: the two ways of collecting experience;
- :mod:`training.update`: one PPO update on a batched rollout;
- :mod:`training.selfplay`: the batched loop;
- :mod:`training.actors`: batched rollouts on Ray actors (``ray``, ``actors``);
- :mod:`training.imitation`: the imitation warm start;
- :mod:`training.checkpoints`: the run's files;
- :mod:`training.progress`: the progress display and episode figures;
- :mod:`training.run`: a whole run (``train``), what ``train.py`` calls.
"""

from training.checkpoints import average_models, read_config
from training.config import TrainConfig, TrainingError
from training.model import build_model
from training.run import train

__all__ = ["TrainConfig", "TrainingError", "average_models", "build_model", "read_config", "train"]
