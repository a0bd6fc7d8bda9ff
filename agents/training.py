"""PPO training for Odin: MaskablePPO on :class:`odin_env.single_agent.SingleAgentEnv`, or
shared-parameter self-play on the batched engine.

Two engines collect the experience (``engine``):

- ``subproc``: ``n_envs`` subprocesses of ``SingleAgentEnv``; the learner holds one seat and the
  ``opponents`` play the others inside each step.
- ``batched`` (default): :func:`agents.selfplay.train_selfplay` on ``selfplay_batch`` games of
  :class:`odin_env.batched.BatchedGames` in the main process, all games in lockstep. The learner
  holds one seat per game against the same opponent pool (:class:`agents.pool.OpponentPool`;
  ``random``, ``greedy`` and PPO snapshots play batched, the other heuristics game by game), or
  every seat in the games that draw the kind ``learner`` (shared-parameter self-play: every
  decision is a training sample; ``--opponents learner`` alone is pure self-play). Each update
  trains on at least ``n_steps x n_envs`` learner decisions (rounded up to a multiple of
  ``selfplay_batch``); the step counter counts the decisions trained on, and training stops after
  the update that reaches ``total_steps`` (it may pass it by one rollout). Run directory,
  checkpoints, evaluations and resume are the same as with ``subproc``; TensorBoard also gets
  ``selfplay/mean_penalty`` for the self-play games.

One run lives in ``runs/NAME/``:

=====================  =======================================================================
``config.json``        the exact :class:`TrainConfig` (and library versions)
``checkpoint.zip``     the last checkpoint: a MaskablePPO ``.zip`` (loadable as ``ppo:PATH``)
                       with the run's state (step counter, snapshot pool, evaluations) inside;
                       written every ``checkpoint_every`` steps, at the end and on Ctrl-C,
                       atomically (temporary file, then ``os.replace``)
``best.zip``           the policy with the best evaluation score so far (``ppo:runs/NAME/best.zip``)
``imitation.zip``      with ``imitate``: the policy after the warm start, before any PPO step
``evaluations.jsonl``  one line per evaluation: step, win rate and 95% interval per opponent
``tb/``                TensorBoard: ``opponents/<kind>/win_rate`` and ``mean_penalty``
                       (and ``selfplay/mean_penalty``), ``charts/episode_length``,
                       ``charts/steps_per_s``, ``eval/<agent>/...``, and SB3's ``train/``
                       (entropy, losses, KL, clip fraction)
=====================  =======================================================================

Warm start (``imitate``, optional): before PPO, the policy is fitted to a heuristic's choices in
games it plays against itself (cross-entropy over the legal actions) and the critic to the
discounted returns each seat saw. From scratch, PPO needed ~400k steps to reach 8% against
three ``greedy``; imitating ``planner`` for ~2 minutes reached ~40% before the first PPO step.

Opponents are a pool of kinds (agent specs, or ``self``: frozen snapshots of the learner taken
every ``snapshot_every`` steps, the ``max_snapshots`` most recent kept); one kind is drawn per
episode. Evaluations play :func:`agents.tournament.play_tournament` (rotated seats, seeded deals)
against three copies of each evaluation opponent.

Speed (why the defaults): the update, not the game, dominates MaskablePPO with 3,634 actions.
The policy is :class:`agents.ppo.LegalSetPolicy` (distribution over the legal actions only), the
minibatches are large (1,024) with few epochs (4), the MLP is modest, and torch runs one thread per
process: the machine is shared, and with two threads a second busy process slowed training
about 15x, while one thread was as fast on an idle machine. The ``batched`` engine is the default:
against three ``greedy`` it trained at 2,351 learner steps/s on one core, against 1,028 for four
subprocess envs on two (``benchmarks/train_throughput.py``), and learnt as well
(``benchmarks/train_quality.py``). With ``subproc``, masks travel in the step ``info``, so the
trainer does not query every subprocess for them (see :class:`MasksFromInfo`).

Residual policies (``prior``, batched engine only): the policy reads a heuristic's choice beside
the observation and adds a learned bonus to that action's logit (:mod:`agents.ppo`), so it starts
as the heuristic and PPO learns where to depart from it.
"""

from __future__ import annotations

import io
import json
import math
import os
import signal
import time
import zipfile
from collections import defaultdict
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch as th
from stable_baselines3.common.callbacks import BaseCallback
from stable_baselines3.common.logger import configure
from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv, VecEnv, VecEnvWrapper

from agents.files import write_atomic
from agents.pool import LEARNER, OpponentPool
from agents.ppo import (
    LegalSetPolicy,
    NumpyPolicy,
    check_prior,
    prior_actions,
    prior_space,
    save_policy_only,
)
from odin_env.rules import NUM_ACTIONS, Config
from odin_env.single_agent import SELF, SingleAgentEnv, check_spec

CHECKPOINT = "checkpoint.zip"
BEST = "best.zip"
STATE_MEMBER = "odin_training.npz"
CONFIG_MEMBER = "odin_config.json"
GAME_FIELDS = ("players", "threshold", "colours", "first_player", "episode", "reward")
ENGINES = ("subproc", "batched")


class TrainingError(Exception):
    """A problem the user can fix (bad run directory, corrupt checkpoint): one line, exit 2."""


@dataclass
class TrainConfig:
    """Everything that defines a run; stored in ``runs/NAME/config.json``."""

    name: str = "ppo"
    """The run's directory name under ``runs_dir``."""
    runs_dir: str = "runs"
    """Where runs live."""
    players: int = 4
    """Seats at the table (2-6)."""
    threshold: int = 15
    """Penalty threshold that ends a game."""
    colours: int | None = None
    """Colours in play (None: 4 for 2 players, else 6)."""
    first_player: str = "rotate"
    """Who leads each hand: rotate, winner, random or fixed."""
    episode: str = "game"
    """Episode: a whole game or one hand."""
    reward: str = "penalty"
    """``penalty`` (minus the cards left, each hand: dense) or ``win`` (win share at the end)."""
    seat: int | None = None
    """The learner's seat; None draws it per episode."""
    opponents: list[str] = field(default_factory=lambda: ["greedy"])
    """Opponent pool: agent specs, ``self`` (snapshots) and, with the ``batched`` engine,
    ``learner`` (the learner holds every seat); one kind is drawn per episode."""
    engine: str = "batched"
    """How experience is collected: ``batched`` (all games in lockstep on the batched engine, in
    the main process: the fastest) or ``subproc`` (one learner seat per env process)."""
    selfplay_batch: int = 256
    """Games in lockstep with the ``batched`` engine."""
    total_steps: int = 2_000_000
    """Learner decisions to train for (the step counter includes earlier, resumed steps; 0 with
    ``imitate``: the warm start only)."""
    n_envs: int = 4
    """Environments, each in its own subprocess (1: in the main process); with the ``batched``
    engine it only sizes the rollout (``n_steps x n_envs`` decisions)."""
    n_steps: int = 1024
    """Steps per environment per rollout."""
    batch_size: int = 1024
    """Minibatch size of the PPO update."""
    n_epochs: int = 4
    """Passes over each rollout."""
    learning_rate: float = 1e-3
    """Adam step size."""
    gamma: float = 0.995
    """Discount per learner decision."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    clip_range: float = 0.2
    """PPO clip range."""
    ent_coef: float = 0.01
    """Entropy bonus weight."""
    vf_coef: float = 0.5
    """Value loss weight."""
    net_pi: list[int] = field(default_factory=lambda: [256, 128])
    """Hidden layers of the actor."""
    net_vf: list[int] = field(default_factory=lambda: [256, 128])
    """Hidden layers of the critic."""
    snapshot_every: int = 200_000
    """Steps between snapshots of the learner for the ``self`` opponents."""
    max_snapshots: int = 5
    """Snapshots kept in the ``self`` pool (the most recent)."""
    checkpoint_every: int = 200_000
    """Steps between checkpoints."""
    eval_every: int = 200_000
    """Steps between evaluations (0: never)."""
    eval_deals: int = 50
    """Deals per evaluation opponent (each played from every seat)."""
    eval_opponents: list[str] = field(default_factory=lambda: ["greedy", "planner"])
    """Agents evaluated against (three copies each at 4 players)."""
    torch_threads: int = 1
    """Torch threads per process (1: see the module docstring)."""
    init: str | None = None
    """Start from the weights of this model ``.zip`` (a curriculum: e.g. greedy first)."""
    imitate: str | None = None
    """Warm start: before PPO, fit the policy (and value) to this agent's play (e.g. planner)."""
    prior: str | None = None
    """A residual policy over this heuristic (``batched`` engine): the policy adds a learned
    bonus to the heuristic's choice at every decision, so it starts as that heuristic and learns
    where to depart from it (see :mod:`agents.ppo`)."""
    imitate_games: int = 1000
    """Games of the imitated agent against itself used for the warm start."""
    imitate_epochs: int = 4
    """Passes over the imitation data."""
    seed: int = 0
    """Seed of the model, the environments and the evaluations."""

    def game_config(self) -> Config:
        """The game settings, checked."""
        return Config(**{name: getattr(self, name) for name in GAME_FIELDS})

    def check(self) -> None:
        """Raise ``ValueError`` naming the first bad field."""
        self.game_config()
        if not isinstance(self.total_steps, int) or self.total_steps < 0:
            raise ValueError(
                f"total_steps must be >= 0 (0: only the warm start); got {self.total_steps!r}"
            )
        if self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}; got {self.engine!r}")
        positive = ("n_envs", "n_steps", "batch_size", "n_epochs", "max_snapshots")
        for name in (
            *positive,
            "snapshot_every",
            "checkpoint_every",
            "eval_deals",
            "torch_threads",
            "selfplay_batch",
        ):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer; got {value!r}")
        if self.eval_every < 0:
            raise ValueError(f"eval_every must be >= 0 (0: never); got {self.eval_every}")
        if self.imitate_games < 1 or self.imitate_epochs < 1:
            raise ValueError("imitate_games and imitate_epochs must be positive integers")
        if not self.opponents:
            raise ValueError("opponents must name at least one agent spec or 'self'")
        check_prior(self.prior)
        if self.prior is not None and self.engine != "batched":
            raise ValueError(f"prior needs engine 'batched'; got engine {self.engine!r}")
        for kind in self.opponents:
            if kind not in (SELF, LEARNER):
                check_spec(kind)
        if LEARNER in self.opponents and self.engine != "batched":
            raise ValueError(
                f"opponent {LEARNER!r} (the learner in every seat) needs engine 'batched'; "
                f"got engine {self.engine!r}"
            )
        if self.opponents == [LEARNER] and self.seat is not None:
            raise ValueError(
                f"seat has no meaning with opponents ['{LEARNER}'] (every seat is the learner); "
                f"leave it unset; got {self.seat}"
            )
        if not self.name or "/" in self.name or self.name in (".", ".."):
            raise ValueError(f"name must be a plain directory name; got {self.name!r}")

    @property
    def run_dir(self) -> Path:
        """``runs_dir/name``."""
        return Path(self.runs_dir) / self.name


# -- environments ---------------------------------------------------------------------------------


class _EnvFactory:
    """Builds one environment inside its worker (picklable, unlike a closure over the config)."""

    def __init__(self, config: TrainConfig):
        self.kwargs = {name: getattr(config, name) for name in GAME_FIELDS}
        self.kwargs.update(
            opponents=list(config.opponents),
            seat=config.seat,
            max_snapshots=config.max_snapshots,
            illegal="raise",
        )
        self.threads = config.torch_threads

    def __call__(self) -> SingleAgentEnv:
        th.set_num_threads(self.threads)
        # Ctrl-C goes to the whole process group: the trainer saves a checkpoint, so the
        # workers must keep serving until it closes them.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        return SingleAgentEnv(**self.kwargs)


class MasksFromInfo(VecEnvWrapper):
    """Answers MaskablePPO's per-step ``env_method("action_masks")`` from the masks the
    environments already sent in their step (or reset) ``info``: one round trip per step to the
    subprocesses instead of two."""

    def __init__(self, venv: VecEnv):
        super().__init__(venv)
        self.masks: np.ndarray | None = None

    def reset(self) -> np.ndarray:
        obs = self.venv.reset()
        self.masks = np.stack([info["action_mask"] for info in self.venv.reset_infos])
        return obs

    def step_wait(self):  # noqa: ANN201 - VecEnv's own signature
        obs, rewards, dones, infos = self.venv.step_wait()
        resets = self.venv.reset_infos
        self.masks = np.stack(
            [
                (resets[i] if done else info)["action_mask"]
                for i, (done, info) in enumerate(zip(dones, infos))
            ]
        )
        return obs, rewards, dones, infos

    def env_method(self, method_name: str, *args: Any, indices: Any = None, **kwargs: Any) -> list:
        if method_name == "action_masks" and self.masks is not None and not args and not kwargs:
            return list(self.masks[self.venv._get_indices(indices)])
        return self.venv.env_method(method_name, *args, indices=indices, **kwargs)


def make_vec_env(config: TrainConfig, seed: int) -> MasksFromInfo:
    """``n_envs`` environments (subprocesses when more than one), seeded ``seed, seed+1, ...``."""
    factories = [_EnvFactory(config) for _ in range(config.n_envs)]
    venv: VecEnv
    if config.n_envs == 1:
        venv = DummyVecEnv(factories)
    else:
        # forkserver: forking a process that already runs torch threads is unsafe.
        venv = SubprocVecEnv(factories, start_method="forkserver")
    venv.seed(seed)
    return MasksFromInfo(venv)


# -- the model ------------------------------------------------------------------------------------


def build_model(config: TrainConfig, env: VecEnv, tensorboard: bool = True) -> Any:
    """A new MaskablePPO with the run's settings (and ``init`` weights when given)."""
    from sb3_contrib import MaskablePPO

    model = MaskablePPO(
        LegalSetPolicy,
        env,
        learning_rate=config.learning_rate,
        n_steps=config.n_steps,
        batch_size=config.batch_size,
        n_epochs=config.n_epochs,
        gamma=config.gamma,
        gae_lambda=config.gae_lambda,
        clip_range=config.clip_range,
        ent_coef=config.ent_coef,
        vf_coef=config.vf_coef,
        policy_kwargs={
            "net_arch": {"pi": list(config.net_pi), "vf": list(config.net_vf)},
            "activation_fn": th.nn.ReLU,
            **({"prior": config.prior} if config.prior else {}),
        },
        seed=config.seed,
        device="cpu",
        verbose=0,
    )
    if config.init:
        from agents.ppo import read_model

        try:
            _, state = read_model(config.init)
            model.policy.load_state_dict(state)
        except (FileNotFoundError, ValueError, RuntimeError) as error:
            raise TrainingError(f"--init {config.init}: {str(error).splitlines()[0]}") from None
    if tensorboard:
        model.set_logger(configure(str(config.run_dir / "tb"), ["tensorboard"]))
    return model


# -- run state: config, checkpoints ---------------------------------------------------------------


@dataclass
class RunState:
    """What a checkpoint holds besides the model: the snapshot pool and the evaluations."""

    snapshots: list[NumpyPolicy] = field(default_factory=list)
    best_score: float = -math.inf
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    last_snapshot: int = 0


def _state_bytes(state: RunState) -> bytes:
    arrays: dict[str, np.ndarray] = {}
    for k, snap in enumerate(state.snapshots):
        for i, (w, b) in enumerate(snap.layers):
            arrays[f"s{k}_w{i}"], arrays[f"s{k}_b{i}"] = w, b
    meta = {
        "snapshots": [[len(s.layers), s.activation] for s in state.snapshots],
        "best_score": state.best_score if math.isfinite(state.best_score) else None,
        "evaluations": state.evaluations,
        "last_snapshot": state.last_snapshot,
    }
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    out = io.BytesIO()
    np.savez(out, **arrays)
    return out.getvalue()


def _state_from_bytes(payload: bytes) -> RunState:
    with np.load(io.BytesIO(payload), allow_pickle=False) as arrays:
        meta = json.loads(arrays["meta"].tobytes().decode())
        snapshots = [
            NumpyPolicy(
                [(arrays[f"s{k}_w{i}"], arrays[f"s{k}_b{i}"]) for i in range(count)],
                activation,
                deterministic=False,
                name=SELF,
            )
            for k, (count, activation) in enumerate(meta["snapshots"])
        ]
    best = meta["best_score"]
    return RunState(
        snapshots, -math.inf if best is None else best, meta["evaluations"], meta["last_snapshot"]
    )


def save_checkpoint(model: Any, config: TrainConfig, state: RunState) -> Path:
    """Write ``checkpoint.zip`` (model + run state + config) atomically; return its path."""
    buffer = io.BytesIO()
    model.save(buffer)
    with zipfile.ZipFile(buffer, "a", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(STATE_MEMBER, _state_bytes(state))
        archive.writestr(CONFIG_MEMBER, json.dumps(asdict(config)))
    path = config.run_dir / CHECKPOINT
    write_atomic(path, buffer.getvalue())
    return path


def load_checkpoint(run_dir: Path, env: VecEnv) -> tuple[Any, RunState]:
    """The model and run state of ``run_dir/checkpoint.zip``; ``TrainingError`` if unusable."""
    from sb3_contrib import MaskablePPO

    path = run_dir / CHECKPOINT
    if not path.is_file():
        raise TrainingError(f"cannot resume {run_dir}: it has no {CHECKPOINT}")
    try:
        with zipfile.ZipFile(path) as archive:
            state = _state_from_bytes(archive.read(STATE_MEMBER))
        model = MaskablePPO.load(path, env=env, device="cpu")
    except Exception as error:  # noqa: BLE001 - any failure here means an unusable file
        first = str(error).splitlines()[0] if str(error) else ""
        raise TrainingError(
            f"cannot resume from {path}: corrupt or incompatible checkpoint "
            f"({type(error).__name__}: {first})"
        ) from None
    return model, state


def write_config(config: TrainConfig) -> None:
    """``config.json`` with the exact settings and the library versions."""
    import sb3_contrib
    import stable_baselines3

    payload = asdict(config)
    payload["versions"] = {
        "torch": th.__version__,
        "stable_baselines3": stable_baselines3.__version__,
        "sb3_contrib": sb3_contrib.__version__,
        "numpy": np.__version__,
    }
    write_atomic(config.run_dir / "config.json", json.dumps(payload, indent=2).encode())


def read_config(run_dir: Path) -> TrainConfig:
    """The :class:`TrainConfig` stored in ``run_dir/config.json``; ``TrainingError`` if unusable."""
    path = run_dir / "config.json"
    try:
        payload = json.loads(path.read_text())
        known = {f.name for f in fields(TrainConfig)}
        config = TrainConfig(**{k: v for k, v in payload.items() if k in known})
        config.check()
    except FileNotFoundError:
        raise TrainingError(f"cannot resume {run_dir}: no config.json (is it a run?)") from None
    except (ValueError, TypeError) as error:
        raise TrainingError(f"cannot resume {run_dir}: bad config.json ({error})") from None
    return config


# -- evaluation -----------------------------------------------------------------------------------


def evaluate(
    model_path: Path, config: TrainConfig, opponent: str, deals: int, seed: int
) -> dict[str, float]:
    """Win rate, 95% Wilson interval and mean penalty of ``ppo:model_path`` against copies of
    ``opponent`` in seeded, seat-rotated games (:mod:`agents.tournament`, :mod:`agents.stats`)."""
    from agents.stats import seat_shares, wilson
    from agents.tournament import play_tournament

    game = config.game_config()
    specs = [f"ppo:{model_path}"] + [opponent] * (game.players - 1)
    records = play_tournament(specs, game, deals, seed, rotate=True, workers=1, progress=False)
    wins = penalty = 0.0
    for record in records:
        seat = record.agents.index(0)
        wins += seat_shares(record)[seat]
        penalty += record.totals[seat]
    low, high = wilson(wins, len(records))
    return {
        "win_rate": wins / len(records),
        "ci_low": low,
        "ci_high": high,
        "mean_penalty": penalty / len(records),
        "games": len(records),
    }


# -- imitation warm start -------------------------------------------------------------------------


def collect_demonstrations(
    teacher: str,
    game_config: Config,
    games: int,
    seed: int,
    gamma: float,
    prior: str | None = None,
) -> dict[str, np.ndarray]:
    """Every real decision of ``teacher`` playing all seats: observations, packed masks,
    actions, and each seat's discounted return from that decision on (the rewards the
    single-agent env would pay that seat, so the critic starts calibrated). ``prior``: each
    observation also holds that agent's action (the input of a prior policy)."""
    from tqdm import tqdm

    from agents.base import make
    from odin_env.observation import observe
    from odin_env.rules import Game

    n = game_config.players
    agents = [make(teacher, seed=seed + s) for s in range(n)]
    prior_agent = None if prior is None or prior == teacher else make(prior)
    obs, masks, actions, returns = [], [], [], []
    rng = np.random.default_rng(seed)
    for _ in tqdm(range(games), desc=f"imitate {teacher}", unit="game", mininterval=2.0):
        game = Game(game_config, seed=int(rng.integers(2**63)))
        rows: list[list[int]] = [[] for _ in range(n)]
        paid: list[list[float]] = [[] for _ in range(n)]
        while True:
            _credit(paid, game.play_forced())
            if game.is_over:
                break
            seat = game.current
            o, m = observe(game, seat), game.legal_mask()
            a = agents[seat].act(o, m)
            if prior is not None:
                p = a if prior_agent is None else prior_actions(prior_agent, o[None], m[None])[0]
                o = np.append(o, np.float32(p))
            rows[seat].append(len(obs))
            paid[seat].append(0.0)
            obs.append(o)
            masks.append(np.packbits(m.view(np.bool_)))
            actions.append(a)
            returns.append(0.0)
            _credit(paid, game.apply(a))
        for s in range(n):
            g = 0.0
            for row, r in zip(reversed(rows[s]), reversed(paid[s])):
                g = r + gamma * g
                returns[row] = g
    return {
        "obs": np.array(obs, dtype=np.float32),
        "masks": np.array(masks),
        "actions": np.array(actions, dtype=np.int64),
        "returns": np.array(returns, dtype=np.float32),
    }


def _credit(paid: list[list[float]], rewards: list[float] | None) -> None:
    """Add what a move paid each seat to that seat's latest decision (as the env does)."""
    if rewards is not None:
        for seat, decisions in enumerate(paid):
            if decisions:
                decisions[-1] += rewards[seat]


def imitate(model: Any, config: TrainConfig) -> dict[str, float]:
    """Fit ``model``'s policy to ``config.imitate``'s choices (cross-entropy over the legal
    actions) and its value to the returns seen (MSE); return the final losses."""
    data = collect_demonstrations(
        config.imitate,
        config.game_config(),
        config.imitate_games,
        config.seed,
        config.gamma,
        config.prior,
    )
    policy = model.policy
    size = len(data["actions"])
    rng = np.random.default_rng(config.seed)
    obs = th.as_tensor(data["obs"])
    actions = th.as_tensor(data["actions"])
    returns = th.as_tensor(data["returns"])
    losses = {"imitation/cross_entropy": 0.0, "imitation/value_mse": 0.0, "imitation/samples": size}
    from tqdm import tqdm

    batches = range(0, size, config.batch_size)
    bar = tqdm(
        total=config.imitate_epochs * len(batches), desc="fit", unit="batch", mininterval=2.0
    )
    for _ in range(config.imitate_epochs):
        order = rng.permutation(size)
        for lo in batches:
            bar.update()
            idx = order[lo : lo + config.batch_size]
            masks = np.unpackbits(data["masks"][idx], axis=1, count=NUM_ACTIONS)
            values, log_prob, _ = policy.evaluate_actions(
                obs[idx], actions[idx], action_masks=th.as_tensor(masks)
            )
            cross_entropy = -log_prob.mean()
            value_mse = th.nn.functional.mse_loss(values.flatten(), returns[idx])
            loss = cross_entropy + config.vf_coef * value_mse
            policy.optimizer.zero_grad()
            loss.backward()
            th.nn.utils.clip_grad_norm_(policy.parameters(), model.max_grad_norm)
            policy.optimizer.step()
            losses["imitation/cross_entropy"] = cross_entropy.item()
            losses["imitation/value_mse"] = value_mse.item()
            bar.set_postfix_str(f"cross-entropy {losses['imitation/cross_entropy']:.3f}")
    bar.close()
    return losses


# -- the training loop ----------------------------------------------------------------------------


class _RunCallback(BaseCallback):
    """Episode statistics per opponent kind, snapshots, checkpoints, evaluations, progress bar."""

    def __init__(self, config: TrainConfig, state: RunState, venv: VecEnv):
        super().__init__()
        self.config, self.state, self.venv = config, state, venv
        self.episodes: dict[str, list[tuple[float, float]]] = defaultdict(list)
        self.lengths: list[int] = []
        self.running = np.zeros(config.n_envs, dtype=np.int64)
        self.bar: Any = None
        self.latest_eval = "-"
        self.last_checkpoint = self.last_eval = 0
        self.clock = (time.perf_counter(), 0)
        self.pool: OpponentPool | None = None
        """The batched engine's opponent pool, which also receives the snapshots."""

    def _on_training_start(self) -> None:
        from tqdm import tqdm

        steps = self.model.num_timesteps
        every = self.config
        self.last_checkpoint = steps - steps % every.checkpoint_every
        self.last_eval = steps - steps % every.eval_every if every.eval_every else steps
        self.clock = (time.perf_counter(), steps)
        self.bar = tqdm(
            total=every.total_steps,
            initial=steps,
            unit="step",
            dynamic_ncols=True,
            smoothing=0.05,
            mininterval=2.0,
        )
        if self.state.evaluations:
            self.latest_eval = _eval_text(self.state.evaluations[-1])
        if SELF in every.opponents and not self.state.snapshots:
            self._snapshot()
        elif self.state.snapshots:
            self.venv.env_method("set_snapshots", self.state.snapshots)
            if self.pool is not None:
                self.pool.set_snapshots(self.state.snapshots)

    def _on_step(self) -> bool:
        self.running += 1
        for i, done in enumerate(self.locals["dones"]):
            if done:
                info = self.locals["infos"][i]
                self.episodes[info["opponent"]].append((info["win"], info["penalty"]))
                self.lengths.append(int(self.running[i]))
                self.running[i] = 0
        self.bar.update(self.config.n_envs)
        return True

    def _rate(self) -> float:
        """Steps per second since the previous call (collection, updates and evaluations)."""
        now, steps = time.perf_counter(), self.model.num_timesteps
        rate = (steps - self.clock[1]) / max(now - self.clock[0], 1e-9)
        self.clock = (now, steps)
        return rate

    def _on_rollout_end(self) -> None:
        logger = self.logger
        rate = self._rate()
        logger.record("charts/steps_per_s", rate)
        for kind, results in self.episodes.items():
            logger.record(f"opponents/{kind}/win_rate", float(np.mean([w for w, _ in results])))
            logger.record(f"opponents/{kind}/mean_penalty", float(np.mean([p for _, p in results])))
        if self.lengths:
            logger.record("charts/episode_length", float(np.mean(self.lengths)))
        self.episodes.clear()
        self.lengths.clear()
        self._periodic(rate)

    def on_selfplay_update(self, model: Any, rollout: Any) -> bool:
        """:func:`agents.selfplay.train_selfplay`'s callback, after each update: progress,
        evaluations and checkpoints (it logs its own rate and episode statistics)."""
        self.bar.update(len(rollout))
        self._periodic(self._rate())
        # train_selfplay dumped before calling back: write the evaluation at the step it ran.
        self.logger.dump(step=model.num_timesteps)
        return True

    def _periodic(self, rate: float) -> None:
        """Snapshots, evaluations and checkpoints that fall due at the current step."""
        config, steps = self.config, self.model.num_timesteps
        if SELF in config.opponents and steps - self.state.last_snapshot >= config.snapshot_every:
            self._snapshot()
        if config.eval_every and steps - self.last_eval >= config.eval_every:
            self.last_eval = steps
            self.run_evaluation()
        if steps - self.last_checkpoint >= config.checkpoint_every:
            self.last_checkpoint = steps
            save_checkpoint(self.model, config, self.state)
        self.bar.set_postfix_str(f"{rate:,.0f} steps/s | eval {self.latest_eval}")

    def _snapshot(self) -> None:
        snap = NumpyPolicy.from_policy(self.model.policy, deterministic=False, name=SELF)
        self.state.snapshots = [*self.state.snapshots, snap][-self.config.max_snapshots :]
        self.state.last_snapshot = self.model.num_timesteps
        self.venv.env_method("add_snapshot", snap)
        if self.pool is not None:
            self.pool.set_snapshots(self.state.snapshots)

    def run_evaluation(self) -> None:
        """Evaluate the current policy against each evaluation opponent; keep ``best.zip``."""
        config, steps = self.config, self.model.num_timesteps
        current = config.run_dir / "eval_model.zip"
        save_policy_only(self.model, current)
        entry: dict[str, Any] = {"step": steps}
        for k, opponent in enumerate(config.eval_opponents):
            result = evaluate(current, config, opponent, config.eval_deals, config.seed + k)
            entry[opponent] = result
            for key in ("win_rate", "mean_penalty"):
                self.logger.record(f"eval/{opponent}/{key}", result[key])
        score = float(np.mean([entry[o]["win_rate"] for o in config.eval_opponents]))
        entry["score"] = score
        self.state.evaluations.append(entry)
        if score > self.state.best_score:
            self.state.best_score = score
            os.replace(current, config.run_dir / BEST)
        else:
            current.unlink(missing_ok=True)
        with open(config.run_dir / "evaluations.jsonl", "a") as f:
            f.write(json.dumps(entry) + "\n")
        self.latest_eval = _eval_text(entry)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _eval_text(entry: dict[str, Any]) -> str:
    parts = [f"{k} {v['win_rate']:.0%}" for k, v in entry.items() if isinstance(v, dict)]
    return ", ".join(parts) or "-"


def train(config: TrainConfig, resume: bool = False) -> Path:
    """Train (or resume) the run ``config.run_dir``; return the checkpoint path.

    A new run refuses a directory that already holds a checkpoint (resume it instead)."""
    config.check()
    run_dir = config.run_dir
    if not resume and (run_dir / CHECKPOINT).exists():
        raise TrainingError(f"{run_dir} already holds a run: resume it or choose another --name")
    run_dir.mkdir(parents=True, exist_ok=True)
    th.set_num_threads(config.torch_threads)
    batched = config.engine == "batched"
    venv = None
    try:
        if resume:
            venv = spaces_env(config) if batched else make_vec_env(config, config.seed + 1)
            model, state = load_checkpoint(run_dir, venv)
            venv.seed(config.seed + 1 + model.num_timesteps)
            model.set_logger(configure(str(run_dir / "tb"), ["tensorboard"]))
        else:
            write_config(config)
            venv = spaces_env(config) if batched else make_vec_env(config, config.seed + 1)
            model, state = build_model(config, venv), RunState()
            if config.imitate:
                for key, value in imitate(model, config).items():
                    model.logger.record(key, value)
                save_policy_only(model, run_dir / "imitation.zip")
        callback = _RunCallback(config, state, venv)
        remaining = config.total_steps - model.num_timesteps
        try:
            if remaining > 0 and batched:
                _learn_selfplay(model, config, callback)
            elif remaining > 0:
                model.learn(remaining, callback=callback, reset_num_timesteps=False)
        except KeyboardInterrupt:
            path = save_checkpoint(model, config, state)
            callback.close()
            print(f"\ninterrupted at step {model.num_timesteps:,}: checkpoint saved to {path}")
            raise
        callback.close()
        if config.eval_every and (
            not state.evaluations or state.evaluations[-1]["step"] != model.num_timesteps
        ):
            callback.model = model
            callback.run_evaluation()
            model.logger.dump(step=model.num_timesteps)
        return save_checkpoint(model, config, state)
    finally:
        if venv is not None:
            close_vec_env(venv)


def spaces_env(config: TrainConfig) -> DummyVecEnv:
    """One in-process ``SingleAgentEnv`` of the run's game: it gives the batched engine's model
    its observation and action spaces (and a loaded checkpoint its env); it is never stepped."""
    game = {name: getattr(config, name) for name in GAME_FIELDS}

    def make() -> gym.Env:
        env = SingleAgentEnv(**game)
        if config.prior is not None:
            # The policy also reads the prior's action: only the space changes (never stepped).
            env = gym.wrappers.TransformObservation(env, lambda o: o, prior_space())
        return env

    return DummyVecEnv([make])


def _learn_selfplay(model: Any, config: TrainConfig, callback: _RunCallback) -> None:
    """Train to ``config.total_steps`` by batched self-play; ``callback`` does the run's
    bookkeeping after each update, as it does at each rollout's end with ``model.learn``."""
    from agents.selfplay import train_selfplay

    pool = None
    if config.opponents != [LEARNER]:
        pool = OpponentPool(
            config.opponents, config.players, config.seat, config.seed + 2 + model.num_timesteps
        )
    callback.pool = pool
    callback.init_callback(model)
    callback.on_training_start({}, {})
    train_selfplay(
        model,
        config.game_config(),
        config.total_steps,
        batch=config.selfplay_batch,
        rollout_decisions=config.n_steps * config.n_envs,
        # A resumed run deals new games rather than replaying the first ones.
        seed=config.seed + 1 + model.num_timesteps,
        callback=callback.on_selfplay_update,
        progress=False,  # the callback's bar, which also shows the latest evaluation
        pool=pool,
    )


def close_vec_env(venv: VecEnv) -> None:
    """Close the environments, also after an interrupt in the middle of a step.

    Ctrl-C inside ``SubprocVecEnv.step_wait`` can leave some workers' results read and others
    not; its ``close`` would then wait for a result that was already read and hang forever. The
    workers still obey a close command, so clear the flag and close."""
    inner = venv.venv if isinstance(venv, VecEnvWrapper) else venv
    if getattr(inner, "waiting", False):
        inner.waiting = False
    venv.close()


__all__ = [
    "TrainConfig", "TrainingError", "MasksFromInfo", "RunState", "build_model", "evaluate",
    "close_vec_env", "collect_demonstrations", "imitate", "spaces_env", "ENGINES",
    "load_checkpoint", "make_vec_env", "read_config", "save_checkpoint", "train", "write_config",
]  # fmt: skip
