"""The search's labels of decisions, and the cache that keeps them.

A labelled decision is ``(observation, candidates, labels)``: the actions searched (ascending)
and minus each one's mean penalty for the hand by the search. :func:`game_decisions` draws them
from seeded games; :func:`relabel` searches decisions' candidates, decision ``k`` seeded
``spawn_seed(seed, k, *stream)``, on any number of processes or on a Ray cluster with the same
result, and keeps the searches in a folder if given one (:func:`relabel` says how,
:class:`CacheError` what it refuses). ``research/teacher_gap.py`` and
``research/teacher_fit.py`` are made of them.
"""

from __future__ import annotations

import hashlib
import io
import zipfile
from pathlib import Path

import numpy as np
from tqdm import tqdm

from agents.base import legal_actions
from agents.dmc import BUNDLED_DMC_ONE, DMCAgent
from agents.hand import see
from agents.heuristics import HEURISTICS
from agents.registry import SEARCH_MAX_ROLLOUTS, check_spec, make
from agents.search import Scores, top_actions
from odin_env.files import open_regular
from odin_env.rules import MAX_PLAYERS, MIN_PLAYERS, Config
from odin_env.seeding import spawn_seed
from odin_env.spec import NUM_ACTIONS, PASS
from odin_lab.evaluation.tournament import play_deals
from odin_lab.files import write_atomic
from odin_lab.training.searches import Searches, search_rows

PART = 25
"""Decisions a worker searches at a time."""
DEALS_AT_ONCE = 25
"""Deals played between checks of whether enough decisions are drawn."""
CACHE_PART = 2_000
"""Decisions a file of a :func:`relabel` cache holds: the most searches a stop can lose."""
MOST_PART_BYTES = 64 << 20
"""The largest cache file read (one of :data:`CACHE_PART` decisions is a few hundred KB)."""


class CacheError(ValueError):
    """A file of a searches cache that cannot be used (one line)."""


def check_teacher(games: list[str], playout: str, rollouts: int, top: int) -> None:
    """``ValueError`` (one line, naming the flag) for a table or a search that
    :func:`game_decisions` cannot have."""
    if not MIN_PLAYERS <= len(games) <= MAX_PLAYERS:
        raise ValueError(
            f"--games names one player a seat, {MIN_PLAYERS}-{MAX_PLAYERS} of them; "
            f"got {len(games)}"
        )
    for spec in games:
        try:
            check_spec(spec)
        except ValueError as error:
            raise ValueError(f"--games {spec}: {str(error).splitlines()[0]}") from None
    if playout not in HEURISTICS:
        raise ValueError(f"--playout must be one of {', '.join(HEURISTICS)}; got {playout!r}")
    if not 1 <= rollouts <= SEARCH_MAX_ROLLOUTS:
        raise ValueError(f"--rollouts must be 1-{SEARCH_MAX_ROLLOUTS:,}; got {rollouts}")
    if top < 0:
        raise ValueError(f"--top must be >= 0 (0: every legal action); got {top}")


class _Recorder:
    """A player that keeps every observation and mask it is asked to act on with two legal
    actions or more, until it holds ``most``."""

    def __init__(self, agent, most: int):
        self.agent, self.name, self.most, self.seen = agent, agent.name, most, []

    def reset(self, seat: int, seed: int | None = None) -> None:
        self.agent.reset(seat, seed)

    def act(self, observation, mask) -> int:
        if np.count_nonzero(mask) > 1 and len(self.seen) < self.most:
            self.seen.append((observation.copy(), mask.copy()))
        return self.agent.act(observation, mask)


def game_decisions(
    specs: list[str],
    most: int,
    seed: int,
    top: int,
    playout: str,
    rollouts: int,
    workers: int,
    cache: Path | None = None,
    ray: str | None = None,
) -> list[tuple[np.ndarray, ...]]:
    """``most`` decisions of the first of ``specs`` (one per seat, rotated seats) in the games
    of seed ``seed`` with two legal actions or more, in the order played: ``(observation,
    candidates, labels)``. The candidates: the ``top`` legal actions the bundled ``dmc_one``
    values most (ties: the lower action; ``0``: every legal one); the labels: minus each
    candidate's mean penalty for the hand, by a search (``playout``, ``rollouts``) of decision
    ``k`` seeded ``spawn_seed(seed, k, 1)``, kept in ``cache``, on ``workers`` processes or the
    Ray cluster at ``ray`` (:func:`relabel`)."""
    agents = [make(spec) for spec in specs]
    recorder = _Recorder(agents[0], most)
    table, config, start = [recorder, *agents[1:]], Config(players=len(specs)), 0
    while len(recorder.seen) < most:
        play_deals(table, config, range(start, start + DEALS_AT_ONCE), seed=seed, engine="single")
        start += DEALS_AT_ONCE
    shortlist = DMCAgent.load(BUNDLED_DMC_ONE) if top else None
    drawn = []
    for obs, mask in recorder.seen:
        if shortlist is not None and np.count_nonzero(mask) > top:
            mask = top_actions(shortlist.values(obs[None], mask[None])[0], mask, top)
        drawn.append((obs, legal_actions(mask), None))
    teacher = relabel(drawn, playout, rollouts, seed, workers, stream=(1,), cache=cache, ray=ray)
    # A search scores the legal actions of its mask in ascending order: the candidates' order.
    return [
        (obs, candidates, -scores.penalty)
        for (obs, candidates, _), scores in zip(drawn, teacher, strict=True)
    ]


def candidate_mask(candidates: np.ndarray) -> np.ndarray:
    """The action mask whose legal actions are ``candidates``: what the search and the players
    are given."""
    mask = np.zeros(NUM_ACTIONS, dtype=np.int8)
    mask[candidates] = 1
    return mask


def candidate_regrets(scores: Scores, candidates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``candidates``' regret under the search's ``scores`` of them, in their order: its
    mean penalty less the best one's, and the best win chance less its own."""
    order = np.searchsorted(scores.actions, candidates)  # the scores in the candidates' order
    penalty, win = scores.penalty[order], scores.win[order]
    return penalty - penalty.min(), win.max() - win


def kind(observation: np.ndarray, candidates: np.ndarray) -> str:
    """What a decision is: ``lead`` (an empty table), ``follow or pass`` (a combo to beat, pass
    among the candidates), ``follow`` (pass not among them) or ``take`` (the card to take after
    beating a combo)."""
    seen = see(observation, candidate_mask(candidates))
    if seen.take:
        return "take"
    if not seen.table:
        return "lead"
    return "follow or pass" if PASS in candidates else "follow"


def relabel(
    decisions: list[tuple[np.ndarray, ...]],
    playout: str,
    rollouts: int,
    seed: int,
    workers: int,
    stream: tuple[int, ...] = (),
    cache: Path | None = None,
    ray: str | None = None,
) -> list[Scores]:
    """The search's fresh :class:`agents.search.Scores` of each decision's candidates, decision
    ``k`` seeded ``spawn_seed(seed, k, *stream)``, on ``workers`` processes, or with ``ray`` (an
    address) as Ray tasks on that cluster (:class:`odin_lab.training.searches.Searches`): the
    same for any count and any cluster.

    With ``cache`` (a folder) the searches are kept there in files of :data:`CACHE_PART`
    decisions, each written whole as soon as its last search arrives: a stopped call loses at
    most the searches of the files not yet whole, and a later call (of as many decisions, or
    more, or fewer) searches only what the folder lacks. Every kept search carries a key of its
    decision (observation, candidates, playout, rollouts and seed); a file whose keys are not
    those of the decisions asked (another table, seed or search) is refused, before any search,
    :class:`CacheError` (one line), and left as it is."""
    rows = []
    for k, (obs, candidates, _) in enumerate(decisions):
        rows.append((obs, candidate_mask(candidates), spawn_seed(seed, k, *stream)))
    size = CACHE_PART if cache else max(1, len(rows))
    parts = []  # (its file or None, its keys, the searches it holds, its rows)
    for first in range(0, len(rows), size):
        part = rows[first : first + size]
        path = cache / f"part-{first // CACHE_PART:06d}.npz" if cache else None
        keys = _keys(part, playout, rollouts) if path else None
        parts.append((path, keys, _read_part(path, keys) if path else [], part))
    # Tasks of every part in one stream, so that a cluster is not left idle at a file's end.
    tasks, owners = [], []
    for index, (_, _, kept, part) in enumerate(parts):
        todo = part[len(kept) :]
        tasks += [(playout, rollouts, todo[i : i + PART]) for i in range(0, len(todo), PART)]
        owners += [index] * -(-len(todo) // PART)
    fresh: list[list[Scores]] = [[] for _ in parts]
    with tqdm(total=len(rows), desc="searches", unit="decision") as bar:
        bar.update(sum(len(kept) for _, _, kept, _ in parts))
        with Searches(workers, ray) as searches:
            for index, scores in zip(owners, searches.map(search_rows, tasks), strict=True):
                fresh[index] += scores
                bar.update(len(scores))
                path, keys, kept, part = parts[index]
                if path and len(kept) + len(fresh[index]) == len(part):
                    _write_part(path, keys, kept + fresh[index])
    return [s for (_, _, kept, _), new in zip(parts, fresh, strict=True) for s in kept + new]


def _keys(rows: list, playout: str, rollouts: int) -> np.ndarray:
    """A 64-bit key of each ``(observation, mask, seed)`` row's search."""
    keys = np.empty(len(rows), dtype=np.uint64)
    for i, (obs, mask, seed) in enumerate(rows):
        digest = hashlib.blake2b(digest_size=8)
        digest.update(np.ascontiguousarray(obs, dtype=np.float32).tobytes())
        digest.update(np.flatnonzero(mask).astype(np.int64).tobytes())
        digest.update(f"{playout}|{rollouts}|{seed}".encode())
        keys[i] = int.from_bytes(digest.digest(), "little")
    return keys


def _read_part(path: Path, keys: np.ndarray) -> list[Scores]:
    """The kept searches of ``path`` for the decisions of ``keys`` (a prefix of them: those it
    holds); ``[]`` when there is no such file; :class:`CacheError` for a file that is not a
    part of a cache or holds other decisions' searches."""
    if not path.exists():
        return []
    names = ("keys", "sizes", "actions", "win", "penalty", "worlds")
    try:
        if path.stat().st_size > MOST_PART_BYTES:
            raise ValueError(f"larger than {MOST_PART_BYTES >> 20} MB")
        with open_regular(path) as raw, np.load(raw, allow_pickle=False) as file:
            arrays = {name: file[name] for name in names}
        sizes = arrays["sizes"].astype(np.int64)
        per_decision = arrays["keys"].shape == sizes.shape == arrays["worlds"].shape
        per_action = arrays["actions"].shape == arrays["win"].shape == arrays["penalty"].shape
        if not (
            per_decision
            and per_action
            and len(sizes) <= CACHE_PART
            and (sizes >= 0).all()
            and arrays["actions"].shape == (int(sizes.sum()),)
        ):
            raise ValueError("its arrays do not fit together")
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        why = str(error).splitlines()[0]
        raise CacheError(f"{path} is not a part of a searches cache: {why}") from None
    held = min(len(keys), len(sizes))
    if not np.array_equal(arrays["keys"][:held], keys[:held]):
        raise CacheError(
            f"{path} holds the searches of other decisions (another table, seed, playout or "
            "rollouts): give this run a folder of its own"
        )
    ends = np.cumsum(sizes[:held])
    return [
        Scores(
            arrays["actions"][end - n : end],
            arrays["win"][end - n : end],
            arrays["penalty"][end - n : end],
            int(arrays["worlds"][i]),
        )
        for i, (end, n) in enumerate(zip(ends, sizes[:held], strict=True))
    ]


def _write_part(path: Path, keys: np.ndarray, scores: list[Scores]) -> None:
    """Write the searches ``scores`` of the decisions of ``keys`` whole to ``path``, or raise
    :class:`CacheError` (one line)."""
    buffer = io.BytesIO()
    np.savez(
        buffer,
        keys=keys,
        sizes=np.array([len(s.actions) for s in scores]),
        actions=np.concatenate([s.actions for s in scores]),
        win=np.concatenate([s.win for s in scores]),
        penalty=np.concatenate([s.penalty for s in scores]),
        worlds=np.array([s.worlds for s in scores]),
    )
    try:
        write_atomic(path, buffer.getvalue())
    except OSError as error:  # a full disk, say: the files written before stay whole
        raise CacheError(f"cannot write {path}: {str(error).splitlines()[0]}") from None
