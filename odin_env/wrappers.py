"""Small adapters around the AEC environment for RL libraries that need one.

======================  =====================================================================
wrapper                 for
======================  =====================================================================
``RewardAttribution``   learners that read ``env.rewards[agent]`` when ``agent`` is selected,
                        through PettingZoo's whole ``agent_iter`` loop (custom per-agent
                        buffers): Odin pays a hand's penalties on the step that ends the hand,
                        usually another player's, so that dict alone shows an agent 2-10% of its
                        reward. Wrapped, ``rewards`` holds for the selected agent everything it
                        earned since its previous turn (0 for the others), so summed over a game
                        each agent sees exactly its engine total.
``RewardOnOwnStep``     learners that store, with each step, the reward vector read right after
                        it, and use an agent's entry only on that agent's own steps, stopping
                        at the first termination (Tianshou's ``PettingZooEnv`` and multi-agent
                        policy): after an agent's step, its entry holds everything it earned
                        since its previous step; when the game ends, every other agent gets one
                        settling turn (only ``PASS`` legal, a no-op) that pays what it was still
                        owed, then all terminate. Summed over its own steps, each agent sees
                        exactly its engine total.
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

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils.wrappers import BaseWrapper

from odin_env.spec import PASS


class RewardAttribution(BaseWrapper):
    """``rewards[agent]``: what the selected agent earned since its last turn (see above)."""

    @property
    def rewards(self) -> dict[str, float]:  # type: ignore[override]
        # The AEC env's cumulative reward of an agent is what it was paid since it last acted.
        selected, paid = self.env.agent_selection, self.env._cumulative_rewards
        return {a: (float(paid[a]) if a == selected else 0.0) for a in self.env.agents}


class RewardOnOwnStep(BaseWrapper):
    """``rewards[agent]`` after ``agent``'s own step: what it earned since its previous step;
    settling turns at the game's end (see above). ``rewards`` always holds every agent. After
    the last settlement every agent is terminated and there are no dead steps (Tianshou resets
    there): ``step`` raises ``ValueError`` until ``reset``."""

    def reset(self, seed: int | None = None, options: dict | None = None) -> None:
        self.env.reset(seed=seed, options=options)
        agents = self.env.possible_agents
        self._owed = dict.fromkeys(agents, 0.0)
        self._paid = dict.fromkeys(agents, 0.0)
        self._settle: list[str] = []  # agents still to settle, in turn order
        self._over = False  # every turn played and settled

    @property
    def rewards(self) -> dict[str, float]:  # type: ignore[override]
        return dict(self._paid)

    @property
    def agent_selection(self) -> str:  # type: ignore[override]
        return self._settle[0] if self._settle else self.env.agent_selection

    @property
    def terminations(self) -> dict[str, bool]:  # type: ignore[override]
        return dict.fromkeys(self.env.possible_agents, self._over)

    @property
    def truncations(self) -> dict[str, bool]:  # type: ignore[override]
        return dict.fromkeys(self.env.possible_agents, False)

    def observe(self, agent: str) -> dict[str, Any]:
        obs = self.env.observe(agent)
        if self._settle and agent == self._settle[0]:
            mask = np.zeros_like(obs["action_mask"])
            mask[PASS] = 1
            obs = {**obs, "action_mask": mask}
        return obs

    def last(self, observe: bool = True) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        agent = self.agent_selection
        obs = self.observe(agent) if observe else None
        return obs, self._paid[agent], self._over, False, self.env.infos.get(agent, {})

    def step(self, action: Any) -> None:
        if self._over:
            raise ValueError("the game is over and settled: reset() the environment")
        self._paid = dict.fromkeys(self._paid, 0.0)
        if self._settle:
            if action != PASS:
                raise ValueError(f"a settling turn takes only PASS ({PASS}); got {action!r}")
            agent = self._settle.pop(0)
        else:
            agent = self.env.agent_selection
            self.env.step(action)
            for other, paid in self.env.rewards.items():  # this step's payments
                self._owed[other] += paid
            if all(self.env.terminations.values()):  # the game is over: settle the others
                agents = self.env.possible_agents
                start = agents.index(agent)
                self._settle = [agents[(start + k) % len(agents)] for k in range(1, len(agents))]
        self._paid[agent], self._owed[agent] = self._owed[agent], 0.0
        self._over = all(self.env.terminations.values()) and not self._settle


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


__all__ = ["MaskInInfo", "ObservationsKey", "RewardAttribution", "RewardOnOwnStep"]
