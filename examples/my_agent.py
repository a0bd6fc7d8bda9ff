"""Your own agent in the lab: the MaskablePPO policy that ``examples/sb3_maskable_ppo.py``
trains and saves, wrapped as a lab agent. Every command that takes an agent takes it as
``examples/my_agent.py:SB3Agent`` (docs/own-agent.md)::

    python examples/sb3_maskable_ppo.py --save results/sb3_maskable_ppo.zip
    python evaluate.py tournament --agents examples/my_agent.py:SB3Agent random random random

A lab agent is any object with ``act(observation, action_mask) -> int``: the observation is the
vector the Gymnasium env gives its learner, so the policy reads it as it did in training, and
the mask says which of the actions are legal. The lab calls ``SB3Agent()`` (it takes no
``seed``: it plays the policy's most likely legal action, the same games whatever the seed or
the number of worker processes).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from sb3_contrib import MaskablePPO

MODEL = Path("results/sb3_maskable_ppo.zip")
"""Where ``sb3_maskable_ppo.py --save`` put the model, from the folder the command runs in."""


class SB3Agent:
    """A saved MaskablePPO model as a lab agent: its most likely legal action."""

    def __init__(self, path: Path | str = MODEL):
        self.name = f"sb3:{Path(path).stem}"
        # SB3's loader reads its own .zip, parameters included: load only files you made.
        self.model = MaskablePPO.load(path, device="cpu")

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        action, _ = self.model.predict(
            observation, action_masks=action_mask.astype(bool), deterministic=True
        )
        return int(action)
