"""Deep Monte Carlo (DMC; Zha et al., DouZero, ICML 2021) as a learner of the run services:
:class:`DMCConfig` (its settings section, ``train.py --algo dmc``) and :class:`DMCLearner`.

A Q-network (:class:`QNetwork`, the network :class:`agents.dmc.DMCAgent` plays with numpy)
scores (observation, action) pairs, the action given by its row of the lab's shared action
features, so one network handles any legal set. Epsilon-greedy actors play ``selfplay_batch``
games in lockstep on the batched engine (:mod:`odin_lab.training.dmc_collector`), the learner
in the seats the same :class:`odin_lab.training.pool.OpponentPool` as PPO's gives it (``self``
snapshots and ``learner`` = every seat included), all legal (row, action) pairs of a step
scored in one forward pass. Each :meth:`DMCLearner.train_step` plays until at least
``decisions_per_update`` learner decisions belong to finished episodes, then regresses (MSE,
``epochs`` passes of ``batch_size`` minibatches) ``Q(o, a)`` of each such decision onto its Monte
Carlo return: what its seat was paid from that decision to the end of its hand (``horizon``
hand, the default: a game's later hands are new deals the decision does not choose) or of its
episode (``horizon`` episode, DouZero's return), credited as PPO's collector credits rewards. No
bootstrapping and no critic: the target is the outcome, as in DouZero.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch as th

from agents.base import argmax_by_row, legal_pairs
from agents.dmc import (
    MAX_SYMMETRIES,
    DMCAgent,
    dmc_info,
    labelled_mean,
    read_dmc_model,
    value_horizon,
)
from agents.features import ACTION_FEATURES, NUM_ACTION_FEATURES
from odin_env.batched import BatchedGames
from odin_env.observation import OBS_SIZE
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, Config
from odin_env.seeding import spawn_seed
from odin_env.symmetry import colour_relabellings, colours_in_play
from odin_lab.files import write_model
from odin_lab.training.config import TrainConfig, TrainingError
from odin_lab.training.dmc_collector import HORIZONS, DMCCollector, Finished, check_game_loss
from odin_lab.training.learner import GAMES_STREAM, POOL_STREAM, device_of, held_interrupts
from odin_lab.training.pool import LEARNER, SELF, OpponentPool
from odin_lab.training.selfplay import episode_summary

OPTIMIZERS = ("adam", "rmsprop")
EXPLORE, SHUFFLE, INIT, TABLES, RELABEL = 1, 2, 3, 4, 5
"""Sub-streams of the games stream (``spawn_seed(seed, GAMES_STREAM, steps, KEY)``): the actors'
exploration draws, the minibatch order, (at step 0) the network's initial weights, the
games and pools of ``other_tables`` (``steps, TABLES, k``; also of the pool stream), and the
labellings of ``relabel``."""


def check_positive_ints(settings: object, names: tuple[str, ...]) -> None:
    """``ValueError`` unless each named setting is a positive integer."""
    for name in names:
        value = getattr(settings, name)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer; got {value!r}")


def check_finite(settings: object, ranges: dict[str, tuple[float, float, str, bool]]) -> None:
    """``ValueError`` unless each named setting is a finite number in its range (``low`` and
    ``high``; ``closed``: ``low`` allowed; ``None`` allowed for ``epsilon_start``)."""
    for name, (low, high, text, closed) in ranges.items():
        value = getattr(settings, name)
        if name == "epsilon_start" and value is None:
            continue
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        ok = ok and math.isfinite(value) and value <= high
        ok = ok and (value >= low if closed else value > low)
        if not ok:
            raise ValueError(f"{name} must be a finite number {text}; got {value!r}")


@dataclass
class QNetworkSettings:
    """The Q-network, its optimizer and its tables: the settings of every learner built on
    :class:`DMCLearner` (DMC's and expert iteration's, each with its own defaults)."""

    net: list[int] = field(default_factory=lambda: [256, 256, 128])
    """Hidden layers of the Q-network (its input: the observation and the action's features)."""
    learning_rate: float = 1e-3
    """Step size of the optimizer."""
    optimizer: str = "adam"
    """adam, or rmsprop (DouZero's: alpha 0.99, eps 1e-5)."""
    batch_size: int = 256
    """Minibatch size of the regression."""
    epochs: int = 1
    """Passes over each update's decisions."""
    max_grad_norm: float = 40.0
    """Gradients are clipped to this norm (DouZero's 40)."""
    other_tables: list[int] = field(default_factory=list)
    """Other table sizes (numbers of players) the learner also plays: one update at each size in
    turn, the game's ``players`` first, so one network learns every listed size (the
    observation says the size). Evaluations play the game's ``players``. Empty: that size
    alone."""

    def check_network(self, run: TrainConfig) -> None:
        """``ValueError`` naming the first bad setting of this section."""
        check_tables(self.other_tables, run)
        check_positive_ints(self, ("batch_size", "epochs"))
        check_finite(self, {name: (0.0, math.inf, "> 0", False)
                       for name in ("learning_rate", "max_grad_norm")})  # fmt: skip
        if not self.net or any(isinstance(n, bool) or not isinstance(n, int) or n < 1
                               for n in self.net):  # fmt: skip
            raise ValueError(f"net must be one or more positive layer sizes; got {self.net!r}")
        if self.optimizer not in OPTIMIZERS:
            raise ValueError(
                f"optimizer must be one of {', '.join(OPTIMIZERS)}; got {self.optimizer!r}"
            )


@dataclass
class DMCConfig(QNetworkSettings):
    """Deep Monte Carlo's settings (``train.py --algo dmc``)."""

    decisions_per_update: int = 4096
    """Learner decisions of finished episodes gathered before each update (an update trains on
    all it has then, at least this many)."""
    gamma: float = 1.0
    """Discount per later decision of the same seat (1: the return of the episode)."""
    horizon: str = "hand"
    """Where a decision's return stops: ``hand`` (the end of the hand it was taken in, which
    pays the hand's penalty: later hands' deals, which the decision does not choose, only add
    noise; needs ``reward`` penalty), ``episode`` (its end: DouZero's return) or ``win`` (the end
    of its hand, valued by the seat's chance to win the game from the totals the hand left,
    :func:`agents.search.win_chance`, exact when the hand ends the game: the objective the
    search ranks by; ``gamma`` unused)."""
    epsilon: float = 0.05
    """Chance that an actor's decision is a uniformly random legal action (else the argmax of
    Q); with ``epsilon_start``, the rate it decays to."""
    epsilon_start: float | None = None
    """Exploration at step 0, falling linearly to ``epsilon`` over ``epsilon_decay_steps``
    (None: ``epsilon`` throughout)."""
    epsilon_decay_steps: int = 1_000_000
    """Learner decisions over which ``epsilon_start`` falls to ``epsilon``."""
    game_loss: float = 0.0
    """Penalty points the hand that ends a game adds to the return of each seat that does not
    win it (a shared win among k: ``1 - 1/k`` of them), with horizon ``hand`` or ``episode``: the
    last hand's return then says who won the game (going out to end it is worth nothing to a
    seat that loses by it), not only who was left holding cards. 0: the penalty alone."""
    relabel: bool = False
    """Regress each decision under a labelling of the colours in play drawn uniformly for it
    (:mod:`odin_env.symmetry`: the observation and the action relabelled alike, the target
    unchanged), so the network learns the symmetry that its player, reading a position under
    several labellings (a model's ``symmetries``), averages over. The actors play unrelabelled."""
    acting_symmetries: int = 1
    """The actors' greedy choice reads each position under this many colour labellings and
    takes the mean ``Q`` (as a model's ``symmetries`` plays, 1-720): the returns then value the
    policy that the written model plays under its labellings, not the network read once."""

    def check(self, run: TrainConfig) -> None:
        """Raise ``ValueError`` naming the first bad setting."""
        self.check_network(run)
        check_positive_ints(self, ("decisions_per_update", "epsilon_decay_steps"))
        if not 1 <= self.acting_symmetries <= MAX_SYMMETRIES:
            raise ValueError(
                f"acting_symmetries must be 1-{MAX_SYMMETRIES}; got {self.acting_symmetries}"
            )
        check_finite(self, {
            "gamma": (0.0, 1.0, "in [0, 1]", True),
            "epsilon": (0.0, 1.0, "in [0, 1]", True),
            "epsilon_start": (0.0, 1.0, "in [0, 1] (or unset)", True),
        })  # fmt: skip
        if self.horizon not in HORIZONS:
            raise ValueError(f"horizon must be one of {', '.join(HORIZONS)}; got {self.horizon!r}")
        check_game_loss(self.game_loss, self.horizon)
        if self.horizon == "hand" and run.game.reward != "penalty":
            raise ValueError(
                "horizon hand needs reward penalty (a hand's end pays nothing with reward "
                f"{run.game.reward!r}); use horizon episode"
            )
        if run.ray is not None:
            raise ValueError(
                f"ray: the dmc learner collects in its own process; leave ray unset (got "
                f"{run.ray!r})"
            )

    def exploration(self, steps: int) -> float:
        """Epsilon after ``steps`` learner decisions."""
        if self.epsilon_start is None:
            return float(self.epsilon)
        left = max(0.0, 1.0 - steps / self.epsilon_decay_steps)
        return float(self.epsilon + (self.epsilon_start - self.epsilon) * left)


def check_tables(tables: object, run: TrainConfig) -> None:
    """``ValueError`` unless ``tables`` is a list of distinct table sizes the game allows, each
    with the learner's fixed ``seat`` (if any)."""
    sizes = f"{MIN_PLAYERS}-{MAX_PLAYERS}"
    if not isinstance(tables, (list, tuple)) or any(
        isinstance(n, bool) or not isinstance(n, int) or not MIN_PLAYERS <= n <= MAX_PLAYERS
        for n in tables
    ):
        raise ValueError(f"other_tables must be table sizes ({sizes} players); got {tables!r}")
    if len(set(tables)) != len(tables):
        raise ValueError(f"other_tables names a size twice; got {list(tables)}")
    if tables and run.seat is not None and run.seat >= min(tables):
        raise ValueError(
            f"seat {run.seat} does not exist at a table of {min(tables)} (other_tables); "
            "leave seat unset or choose a lower one"
        )
    for players in tables:
        try:
            table_game(run.game, players)
        except ValueError as error:
            raise ValueError(f"{error} (other_tables {players}); or leave colours unset") from None


def table_game(game: Config, players: int) -> Config:
    """The run's game at a table of ``players``: R3's colours for that size (4 at 2 players,
    else 6) when the run's game has its own size's, else the run's colours."""
    own_default = replace(game, colours=None).colours == game.colours
    return replace(game, players=players, colours=None if own_default else game.colours)


def table_sizes(other_tables: list[int], run: TrainConfig) -> list[int]:
    """The table sizes a learner plays, in turn: the game's, then ``other_tables``."""
    return [run.game.players, *(n for n in other_tables if n != run.game.players)]


class QNetwork(th.nn.Module):
    """``Q(o, a)`` (see :mod:`agents.dmc` for the layers; the tensors' names are
    :data:`agents.dmc.TENSORS`)."""

    def __init__(self, net: list[int]):
        super().__init__()
        self.state_in = th.nn.Linear(OBS_SIZE, net[0])
        self.action_in = th.nn.Linear(NUM_ACTION_FEATURES, net[0], bias=False)
        self.hidden = th.nn.ModuleList(th.nn.Linear(a, b) for a, b in zip(net, net[1:]))
        self.q = th.nn.Linear(net[-1], 1)
        # The shared table, not a parameter and not saved: the player has its own copy.
        self.register_buffer("features", th.from_numpy(ACTION_FEATURES.copy()), persistent=False)

    def forward(
        self, obs: th.Tensor, actions: th.Tensor, rows: th.Tensor | None = None
    ) -> th.Tensor:
        """Q of each pair ``(obs[rows[k]], actions[k])`` (``rows`` None: pair ``k`` is row
        ``k``): ``(P,)``."""
        z = self.state_in(obs)
        z = z if rows is None else z[rows]
        z = th.relu(z + self.action_in(self.features[actions]))
        for layer in self.hidden:
            z = th.relu(layer(z))
        return self.q(z).squeeze(-1)


class DMCLearner:
    """Deep Monte Carlo on the batched engine (see the module docstring): a
    :class:`odin_lab.training.learner.Learner`."""

    kind = "dmc"

    def __init__(self, config: TrainConfig):
        th.set_num_threads(config.torch_threads)
        self.config, self.settings = config, config.algo_config
        self.device = th.device(device_of(config))
        with th.random.fork_rng(devices=[]):
            th.manual_seed(spawn_seed(config.seed, GAMES_STREAM, 0, INIT))
            self.net = QNetwork(list(self.settings.net))
        # An init network of another horizon values in other units: its head is refitted to
        # the first update's targets before that update (_refit_head).
        self.refit_head = False
        if config.init:
            try:
                info, state = read_dmc_model(config.init)
                self.net.load_state_dict({k: th.from_numpy(v.copy()) for k, v in state.items()})
            except (FileNotFoundError, ValueError, RuntimeError) as error:
                raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
            self.refit_head = value_horizon(info) != self.settings.horizon
        self.net.to(self.device)
        if self.settings.optimizer == "rmsprop":
            self.optimizer: th.optim.Optimizer = th.optim.RMSprop(
                self.net.parameters(), lr=self.settings.learning_rate, alpha=0.99, eps=1e-5
            )
        else:
            self.optimizer = th.optim.Adam(self.net.parameters(), lr=self.settings.learning_rate)
        self.steps, self.n_updates, self.last_snapshot = 0, 0, 0
        self.snapshots: list[DMCAgent] = []
        self.pools: list[OpponentPool] = []
        self.collectors: list[DMCCollector] = []
        self.collector: DMCCollector | None = None

    def warm_start(self, run_dir: Path, provenance: dict[str, Any]) -> dict[str, float]:
        """DMC has no warm start (``init`` weights are loaded when the learner is built)."""
        return {}

    def start(self) -> None:
        config, steps = self.config, self.steps
        rng = np.random.default_rng(spawn_seed(config.seed, GAMES_STREAM, steps, EXPLORE))
        self.shuffle = th.Generator().manual_seed(
            spawn_seed(config.seed, GAMES_STREAM, steps, SHUFFLE)
        )
        self.relabel_rng = np.random.default_rng(
            spawn_seed(config.seed, GAMES_STREAM, steps, RELABEL)
        )
        self.pools, self.collectors = [], []
        returns = (self.settings.gamma, self.settings.horizon, self.settings.game_loss)
        for k, players in enumerate(table_sizes(self.settings.other_tables, config)):
            # The first size keeps the seeds of a one-size run; another size k has sub-stream k.
            key = (steps,) if k == 0 else (steps, TABLES, k)
            pool = None
            if config.opponents != [LEARNER]:
                seed = spawn_seed(config.seed, POOL_STREAM, *key)
                pool = OpponentPool(config.opponents, players, config.seat, seed)
                self.pools.append(pool)
            game = table_game(config.game, players)
            games = BatchedGames(
                game, config.selfplay_batch, seed=spawn_seed(config.seed, GAMES_STREAM, *key)
            )
            self.collectors.append(DMCCollector(games, pool, self.chooser(), rng, *returns))
        self.collector = self.collectors[0]
        if SELF in config.opponents and not self.snapshots:
            self.snapshot()
        else:
            for pool in self.pools:
                pool.set_snapshots(self.snapshots)

    def take_turn(self) -> DMCCollector:
        """The collector of this update's table size (the sizes take one update each, in
        turn), made :attr:`collector`."""
        self.collector = self.collectors[self.n_updates % len(self.collectors)]
        return self.collector

    def chooser(self) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
        """What the actors play in the learner's seats when they do not explore: argmax Q."""
        return self.greedy

    def greedy(self, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """The legal action of highest Q for each row (ties: the lowest index), all legal pairs
        scored in one forward pass per labelling (``acting_symmetries``: Q their mean)."""
        rows, actions = legal_pairs(mask)
        q = labelled_mean(self._pair_q, obs, rows, actions, self.settings.acting_symmetries)
        return argmax_by_row(rows, actions, q)  # ties: the lowest index, as the numpy player

    def _pair_q(self, obs: np.ndarray, rows: np.ndarray, actions: np.ndarray) -> np.ndarray:
        device = self.device
        with th.no_grad():
            return (
                self.net(
                    th.as_tensor(obs, device=device),
                    th.as_tensor(actions, device=device),
                    th.as_tensor(rows, device=device),
                )
                .cpu()
                .numpy()
            )

    def train_step(self) -> dict[str, float]:
        settings = self.settings
        epsilon = settings.exploration(self.steps)
        batch = self.take_turn().collect(settings.decisions_per_update, epsilon)
        with held_interrupts():
            figures = self._update(batch)
            self.steps += len(batch)
            self.n_updates += 1
        figures.update(episode_summary(batch.episodes))
        figures["train/epsilon"] = epsilon
        figures["train/mean_return"] = float(batch.returns.mean())
        return figures

    def _update(self, batch: Finished) -> dict[str, float]:
        """``epochs`` passes of minibatch regressions of Q onto the returns."""
        device, settings = self.device, self.settings
        obs, actions = batch.obs, batch.actions
        if settings.relabel:
            obs, actions = self.relabelled(obs, actions)
        obs = th.as_tensor(obs, device=device)
        actions = th.as_tensor(actions, device=device)
        returns = th.as_tensor(batch.returns, device=device)
        if self.refit_head and self.n_updates == 0:
            self._refit_head(obs, actions, returns)
        losses = []
        self.net.train()
        for _ in range(settings.epochs):
            order = th.randperm(len(batch), generator=self.shuffle).to(device)
            for start in range(0, len(batch), settings.batch_size):
                pick = order[start : start + settings.batch_size]
                loss = th.nn.functional.mse_loss(self.net(obs[pick], actions[pick]), returns[pick])
                self.optimizer.zero_grad()
                loss.backward()
                th.nn.utils.clip_grad_norm_(self.net.parameters(), settings.max_grad_norm)
                self.optimizer.step()
                losses.append(float(loss.detach()))
        self.net.eval()
        return {"train/q_loss": float(np.mean(losses)), "train/decisions": float(len(batch))}

    def relabelled(self, obs: np.ndarray, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Copies of the decisions ``(obs, actions)``, each under a labelling of its colours in
        play drawn uniformly from all of them (the identity among them) by ``relabel_rng``."""
        colours = colours_in_play(obs)
        obs, actions = obs.copy(), actions.copy()
        for count in np.unique(colours):
            rows = np.flatnonzero(colours == count)
            obs_maps, action_maps = colour_relabellings(int(count), math.factorial(int(count)))
            pick = self.relabel_rng.integers(len(obs_maps), size=len(rows))
            obs[rows] = np.take_along_axis(obs[rows], obs_maps[pick], axis=1)
            actions[rows] = action_maps[pick, actions[rows]]
        return obs, actions

    def _refit_head(
        self,
        obs: th.Tensor,
        actions: th.Tensor,
        returns: th.Tensor,
        rows: th.Tensor | None = None,
    ) -> None:
        """Map the network's values affinely, ``a * Q + b`` with ``a > 0`` (the least-squares fit
        of ``returns`` on ``Q``; where they do not rise together, ``a`` matches their spreads),
        by rescaling the last layer: the actions' order, and so the player, stay as they were,
        and the first updates fit the new targets without tearing down the features an init
        network of another horizon brings (its values are in other units: penalty, not win
        chance). ``rows``: as :meth:`QNetwork.forward`'s."""
        with th.no_grad():
            q = self.net(obs, actions, rows).double()
            target = returns.double()
            spread = q.var(unbiased=False)
            slope = ((q - q.mean()) * (target - target.mean())).mean() / spread
            if not bool(th.isfinite(slope)) or slope <= 0:
                slope = target.std(unbiased=False) / spread.sqrt()
            if not bool(th.isfinite(slope)) or slope <= 0:
                slope = th.tensor(1.0, dtype=th.float64)
            shift = target.mean() - slope * q.mean()
            head = self.net.q
            head.bias.copy_(slope * head.bias.double() + shift)
            head.weight.mul_(slope)
        self.refit_head = False

    def state(self) -> dict[str, np.ndarray]:
        """The network's arrays (a copy), by their names."""
        return {k: v.detach().cpu().numpy().copy() for k, v in self.net.state_dict().items()}

    def info(self) -> dict[str, Any]:
        """The ``model`` metadata of the current network (docs/model-format.md)."""
        sizes = table_sizes(self.settings.other_tables, self.config)
        players = sizes[0] if len(sizes) == 1 else None
        return dmc_info(self.settings.net, players, horizon=self.settings.horizon)

    def snapshot(self) -> None:
        snap = DMCAgent(self.state(), self.info(), name=SELF)
        self.snapshots = [*self.snapshots, snap][-self.config.max_snapshots :]
        self.last_snapshot = self.steps
        for pool in self.pools:
            pool.set_snapshots(self.snapshots)

    def write_player(self, path: Path, provenance: dict[str, Any]) -> Path:
        return write_model(path, self.state(), {**self.info(), "provenance": provenance})

    def checkpoint(self) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any]]:
        tensors = {f"policy/{k}": v for k, v in self.state().items()}
        optimizer = self.optimizer.state_dict()
        plain: dict[str, dict[str, Any]] = {}
        for index, values in optimizer["state"].items():
            plain[str(index)] = {}
            for name, value in values.items():
                if isinstance(value, th.Tensor):
                    tensors[f"optimizer/{index}/{name}"] = value.detach().cpu().numpy()
                else:
                    plain[str(index)][name] = value
        for k, snap in enumerate(self.snapshots):
            for name, value in snap.arrays.items():
                tensors[f"snapshot/{k}/{name}"] = value
        run = {
            "n_updates": self.n_updates,
            "last_snapshot": self.last_snapshot,
            "snapshots": len(self.snapshots),
            "optimizer": {"param_groups": optimizer["param_groups"], "state": plain},
        }
        return tensors, self.info(), run

    def load_checkpoint(self, tensors: dict[str, Any], run: dict[str, Any]) -> None:
        prefix = "policy/"
        weights = {
            k[len(prefix) :]: th.from_numpy(np.array(v))
            for k, v in tensors.items()
            if k.startswith(prefix)
        }
        self.net.load_state_dict(weights)
        state: dict[int, dict[str, Any]] = {
            int(i): dict(v) for i, v in run["optimizer"]["state"].items()
        }
        for key, value in tensors.items():
            if key.startswith("optimizer/"):
                _, index, name = key.split("/", 2)
                state.setdefault(int(index), {})[name] = th.from_numpy(np.array(value))
        self.optimizer.load_state_dict(
            {"state": state, "param_groups": run["optimizer"]["param_groups"]}
        )
        self.steps = int(run["step"])
        self.n_updates = int(run.get("n_updates", 0))
        self.last_snapshot = int(run.get("last_snapshot", 0))
        names = list(weights)
        self.snapshots = [
            DMCAgent({n: np.array(tensors[f"snapshot/{k}/{n}"]) for n in names}, self.info(), SELF)
            for k in range(int(run.get("snapshots", 0)))
        ]

    def close(self) -> None:
        self.collector, self.collectors = None, []


__all__ = [
    "DMCConfig", "DMCLearner", "QNetwork", "QNetworkSettings", "check_finite",
    "check_positive_ints", "check_tables", "table_game", "table_sizes",
]  # fmt: skip
