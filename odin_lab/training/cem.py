"""The cross-entropy method (CEM; Rubinstein 1999, on Tetris's feature weights: Szita and Lőrincz
2006) as a learner of the run services: :class:`CEMConfig` (its settings section, ``train.py
--algo cem``) and :class:`CEMLearner`, which fits the weights of a linear feature player
(:class:`agents.linear.LinearAgent`).

Each :meth:`CEMLearner.train_step` is one generation. It draws ``population`` weight vectors
from a diagonal Gaussian (``mean``, ``std``), plays each in ``games_per_candidate`` whole games
against the run's opponent pool (:class:`odin_lab.training.pool.OpponentPool`: the heuristics,
``self`` snapshots of the mean, any agent spec) on the batched engine, all candidates' games in
one batch, and scores each by its fitness: its mean share of the wins (ties shared) minus
``penalty_weight`` times its mean final penalty total over the threshold. The games are common
random numbers: game ``i`` of every candidate has the same deal, the same seat and the same
opponents, so candidates differ by their weights alone. The ``elite_fraction`` best become the
new distribution: ``mean`` moves to their mean (``smoothing``: the share of the move), ``std``
to their spread, never below ``noise_floor`` (the added noise of Szita and Lőrincz, which keeps
the search from collapsing early). The player is the mean.

:attr:`CEMLearner.steps` counts the candidates' decisions. Every draw of a generation (its
weights, deals, seats, opponents) comes from the run's seed and the generation's number, so the
generation count is the whole random state: the same seed gives the same weights, and a resumed
run continues as the uninterrupted one would. ``learner`` (every seat the learner) is not an
opponent kind here: candidates playing each other score zero-sum shares of one table.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from agents.base import argmax_by_row
from agents.linear import (
    NAMES,
    LinearAgent,
    features,
    linear_info,
    linear_state,
    read_linear,
    scores,
)
from odin_env.batched import BatchedGames
from odin_env.seeding import spawn_seed
from odin_lab.files import write_model
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.learner import GAMES_STREAM, POOL_STREAM, device_of, held_interrupts
from odin_lab.training.pool import LEARNER, SELF, OpponentPool
from odin_lab.training.settings import setting

SAMPLE, DEALS = 1, 2
"""Sub-streams of a generation's seed (``spawn_seed(seed, GAMES_STREAM, generation, KEY)``):
the candidates' weights and the games' deals."""
MAX_POPULATION = 4096
MAX_GAMES = 100_000


@dataclass
class CEMConfig:
    """The cross-entropy method's settings (``train.py --algo cem``)."""

    population: int = setting(16, 2, MAX_POPULATION)
    """Weight vectors drawn per generation."""
    elite_fraction: float = setting(0.25, 0.0, 1.0, above=True)
    """Share of the population (the best, at least one) the next distribution is fitted to."""
    games_per_candidate: int = setting(32, 1, MAX_GAMES)
    """Whole games each candidate plays per generation (the same deals for every candidate)."""
    initial_std: float = setting(1.0, 0.0, 1e6, above=True)
    """Spread of every weight at the start (the mean starts at 0, or at ``init``'s weights)."""
    noise_floor: float = setting(0.05, 0.0, 1e6)
    """The least spread of a weight after an update (added noise against early collapse)."""
    smoothing: float = setting(0.7, 0.0, 1.0, above=True)
    """Share of the move of the mean and spread towards the elite's per generation (1: all)."""
    penalty_weight: float = setting(0.05, 0.0, 1e6)
    """Fitness = win share - this times the mean final penalty total / threshold."""
    features: list[str] = setting(list(NAMES), choices=NAMES, length=(1, len(NAMES)))
    """The features the player weighs (agents.linear.FEATURES names; the others weigh 0)."""

    def check(self, run: TrainConfig) -> None:
        """Raise ``ValueError`` naming the first setting that does not fit the others (each
        setting's own range: :func:`odin_lab.training.settings.check_settings`)."""
        if len(set(self.features)) != len(self.features):
            raise ValueError(f"features must name each feature once; got {self.features}")
        if LEARNER in run.opponents:
            raise ValueError(
                f"opponents: {LEARNER!r} has no meaning for cem (candidates in every seat would "
                "share one table's wins); use agent specs and 'self'"
            )
        if run.ray is not None:
            raise ValueError(f"ray: the cem learner plays in its own process; got {run.ray!r}")

    @property
    def elites(self) -> int:
        """How many candidates the next distribution is fitted to."""
        return max(1, round(self.elite_fraction * self.population))


class CEMLearner:
    """The cross-entropy method on the batched engine (see the module docstring): a
    :class:`odin_lab.training.learner.Learner` whose players are linear model files."""

    kind = "linear"

    def __init__(self, config: TrainConfig):
        device_of(config)  # the run's device setting is checked here too; CEM needs none
        self.config, self.settings = config, config.algo_config
        self.names = list(self.settings.features)
        self.mean = np.zeros(len(self.names))
        self.std = np.full(len(self.names), float(self.settings.initial_std))
        if config.init:
            try:
                info, state = read_linear(config.init)
            except (FileNotFoundError, ValueError) as error:
                raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
            weights = dict(zip(info["architecture"]["features"], state["weights"].tolist()))
            extra = sorted(set(weights) - set(self.names))
            if extra:
                raise TrainingError(
                    f"--init {config.init}: it weighs feature {extra[0]!r}, which the run's "
                    "features leave out"
                )
            self.mean = np.array([weights.get(n, 0.0) for n in self.names])
        self.steps, self.generation, self.last_snapshot = 0, 0, 0
        self.snapshots: list[LinearAgent] = []

    def warm_start(self, run_dir: Path, provenance: dict[str, Any]) -> dict[str, float]:
        """CEM has no warm start (``init`` weights are the first mean)."""
        return {}

    def start(self) -> None:
        if SELF in self.config.opponents and not self.snapshots:
            self.snapshot()

    def player(self, name: str = "linear") -> LinearAgent:
        """The current player: the mean weights."""
        return LinearAgent(self.names, self.mean, name)

    def train_step(self) -> dict[str, float]:
        settings = self.settings
        seed, gen = self.config.seed, self.generation
        rng = np.random.default_rng(spawn_seed(seed, GAMES_STREAM, gen, SAMPLE))
        noise = rng.standard_normal((settings.population, len(self.names)))
        candidates = self.mean + self.std * noise
        fitness, decisions, figures = self.play(candidates, gen)
        with held_interrupts():
            order = np.argsort(-fitness, kind="stable")
            elite = candidates[order[: settings.elites]]
            a = settings.smoothing
            self.mean = (1 - a) * self.mean + a * elite.mean(0)
            spread = elite.std(0) if len(elite) > 1 else np.zeros_like(self.mean)
            self.std = np.maximum((1 - a) * self.std + a * spread, settings.noise_floor)
            self.steps += decisions
            self.generation += 1
        figures.update(
            {
                "train/fitness_mean": float(fitness.mean()),
                "train/fitness_best": float(fitness.max()),
                "train/fitness_elite": float(fitness[order[: settings.elites]].mean()),
                "train/std_mean": float(self.std.mean()),
                "train/generation": float(self.generation),
            }
        )
        return figures

    def play(
        self, candidates: np.ndarray, generation: int
    ) -> tuple[np.ndarray, int, dict[str, float]]:
        """Play every candidate (a row of weights over :attr:`names`) in the generation's games;
        return each one's fitness, the candidates' decisions, and figures to log."""
        config, settings = self.config, self.settings
        players, games_each = config.game.players, settings.games_per_candidate
        count = len(candidates)
        weights = np.zeros((count, len(NAMES)))
        weights[:, [NAMES.index(n) for n in self.names]] = candidates
        deal_seeds = np.random.SeedSequence(
            spawn_seed(config.seed, GAMES_STREAM, generation, DEALS)
        )
        deals = deal_seeds.generate_state(games_each, dtype=np.uint64).tolist()
        # Game i: one deal, seat and opponent table for every candidate (common random numbers).
        pool = OpponentPool(
            config.opponents, players, config.seat, spawn_seed(config.seed, POOL_STREAM, generation)
        )
        if self.snapshots:
            pool.set_snapshots(self.snapshots)
        seats, kinds, tables = [], [], []
        for _ in range(games_each):
            kind = pool.draw_kind(pool.rng)
            seat = int(pool.rng.integers(players)) if config.seat is None else config.seat
            seats.append(seat)
            kinds.append(kind)
            tables.append(pool.table(kind, seat, pool.rng))
        batch = count * games_each
        engine = BatchedGames(
            config.game, batch, seed=[deals[i % games_each] for i in range(batch)]
        )
        game_of = np.arange(batch) % games_each
        candidate_of = np.arange(batch) // games_each
        mine = np.array(seats)[game_of]
        finished = np.zeros(batch, dtype=bool)
        share = np.zeros(batch)
        penalty = np.zeros(batch)
        decisions = 0
        while not finished.all():
            acts = engine.first_legal.copy()  # finished games idle on any legal action
            live = ~finished
            learner_rows = np.flatnonzero(live & (engine.seat == mine))
            if learner_rows.size:
                rows, actions, x = features(engine.obs[learner_rows], engine.mask[learner_rows])
                score = scores(x, weights[candidate_of[learner_rows][rows]])
                acts[learner_rows] = argmax_by_row(rows, actions, score)
                decisions += learner_rows.size
            groups: dict[int, tuple[Any, list[int]]] = {}
            for row in np.flatnonzero(live & (engine.seat != mine)).tolist():
                agent = tables[game_of[row]][int(engine.seat[row])]
                groups.setdefault(id(agent), (agent, []))[1].append(row)
            for agent, members in groups.values():
                picked = np.asarray(members)
                acts[picked] = agent.act_batch(engine.obs[picked], engine.mask[picked])
            engine.step(acts)
            ended = np.flatnonzero(engine.done & live)
            if ended.size:
                win = engine.winners[ended]
                seat_won = win[np.arange(ended.size), mine[ended]]
                share[ended] = seat_won / np.maximum(win.sum(1), 1)
                penalty[ended] = engine.final_totals[ended, mine[ended]]
                finished[ended] = True
        shares = share.reshape(count, games_each)
        penalties = penalty.reshape(count, games_each) / config.game.threshold
        fitness = shares.mean(1) - settings.penalty_weight * penalties.mean(1)
        figures: dict[str, float] = {}
        for kind in sorted(set(kinds)):
            cols = [i for i, k in enumerate(kinds) if k == kind]
            figures[f"opponents/{kind}/win_rate"] = float(shares[:, cols].mean())
            figures[f"opponents/{kind}/mean_penalty"] = float(
                penalty.reshape(count, games_each)[:, cols].mean()
            )
        return fitness, decisions, figures

    def snapshot(self) -> None:
        self.snapshots = [*self.snapshots, self.player(SELF)][-self.config.max_snapshots :]
        self.last_snapshot = self.steps

    def info(self) -> dict[str, Any]:
        """The ``model`` metadata of the current player (docs/model-format.md)."""
        return linear_info(self.names, self.config.game.players)

    def write_player(self, path: Path, provenance: dict[str, Any]) -> Path:
        state = linear_state(self.names, self.mean)
        return write_model(path, state, {**self.info(), "provenance": provenance})

    def checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        tensors = {
            "policy/weights": self.mean.astype(np.float32),
            # float64 so that a resume continues with the exact distribution
            "cem/mean": self.mean.copy(),
            "cem/std": self.std.copy(),
        }
        for k, snap in enumerate(self.snapshots):
            tensors[f"snapshot/{k}/weights"] = snap.weights
        run = {
            "generation": self.generation,
            "last_snapshot": self.last_snapshot,
            "snapshots": len(self.snapshots),
        }
        return tensors, self.info(), run

    def load_checkpoint(self, tensors: dict[str, Any], run: dict[str, Any]) -> None:
        mean, std = np.array(tensors["cem/mean"]), np.array(tensors["cem/std"])
        if mean.shape != self.mean.shape or std.shape != self.std.shape:
            raise ValueError(
                f"its distribution has {mean.shape} weights, the run {len(self.names)}"
            )
        self.mean, self.std = mean.astype(np.float64), std.astype(np.float64)
        self.steps = int(run["step"])
        self.generation = int(run["generation"])
        self.last_snapshot = int(run.get("last_snapshot", 0))
        self.snapshots = [
            LinearAgent(self.names, np.array(tensors[f"snapshot/{k}/weights"]), SELF)
            for k in range(int(run.get("snapshots", 0)))
        ]

    def close(self) -> None:
        """Nothing to release: the games live only inside a step."""


__all__ = ["CEMConfig", "CEMLearner"]
