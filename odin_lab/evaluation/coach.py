"""A coach at the table: the search's evaluation of every move a person may make, from their
observation alone.

:func:`hint` scores each legal action of the decision at hand (each play, the pass, each card to
take) with the lab's search (:func:`agents.search.score_candidates`): the mean win chance of the
person after it and their mean penalty points for the hand, over the same sampled layouts of the
cards they have not seen. It reads the observation only (what the person sees at a real table),
so two positions that differ only in other seats' hidden cards get the same hint for the same
seed and rollout budget.

The answer is JSON-ready, the same for the terminal (``play.py``'s ``hint``) and the web app
(``POST /api/games/{id}/hint``)::

    {"candidates": [{"action": 140, "kind": "play", "label": "Y8 O8", "cards": ["Y8", "O8"],
                     "win": 0.41, "penalty": 2.3, "best": true}, ...],   # best first
     "best": 140, "elapsed_ms": 612.0, "budget_ms": 1000, "worlds": 96}

``label`` writes the move as the page and the terminal do (cards by colour, then value:
``Y8 O8``; ``pass``; ``take O2``); ``cards`` are the card names the web API uses. Candidates are
sorted best first: the highest win chance, then the lower penalty, then the lower action; the
first is ``best``. A hint ends within its time budget (``budget_ms``, :data:`MIN_MS` -
:data:`MAX_MS`): the search stops before the budget would be spent (one layout at least).
"""

from __future__ import annotations

import threading
import time

import numpy as np

from agents.search import Scores, score_candidates
from odin_env.cards import card_name, cards_of
from odin_env.observation import observe, players_of, threshold_of, views
from odin_env.rules import PASS, Config, Game
from odin_env.spec import PLAY_BITS, is_take, taken_card
from odin_env.symmetry import colours_in_play

DEFAULT_MS = 1000
"""A hint's time budget unless one is asked for, in milliseconds."""
MIN_MS, MAX_MS = 100, 5000
"""The budgets a hint may be given: fewer milliseconds would sample too few layouts to say
anything, more keep the person (and a server core) waiting."""
_COMMON = (threading.Lock(), [False])


def move_label(action: int) -> tuple[str, str, list[str]]:
    """``(kind, label, cards)`` of an action: ``("play", "Y8 O8", ["Y8", "O8"])``,
    ``("pass", "pass", [])``, ``("take", "take O2", ["O2"])``; cards by colour, then value
    (card id order, as the web log and ``render()`` write them)."""
    if action == PASS:
        return "pass", "pass", []
    if is_take(action):
        name = card_name(taken_card(action))
        return "take", f"take {name}", [name]
    cards = [card_name(c) for c in cards_of(PLAY_BITS[action])]
    return "play", " ".join(cards), cards


def check_budget(ms: object) -> int:
    """``ms`` if it is an integer number of milliseconds in ``MIN_MS .. MAX_MS``, else
    ``ValueError`` naming the allowed range."""
    if isinstance(ms, bool) or not isinstance(ms, int) or not MIN_MS <= ms <= MAX_MS:
        raise ValueError(f"ms must be an integer {MIN_MS}-{MAX_MS} (milliseconds); got {ms!r:.40}")
    return ms


def _check_config(observation: np.ndarray, config: Config) -> None:
    """``ValueError`` when the observation is not of a game with ``config``'s table."""
    v = views(observation)
    players = players_of(v)
    threshold = threshold_of(observation)
    colours = int(colours_in_play(observation[None])[0])
    seen = (players, threshold, colours)
    if seen != (config.players, config.threshold, config.colours):
        raise ValueError(
            f"the observation is of a game of {players} players to {threshold} with {colours} "
            f"colours, not the config's {config.players}, {config.threshold}, {config.colours}"
        )


def hint(
    observation: np.ndarray,
    config: Config,
    *,
    ms: int = DEFAULT_MS,
    seed: int = 0,
    mask: np.ndarray | None = None,
    rollouts: int | None = None,
) -> dict:
    """The search's evaluation of every legal action of the observer's decision (the module
    docstring gives the answer's form). ``observation``: the person's (``odin_env.observation``);
    ``config``: the game's settings (checked against the observation); ``ms``: the time budget
    (:func:`check_budget`); ``seed``: the sampling's seed; ``mask``: the legal actions (default:
    those of the position the observation shows, which are the game's); ``rollouts``: a rollout
    budget instead of time (the same observation and seed then give the same hint anywhere;
    ``budget_ms`` is then 0). ``ValueError`` for a bad budget or an observation of another
    table. The first hint of a process waits for :func:`warm_up` first (once; outside the
    budget)."""
    budget = check_budget(ms) if rollouts is None else 0
    _check_config(observation, config)
    warm_up()
    start = time.perf_counter()
    if rollouts is None:
        # The search ends before its own budget; what is kept back builds the answer.
        search_ms = budget - max(_MARGIN_MS, 0.08 * budget)
        scores = score_candidates(observation, mask, ms=search_ms, seed=seed, within=True)
    else:
        scores = score_candidates(observation, mask, rollouts=rollouts, seed=seed)
    answer = hint_json(scores)
    answer["elapsed_ms"] = round((time.perf_counter() - start) * 1000.0, 1)
    answer["budget_ms"] = budget
    return answer


_MARGIN_MS = 25.0
"""Kept back from a hint's budget (or 8% of it, the more) for building the answer and a busy
machine's jitter."""


def hint_json(scores: Scores) -> dict:
    """The candidates of :func:`hint` (without the timing keys) from the search's scores."""
    order = sorted(
        range(scores.actions.size),
        key=lambda k: (-scores.win[k], scores.penalty[k], int(scores.actions[k])),
    )
    candidates = []
    for rank, k in enumerate(order):
        action = int(scores.actions[k])
        kind, label, cards = move_label(action)
        candidates.append(
            {
                "action": action,
                "kind": kind,
                "label": label,
                "cards": cards,
                "win": round(float(scores.win[k]), 4),
                "penalty": round(float(scores.penalty[k]), 3),
                "best": rank == 0,
            }
        )
    return {"candidates": candidates, "best": candidates[0]["action"], "worlds": scores.worlds}


def warm_up() -> None:
    """Run one tiny search, once per process, so that the first hint does not pay for loading
    the compiled playout code (about a second); call it from a thread when a game starts."""
    lock, done = _COMMON
    with lock:
        if done[0]:
            return
        game = Game(Config(players=2), seed=0)
        game.play_forced()
        score_candidates(observe(game, game.current), game.legal_mask(), rollouts=8)
        done[0] = True


def warm_up_in_background() -> None:
    """:func:`warm_up` on a daemon thread, unless it was done already in this process."""
    if not _COMMON[1][0]:
        threading.Thread(target=warm_up, name="coach-warm-up", daemon=True).start()


__all__ = [
    "DEFAULT_MS", "MAX_MS", "MIN_MS", "check_budget", "hint", "hint_json", "move_label",
    "warm_up", "warm_up_in_background",
]  # fmt: skip
