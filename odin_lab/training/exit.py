"""Expert iteration (``train.py --algo exit``; Anthony et al., NeurIPS 2017): the search labels
positions, the network learns the labels, and the search plays out with the network.

The learner holds deep Monte Carlo's network (:class:`odin_lab.training.qnet.QNet`, played by
:class:`agents.dmc.DMCAgent`) and its actors (:class:`odin_lab.training.dmc_collector
.TableActors`); what it changes is what the learner's seats play and what the network is fitted
to. At each of the learner's decisions with a choice, the search
(:func:`agents.search.score_candidates`, from the observation alone, with ``rollouts`` playouts)
scores every legal action: its mean penalty for the hand over the same sampled layouts; with
``top``, only the ``top`` candidates the network values most at the start of the update are
searched and labelled (the search's shortlist), so each gets more of the playouts. The seat
plays the search's choice (or, with chance ``epsilon``, a uniformly random legal action), and
each update regresses ``Q(o, a)`` of every searched candidate onto minus its mean penalty: soft
targets in the units of DMC's hand returns, so a DMC model is a warm start (``--init``; one of
another horizon starts with its head refitted). The playouts are played by ``playout``: a
batched heuristic, or ``learner``, the network as it was at the start of the update (the expert
improves with its apprentice).

With ``teacher`` (a DMC model file) the expert is that network, not the search: every legal
action of a decision is labelled with the teacher's value of it (read as its model plays it,
under its colour labellings and over its members), and the seat plays the teacher's choice. This
is distillation (Hinton et al., 2015; policy distillation, Rusu et al., 2016): an output ensemble
read under eight labellings (the bundled ``dmc``: sixteen network passes a decision) taught to
one network read once, with soft targets for every candidate as the search's labels are.

A label costs a search, so with ``replay`` the latest labelled decisions are kept and each
update fits minibatches drawn from all of them (Anthony et al. retrain on the data set so far):
a label then serves about ``epochs`` minibatches over the updates it stays for, instead of
``epochs`` passes over one update's few decisions. The kept labels are in the checkpoint, so a
resumed run fits on what the stopped one had. What did not pay (labels of win chance,
``relative`` targets) is on docs/findings/expert-iteration.md.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch as th

from agents.dmc import DMCAgent, read_dmc_model, value_horizon
from agents.heuristics import HEURISTICS
from agents.registry import SEARCH_MAX_ROLLOUTS
from agents.search import top_actions
from odin_env.seeding import spawn_seed
from odin_env.spec import NUM_ACTIONS
from odin_lab.evaluation.provenance import sha256
from odin_lab.training.config import TrainConfig
from odin_lab.training.dmc_collector import TableActors, check_tables
from odin_lab.training.learner import GAMES_STREAM, held_interrupts
from odin_lab.training.pool import SELF
from odin_lab.training.qnet import QNet, QSettings
from odin_lab.training.searches import Searches, search_rows
from odin_lab.training.selfplay import episode_summary
from odin_lab.training.settings import (
    MAX_BATCH,
    MAX_DECISIONS,
    MAX_RATE,
    Retired,
    setting,
)

LEARNER_PLAYOUT = "learner"
"""``playout``: the search plays out with the network being trained."""
MAX_REPLAY = 1_000_000
"""Most labelled decisions ``replay`` keeps (each holds an observation: about 2.3 KB)."""
LABELS = 4
"""Sub-stream of the games stream (``spawn_seed(seed, GAMES_STREAM, steps, LABELS)``): the
seeds of the searches (the others: :data:`odin_lab.training.dmc_collector.EXPLORE` ...)."""
FINDINGS = "docs/findings/expert-iteration.md"


@dataclass
class ExItConfig(QSettings):
    """Expert iteration's settings (``train.py --algo exit``): the Q-network's (a DMC model is a
    warm start, ``--init``), then its own and the search's."""

    learning_rate: float = setting(3e-4, 0.0, MAX_RATE, above=True)
    """Step size of the optimizer."""
    batch_size: int = setting(256, 1, MAX_BATCH)
    """Minibatch size of the regression, in (decision, candidate) pairs."""
    epochs: int = setting(2, 1, 1000)
    """Passes over each update's labels."""
    decisions_per_update: int = setting(128, 1, MAX_DECISIONS)
    """Decisions the search labels before each update."""
    rollouts: int = setting(128, 1, SEARCH_MAX_ROLLOUTS)
    """Search playouts per labelled decision, shared among its candidates."""
    playout: str = setting("planner", choices=(*HEURISTICS, LEARNER_PLAYOUT))
    """Who plays the search's playouts: a batched heuristic, or learner (the network)."""
    epsilon: float = setting(0.0, 0.0, 1.0)
    """Chance that a learner decision is a uniformly random legal action (not labelled)."""
    top: int = setting(0, 0, NUM_ACTIONS)
    """Candidates searched and labelled at a decision: the network's ``top`` highest valued
    (0: every legal action). The rollouts are shared among these only."""
    replay: int = setting(0, 0, MAX_REPLAY)
    """Labelled decisions kept for the fit, the latest (0: an update fits its own only). Each
    update then draws as many minibatches as epochs passes over its own labels would take,
    uniformly from the kept ones."""
    teacher: str = ""
    """A DMC model file (values in penalty for the hand) that labels the decisions instead of
    the search: each legal action with its value as that model plays (distillation; the
    search's settings ``rollouts``, ``playout`` and ``top`` are then unused). Empty: the
    search."""

    RETIRED: ClassVar[dict[str, Retired]] = {
        "horizon": Retired(FINDINGS, kept="hand"),
        "relative": Retired(FINDINGS, kept=False),
    }
    """What a run made before may hold that the lab no longer trains with."""

    def check(self, run: TrainConfig) -> None:
        """Raise ``ValueError`` naming the first setting that does not fit ``run`` (each
        setting's own range: :func:`odin_lab.training.settings.check_settings`)."""
        check_tables(self.other_tables, run)
        if run.workers != 1 and self.teacher:
            raise ValueError(
                f"workers run the searches, and a teacher labels instead: leave workers at 1 "
                f"with teacher; got workers {run.workers}"
            )
        if run.game.reward != "penalty":
            raise ValueError(
                f"the search's targets are hand penalties: exit needs reward penalty; got "
                f"{run.game.reward!r}"
            )
        if run.ray is not None and self.teacher:
            raise ValueError(
                f"ray runs the searches, and a teacher labels instead: leave ray out with "
                f"teacher; got ray {run.ray!r}"
            )
        if run.ray is not None and run.actors != 1:
            raise ValueError(
                f"exit's searches run as Ray tasks on every CPU of the cluster, not on actors: "
                f"leave actors at 1; got {run.actors}"
            )
        if self.teacher:
            try:
                info, _ = read_dmc_model(self.teacher)
            except (OSError, ValueError) as error:
                raise ValueError(f"teacher: {error}") from None
            if value_horizon(info) != "hand":
                raise ValueError(
                    f"teacher {self.teacher} values horizon {value_horizon(info)!r}; a teacher "
                    "must value penalty for the hand (a DMC model of horizon hand)"
                )


class ExItLearner:
    """Expert iteration on DMC's network and actors (see the module docstring): a
    :class:`odin_lab.training.learner.Learner` whose player is a DMC model (``kind`` ``dmc``:
    played as ``dmc:PATH``)."""

    kind = "dmc"

    def __init__(self, config: TrainConfig):
        self.config, self.settings = config, config.algo_config
        self.qnet = QNet(config, self.settings, self.settings.learning_rate, "hand")
        self.steps, self.n_updates, self.last_snapshot = 0, 0, 0
        self.actors: TableActors | None = None
        self.searches: Searches | None = None
        # The replay (a checkpoint restores it before start).
        self.kept: deque[tuple[np.ndarray, np.ndarray, np.ndarray]] = deque(
            maxlen=max(1, self.settings.replay)
        )
        # The teacher's bytes (config.json names only its path), checked on resume.
        self.teacher_sha256 = sha256(self.settings.teacher) if self.settings.teacher else ""

    def warm_start(self, run_dir: Path, provenance: dict[str, Any]) -> dict[str, float]:
        """Expert iteration has no warm start (``init`` weights are loaded when the learner is
        built)."""
        return {}

    def start(self) -> None:
        config, steps = self.config, self.steps
        self.qnet.start(config.seed, steps)
        # The actors' returns (DMC's, for the hand) are logged, not learned.
        self.actors = TableActors(
            config, self.settings.other_tables, steps, self.expert, 1.0, "hand"
        )
        if SELF in config.opponents and not self.qnet.snapshots:
            self.snapshot()
        else:
            self.actors.set_snapshots(self.qnet.snapshots)
        self.labels: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.seeds = np.random.default_rng(spawn_seed(config.seed, GAMES_STREAM, steps, LABELS))
        self.teacher = DMCAgent.load(self.settings.teacher) if self.settings.teacher else None
        self.searches = Searches(config.workers, config.ray)
        self._renew_playout()

    def close(self) -> None:
        if self.searches is not None:
            self.searches.close()  # nothing is pending between batches; at once on Ctrl-C
            self.searches = None
        self.actors = None

    def _renew_playout(self) -> None:
        settings = self.settings
        network = (
            self.qnet.player() if settings.playout == LEARNER_PLAYOUT or settings.top else None
        )
        self.playout = network if settings.playout == LEARNER_PLAYOUT else settings.playout
        self.prior = network if settings.top else None

    def expert(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The search's choice for each row; every row with a choice is labelled (its
        shortlist's candidates, with ``top``). With a teacher, its choice and values."""
        if self.teacher is not None:
            return self._taught(obs, mask)
        out = np.empty(len(obs), dtype=np.int64)
        choice = np.flatnonzero(mask.sum(axis=1) > 1)
        values = None
        if self.prior is not None and choice.size:
            values = np.full(mask.shape, -np.inf, dtype=np.float32)
            values[choice] = self.prior.values(obs[choice], mask[choice])
        rows = []  # (row, what is searched, the search's seed), seeds drawn in row order
        for k in range(len(obs)):
            legal = np.flatnonzero(mask[k])
            if legal.size == 1:
                out[k] = legal[0]
                continue
            searched = (
                mask[k] if values is None else top_actions(values[k], mask[k], self.settings.top)
            )
            rows.append((k, searched, int(self.seeds.integers(2**63))))
        # One part per worker or cluster CPU at most: each row has its own seed, so the split
        # changes nothing.
        size = max(1, -(-len(rows) // self.searches.parts))
        tasks = [
            (self.playout, self.settings.rollouts, [(obs[k], m, seed) for k, m, seed in part])
            for part in (rows[i : i + size] for i in range(0, len(rows), size))
        ]
        found = self.searches.map(search_rows, tasks)
        for (k, _, _), scores in zip(rows, (s for part in found for s in part), strict=True):
            targets = (-scores.penalty).astype(np.float32)
            self.labels.append((obs[k].copy(), scores.actions.astype(np.int64), targets))
            out[k] = scores.best
        return out

    def _taught(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The teacher's choice for each row (one batched call); every row with a choice is
        labelled with the teacher's value of each of its legal actions."""
        values = self.teacher.values(obs, mask)
        for k in np.flatnonzero(mask.sum(axis=1) > 1).tolist():
            legal = np.flatnonzero(mask[k])
            self.labels.append((obs[k].copy(), legal.astype(np.int64), values[k, legal]))
        return values.argmax(1)

    def train_step(self) -> dict[str, float]:
        settings, collector = self.settings, self.actors.turn(self.n_updates)
        while len(self.labels) < settings.decisions_per_update:
            collector.step(settings.epsilon)
        finished = collector.collect(0, settings.epsilon)  # the actors' own bookkeeping
        labels, self.labels = self.labels, []
        with held_interrupts():
            if settings.replay:
                self.kept.extend(labels)
            figures = self._fit(labels, list(self.kept) if settings.replay else None)
            self.steps += len(labels)
            self.n_updates += 1
            self._renew_playout()
        figures.update(episode_summary(finished.episodes))
        return figures

    def _fit(
        self,
        labels: list[tuple[np.ndarray, np.ndarray, np.ndarray]],
        kept: list[tuple[np.ndarray, np.ndarray, np.ndarray]] | None = None,
    ) -> dict[str, float]:
        """Minibatch regressions of Q of labelled candidates onto their targets: ``epochs``
        passes over ``labels``, or (``kept``: the replay) as many minibatches drawn uniformly
        from ``kept``. Also how often the network's choice was the search's on ``labels``,
        before the fit."""
        settings, qnet = self.settings, self.qnet
        obs, actions, rows, targets, starts, sizes = self._tensors(labels)
        if qnet.refit_head and self.n_updates == 0:  # an init network of another horizon
            qnet.refit(obs, actions, targets, rows)
        with th.no_grad():
            q = qnet.net(obs, actions, rows).cpu().numpy()
        target = targets.cpu().numpy()
        agree = np.mean(
            [np.argmax(q[s : s + n]) == np.argmax(target[s : s + n]) for s, n in zip(starts, sizes)]
        )
        pairs, size = len(actions), settings.batch_size
        if kept is None:
            picks = qnet.passes(pairs, size, settings.epochs)
        else:
            obs, actions, rows, targets, _, _ = self._tensors(kept)
            count = settings.epochs * -(-pairs // size)
            picks = th.randint(len(actions), (count, size), generator=qnet.shuffle)
        return {
            "train/q_loss": qnet.regress(obs, actions, targets, picks, rows),
            "train/decisions": float(len(labels)),
            "train/candidates": float(pairs),
            "train/agreement": float(agree),
            "train/kept": float(len(kept) if kept is not None else len(labels)),
        }

    def _tensors(self, labels: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> tuple:
        """Labels as the network's inputs: observations, the candidates' actions and their
        observation's row, targets; and each decision's first candidate and count."""
        device = self.qnet.device
        sizes = np.array([len(actions) for _, actions, _ in labels])
        obs = th.as_tensor(np.stack([o for o, _, _ in labels]), device=device)
        rows = th.as_tensor(np.repeat(np.arange(len(labels)), sizes), device=device)
        actions = th.as_tensor(np.concatenate([a for _, a, _ in labels]), device=device)
        targets = th.as_tensor(np.concatenate([t for _, _, t in labels]), device=device)
        return obs, actions, rows, targets, np.r_[0, np.cumsum(sizes)[:-1]], sizes

    def snapshot(self) -> None:
        snapshots = self.qnet.snapshot(self.config.max_snapshots)
        self.last_snapshot = self.steps
        if self.actors is not None:
            self.actors.set_snapshots(snapshots)

    def write_player(self, path: Path, provenance: dict[str, Any]) -> Path:
        return self.qnet.write(path, provenance)

    def checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        tensors, entries = self.qnet.checkpoint()
        run = {"n_updates": self.n_updates, "last_snapshot": self.last_snapshot, **entries}
        if self.teacher_sha256:
            run["teacher_sha256"] = self.teacher_sha256
        if self.kept:
            kept = list(self.kept)
            tensors["replay/obs"] = np.stack([o for o, _, _ in kept])
            tensors["replay/sizes"] = np.array([len(a) for _, a, _ in kept], dtype=np.int64)
            tensors["replay/actions"] = np.concatenate([a for _, a, _ in kept])
            tensors["replay/targets"] = np.concatenate([t for _, _, t in kept])
        return tensors, self.qnet.info, run

    def load_checkpoint(self, tensors: dict[str, Any], run: dict[str, Any]) -> None:
        """Also ``ValueError`` when the teacher file is not the one the run was taught by (its
        sha256 differs from the checkpoint's): a resume goes on with the same teacher or not
        at all."""
        was = run.get("teacher_sha256", "")
        if was and was != self.teacher_sha256:
            raise ValueError(
                f"the teacher {self.settings.teacher} is not the file this run was taught by "
                f"(sha256 {self.teacher_sha256[:12] or 'none'}..., the run's {was[:12]}...): "
                "put that file back, or start a new run"
            )
        self.qnet.load(tensors, run)
        self.steps = int(run["step"])
        self.n_updates = int(run.get("n_updates", 0))
        self.last_snapshot = int(run.get("last_snapshot", 0))
        self.kept.clear()
        self.kept.extend(kept_labels(tensors))


def kept_labels(tensors: dict[str, Any]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The labelled decisions a checkpoint's replay keeps, oldest first: ``(observation,
    candidates, targets)`` (none without a replay); ``ValueError`` when its tensors disagree."""
    if "replay/obs" not in tensors:
        return []
    sizes = np.array(tensors["replay/sizes"])
    actions, targets = np.array(tensors["replay/actions"]), np.array(tensors["replay/targets"])
    observations = np.array(tensors["replay/obs"])
    if not (len(observations) == len(sizes) and sizes.sum() == len(actions) == len(targets)):
        raise ValueError("the replay's observations, candidates and targets disagree")
    ends = np.cumsum(sizes)
    return [
        (obs, actions[end - size : end], targets[end - size : end])
        for obs, size, end in zip(observations, sizes, ends)
    ]


__all__ = [
    "FINDINGS", "LABELS", "LEARNER_PLAYOUT", "ExItConfig", "ExItLearner", "kept_labels",
]  # fmt: skip
