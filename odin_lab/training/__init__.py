"""Training for Odin agents: run services written once, and algorithms behind one learner
interface. Imports :mod:`agents`, :mod:`odin_lab.evaluation` (in-training evaluations) and
:mod:`odin_env`; nothing imports it but the CLIs, benchmarks and notebooks.

The run services (every algorithm):

- :mod:`odin_lab.training.config`: the run's settings (:class:`TrainConfig`), declared once;
- :mod:`odin_lab.training.settings`: every setting's range, declared with its field and
  checked by one function, and the settings retired since;
- :mod:`odin_lab.training.learner`: the :class:`~odin_lab.training.learner.Learner` interface;
- :mod:`odin_lab.training.run`: a whole run (the run folder, checkpoints, resume, evaluations,
  best, soup, TensorBoard, progress);
- :mod:`odin_lab.training.checkpoints`: the run's files;
- :mod:`odin_lab.training.pool`: the opponents drawn per episode;
- :mod:`odin_lab.training.progress`: the progress display and episode figures;
- :mod:`odin_lab.training.algorithms`: the algorithms by name, and :func:`train`.

The algorithms and what they are made of:

- :mod:`odin_lab.training.ppo`: PPO (:mod:`~odin_lab.training.model`,
  :mod:`~odin_lab.training.policy`, :mod:`~odin_lab.training.collector`,
  :mod:`~odin_lab.training.update`, :mod:`~odin_lab.training.selfplay`,
  :mod:`~odin_lab.training.actors` for Ray, :mod:`~odin_lab.training.imitation`);
- :mod:`odin_lab.training.dmc` (deep Monte Carlo) and :mod:`odin_lab.training.exit` (expert
  iteration): each holds the Q-network of :mod:`~odin_lab.training.qnet` and the actors of
  :mod:`~odin_lab.training.dmc_collector`;
- :mod:`odin_lab.training.cem`: the cross-entropy method (a linear feature player);
- :mod:`odin_lab.training.exploit`: a best-response probe, on any of them.
"""

from odin_lab.training.algorithms import ALGORITHMS, make_config, read_config, train
from odin_lab.training.checkpoints import average_models, ensemble_models
from odin_lab.training.config import TrainConfig, TrainingError

__all__ = [
    "ALGORITHMS",
    "TrainConfig",
    "TrainingError",
    "average_models",
    "ensemble_models",
    "make_config",
    "read_config",
    "train",
]
