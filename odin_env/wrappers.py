"""Small adapters around the AEC environment for RL libraries that need one.

======================  =====================================================================
wrapper                 for
======================  =====================================================================
``RewardAttribution``   learners that read ``env.rewards[agent]`` when ``agent`` is selected
                        (per-agent buffers such as Tianshou's multi-agent manager, custom
                        learners): Odin pays a hand's penalties on the step that ends the hand,
                        usually another player's, so that dict alone shows an agent 2-10% of its
                        reward. Wrapped, ``rewards`` holds for the selected agent everything it
                        earned since its previous turn (0 for the others), so summed over a game
                        each agent sees exactly its engine total.
``MaskInInfo``          wrappers that flatten the Dict observation (SuperSuit): the legal-action
                        mask also in ``infos[agent]["action_mask"]``.
``ObservationsKey``     RLlib's action-masking module, which reads ``observations``: the
                        observation dict keyed ``observations`` and ``action_mask``.
======================  =====================================================================

Each takes and returns a PettingZoo ``AECEnv``, e.g.
``RewardAttribution(odin_env.env(players=4))``. None depends on the libraries themselves.
"""

from __future__ import annotations

from typing import Any

from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils.wrappers import BaseWrapper


class RewardAttribution(BaseWrapper):
    """``rewards[agent]``: what the selected agent earned since its last turn (see above)."""

    @property
    def rewards(self) -> dict[str, float]:  # type: ignore[override]
        # The AEC env's cumulative reward of an agent is what it was paid since it last acted.
        selected, paid = self.env.agent_selection, self.env._cumulative_rewards
        return {a: (float(paid[a]) if a == selected else 0.0) for a in self.env.agents}


class MaskInInfo(BaseWrapper):
    """``infos[agent]["action_mask"]``: the agent's legal-action mask, as in its observation."""

    @property
    def infos(self) -> dict[str, dict[str, Any]]:  # type: ignore[override]
        return {
            agent: {**info, "action_mask": self.env.observe(agent)["action_mask"]}
            for agent, info in self.env.infos.items()
        }


class ObservationsKey(BaseWrapper):
    """The observation dict keyed ``observations`` (RLlib's name) and ``action_mask``."""

    def __init__(self, env: AECEnv):
        super().__init__(env)
        self._spaces = {
            agent: spaces.Dict(
                {
                    "observations": env.observation_space(agent)["observation"],
                    "action_mask": env.observation_space(agent)["action_mask"],
                }
            )
            for agent in env.possible_agents
        }

    def observation_space(self, agent: str) -> spaces.Space:
        return self._spaces[agent]

    def observe(self, agent: str) -> dict[str, Any]:
        obs = self.env.observe(agent)
        return {"observations": obs["observation"], "action_mask": obs["action_mask"]}


__all__ = ["MaskInInfo", "ObservationsKey", "RewardAttribution"]
