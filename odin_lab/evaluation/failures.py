"""A player's failure as a result: what an agent did wrong in a tournament, named in one line.

An agent fails when its ``reset``, ``act`` or ``act_batch`` raises (any exception, ``SystemExit``
too; Ctrl-C is not a failure), returns an action that is not an integer (``3.7``, ``"12"``,
``True``, ``None``: refused, never truncated; numpy integers are integers) or not a legal one,
or takes longer than the decision limit on one decision. The tournament raises
:class:`AgentFailed` saying who (the agent's spec), where (its seat, the deal and rotation) and
what it did, with the full traceback in ``details``; :func:`~odin_lab.evaluation.tournament.
play_tournament` keeps the deals finished before it (as Ctrl-C does) and the command writes the
traceback to :data:`FAILURE_FILE` in its output folder.

The decision limit is a setting of the process (:func:`set_decision_limit`; the commands'
``--decision-limit``), carried to the worker processes with each tournament's job. It is enforced
with ``SIGALRM`` in the main thread of the process that plays (a thread elsewhere, a Ray worker's,
plays without one).
"""

from __future__ import annotations

import contextlib
import math
import operator
import signal
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from functools import partial

import numpy as np

from agents.batch import check_batch, takes_keys

FAILURE_FILE = "failure.txt"
"""The file, in a command's output folder, that holds a failed agent's full traceback."""
DECISION_LIMIT_S = 120.0
"""Default limit of one decision, in seconds: twice the longest decision a built-in spec may
take (``search:60000ms``), so no built-in agent is ever stopped by it, and a hung agent is
named within two minutes."""
MAX_DECISION_LIMIT_S = 86_400.0
"""The largest decision limit (a day); 0 means none."""
WARM_UP_S = 600.0
"""Added to the limit of an agent's first call in a process, which may compile or load its
numba kernels (minutes on a cold cache and busy cores: 6 on two shared ones)."""

_limit = DECISION_LIMIT_S
_warm: set[int] = set()
"""The agents (by ``id``) that answered once in this process: their kernels are ready."""


class AgentFailed(ValueError):  # noqa: N818 - the name says what happened
    """An agent failed (see the module docstring): ``str()`` is the one line naming it, its
    seat, the game and what it did (a ``ValueError``: a command that plays games outside a
    tournament says it in one line); ``details`` the full traceback; ``done`` the games its task
    finished before (a prefix of the task's, whole deals), which the tournament keeps when they
    follow on from its own. Picklable: a worker process sends it back."""

    def __init__(self, line: str, details: str = "", done: Sequence = ()):
        super().__init__(line, details, list(done))
        self.line, self.details, self.done = line, details, list(done)

    def __str__(self) -> str:
        return self.line


class DecisionTimeoutError(Exception):
    """Raised in the playing process when one decision outlasts the decision limit."""


def check_decision_limit(seconds: float) -> float:
    """``seconds`` when it is a decision limit (0 = none, up to :data:`MAX_DECISION_LIMIT_S`);
    else ``ValueError`` of one line naming ``--decision-limit`` and its range."""
    if not (math.isfinite(seconds) and 0 <= seconds <= MAX_DECISION_LIMIT_S):
        raise ValueError(
            f"--decision-limit must be 0 (none) to {MAX_DECISION_LIMIT_S:,.0f} seconds; "
            f"got {seconds}"
        )
    return float(seconds)


def set_decision_limit(seconds: float) -> None:
    """The decision limit of the tournaments this process plays from now on (checked)."""
    global _limit
    _limit = check_decision_limit(seconds)


def decision_limit() -> float:
    """The decision limit in force (seconds; 0: none)."""
    return _limit


def _expired(signum: int, frame: object) -> None:
    raise DecisionTimeoutError


@contextlib.contextmanager
def timed(limit: float) -> Iterator[None]:
    """Within the block, a decision that outlasts ``limit`` seconds raises
    :class:`DecisionTimeoutError` (no limit when 0, or outside the main thread)."""
    if not limit or threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGALRM, _expired)
    signal.setitimer(signal.ITIMER_REAL, limit)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, before)


def _did(error: BaseException, limit: float) -> str:
    """What an agent did, from what it raised."""
    if isinstance(error, DecisionTimeoutError):
        return f"took over {limit:g} s on one decision (--decision-limit)"
    if isinstance(error, SystemExit):
        return f"called sys.exit({error.code!r:.40})"
    text = (
        f"{type(error).__name__}: {error}".splitlines()[0] if str(error) else type(error).__name__
    )
    return f"raised {text:.160}"


def failed(place: tuple, did: str, error=None) -> AgentFailed:
    """The :class:`AgentFailed` of the agent at ``place``: its name, seat, deal and rotation,
    or its name and where it played (``"in a training game"``)."""
    if len(place) == 2:
        who, where = place
    else:
        who, seat, deal, rotation = place
        where = f"in seat {seat} of deal {deal} rotation {rotation}"
    line = f"agent {who!r} {where} {did}"
    details = "".join(traceback.format_exception(error)) if error is not None else ""
    return AgentFailed(line, f"{line}\n\n{details}" if details else line + "\n")


def ask(limit: float, place: tuple, call: Callable, *args, doing: str = ""):
    """``call(*args)`` (an agent's method) under the decision limit; any exception but Ctrl-C
    (``SystemExit`` and a timeout included) raises :class:`AgentFailed` for ``place`` (see
    :func:`failed`), ``doing`` (such as ``"in reset"``) before what it did. An agent's calls up
    to its first decision in this process are allowed :data:`WARM_UP_S` more."""
    bound = getattr(call, "func", call)  # a partial of a bound method: the method
    owner = id(getattr(bound, "__self__", bound))  # the agent
    allowed = limit + WARM_UP_S if limit and owner not in _warm else limit
    try:
        with timed(allowed):
            answer = call(*args)
    except KeyboardInterrupt:
        raise
    except BaseException as error:  # noqa: BLE001 - an agent's every failure is named
        did = f"{doing} {_did(error, allowed)}" if doing else _did(error, allowed)
        raise failed(place, did, error) from None
    if not doing:  # a decision, not a reset: its kernels are loaded now
        _warm.add(owner)
    return answer


def as_action(chosen: object) -> int:
    """``chosen`` as an action: an integer (numpy's too), never a bool or a number truncated;
    ``ValueError`` naming its type otherwise."""
    if isinstance(chosen, (bool, np.bool_)):
        raise ValueError("a bool, not an integer action")
    try:
        return operator.index(chosen)  # type: ignore[arg-type]
    except TypeError:
        raise ValueError(f"a {type(chosen).__name__}, not an integer action") from None


def act_batched(
    agents: Sequence,
    names: Sequence[str],
    obs: np.ndarray,
    mask: np.ndarray,
    who: np.ndarray,
    keys: np.ndarray,
    limit: float,
    games: tuple[np.ndarray, np.ndarray, np.ndarray],
) -> np.ndarray:
    """:func:`agents.batch.act_by_seat` (the same calls, so the same actions) with every
    agent's answer checked: integers, one per row, each legal. ``games``: each row's seat, deal
    and rotation; :class:`AgentFailed` names the agent ``names[a]`` and its first bad row's
    game."""
    check_batch(obs, mask, goat=True)
    actions = np.zeros(obs.shape[0], dtype=np.int64)
    for a, agent in enumerate(agents):
        rows = np.flatnonzero(who == a)
        if not rows.size:
            continue
        first = (names[a], *(int(column[rows[0]]) for column in games))
        # One agent acting in every row is given the arrays themselves, not a copy.
        part = (obs, mask) if rows.size == obs.shape[0] else (obs[rows], mask[rows])
        if takes_keys(agent):
            got = ask(limit, first, partial(agent.act_batch, keys=keys[rows]), *part)
        else:
            got = ask(limit, first, agent.act_batch, *part)
        got, bad = _checked(got, part[1], first)
        if bad is not None:
            row = int(rows[bad])
            place = (names[a], *(int(column[row]) for column in games))
            raise failed(place, f"chose {int(got[bad])}: an illegal action")
        actions[rows] = got
    return actions


def _checked(got: object, mask: np.ndarray, place: tuple) -> tuple[np.ndarray, int | None]:
    """An agent's batch of actions for the rows of ``mask`` as an array, and the index of its
    first illegal one (``None``: all legal); :class:`AgentFailed` for ``place`` when it is not
    one integer per row."""
    got = np.asarray(got)
    if got.shape != mask.shape[:1] or got.dtype.kind not in "iu":
        did = f"returned {got.dtype} actions of shape {got.shape}, not {mask.shape[0]} integers"
        raise failed(place, did)
    bad = np.flatnonzero((got < 0) | (got >= mask.shape[1]))
    if not bad.size:
        bad = np.flatnonzero(mask[np.arange(got.size), got] == 0)
    return got, (int(bad[0]) if bad.size else None)


def opponent_actions(agent, obs: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """``agent.act_batch(obs, mask)`` for an opponent in training games, checked as a
    tournament checks its agents (integers, one per row, each legal; no decision limit: one
    call answers a whole batch of rows, which a slow agent may take minutes for);
    :class:`AgentFailed` naming the agent (its ``name``) "in a training game" otherwise."""
    place = (getattr(agent, "name", type(agent).__name__), "in a training game")
    got, bad = _checked(ask(0, place, agent.act_batch, obs, mask), mask, place)
    if bad is not None:
        raise failed(place, f"chose {int(got[bad])}: an illegal action")
    return got


__all__ = [
    "DECISION_LIMIT_S",
    "FAILURE_FILE",
    "MAX_DECISION_LIMIT_S",
    "AgentFailed",
    "DecisionTimeoutError",
    "act_batched",
    "as_action",
    "ask",
    "check_decision_limit",
    "decision_limit",
    "failed",
    "opponent_actions",
    "set_decision_limit",
    "timed",
]
