"""PPO training for Odin agents. Imports :mod:`agents`, :mod:`odin_lab.evaluation` (in-training
evaluations) and :mod:`odin_env`; nothing imports it but the CLIs, benchmarks and notebooks.

- :mod:`odin_lab.training.config`: the run's settings (:class:`TrainConfig`), declared once;
- :mod:`odin_lab.training.policy`: the policy trained (legal-set masked actor-critic, residual
  priors);
- :mod:`odin_lab.training.model`: the MaskablePPO model of a run;
- :mod:`odin_lab.training.pool`: the opponents drawn per episode;
- :mod:`odin_lab.training.subproc` and :mod:`odin_lab.training.collector`: the two ways of
  collecting experience;
- :mod:`odin_lab.training.update`: one PPO update on a batched rollout;
- :mod:`odin_lab.training.selfplay`: the batched loop;
- :mod:`odin_lab.training.actors`: batched rollouts on Ray actors (``ray``, ``actors``);
- :mod:`odin_lab.training.imitation`: the imitation warm start;
- :mod:`odin_lab.training.checkpoints`: the run's files;
- :mod:`odin_lab.training.progress`: the progress display and episode figures;
- :mod:`odin_lab.training.run`: a whole run (``train``), what ``train.py`` calls.
"""

from odin_lab.training.checkpoints import average_models, read_config
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.model import build_model
from odin_lab.training.run import train

__all__ = ["TrainConfig", "TrainingError", "average_models", "build_model", "read_config", "train"]
