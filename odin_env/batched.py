"""A batch of B independent Odin games played in lockstep, for training and large studies.

:class:`BatchedGames` plays B games of one :class:`odin_env.rules.Config` at once. Every game
has a decision pending at every step (finished games are dealt again at once), so one call
``step(actions)`` takes one action per game and returns, for every game, what its *next* acting
seat sees. The rules are those of :mod:`odin_env.rules` and the encoding that of
:mod:`odin_env.observation`; ``batched_check.compare_with_rules`` checks it decision by
decision.

The step results live in arrays allocated once and rewritten in place at every step (the same
objects every time; copy what you keep):

=================  ==================  ===================================================
attribute          shape, dtype        content after ``reset`` / ``step``
=================  ==================  ===================================================
``obs``            (B, OBS_SIZE) f32   the acting seat's observation (``observation.observe``;
                                       ``OBS_SIZE + 11`` entries with the Goat)
``mask``           (B, 3634) int8      its legal actions (``Game.legal_mask``; 6,702 with the Goat)
``seat``           (B,) int64          the acting seat
``rewards``        (B, players) f64    what the step paid each seat (``Game.apply`` plus the
                                       forced decisions after it, summed; 0 when nothing)
``done``           (B,) bool           the episode ended during the step; the game shown is
                                       the next episode, already dealt
``hand_end``       (B,) bool           a hand ended during the step
``penalties``      (B, players) int64  that hand's cards left per seat (where ``hand_end``)
``final_totals``   (B, players) int64  the finished episode's penalty totals (where ``done``)
``winners``        (B, players) bool   seats on the lowest total, ties share (where ``done``)
``final_hands``    (B,) int64          hands the finished episode lasted (where ``done``)
=================  ==================  ===================================================

``obs`` and ``mask`` belong to the engine: it rewrites only the entries that can change (mask
entries set at the last step are cleared, not the whole row), so a caller must not write to
them. Legality is checked against the engine's own lists, never against ``mask``.

Seeds: game ``i`` of the batch (the slot ``i``) draws all its deals from its own generator
``np.random.default_rng(game_seeds(seed, B)[i])``, and each new episode in that slot continues
that generator, exactly as ``odin_env.env`` does after ``reset(seed)``. So the first episode in
slot ``i`` is ``rules.Game(config, seed=game_seeds(seed, B)[i])``; with ``g`` that generator,
the k-th episode is the k-th ``rules.Game(config, seed=g)`` made in a row. ``seed`` may instead
be a sequence of B per-game seeds, used as given (slot ``i`` then starts
``rules.Game(config, seed=seed[i])``), and ``restart(slots, seeds)`` replaces the episode in
progress in some slots by ``rules.Game(config, seed=...)``: a caller that plays a fixed list of
seeded games (a tournament) keeps every slot busy with the next game of its list.

``next_hand=False`` holds a game whose hand ends instead of dealing it the next one (or the
next episode): it then waits, with no legal action, its actions ignored and its step outputs
zero, until ``load``, ``restart`` or ``reset`` (``held`` says which games wait). A search that
plays each loaded position to the end of its hand draws no deal it would throw away, and
``load`` copies no generator.

``auto_forced`` (default on) applies decisions with one legal action without asking, as the
AEC env does; a step then counts one decision per game. A bad action anywhere in the batch
raises ``ValueError`` naming the game index and the action before any game changes.

A game with the Goat (``Config(goat=True)``, RULES G1-G5) plays as ``rules.Game`` plays it, the
same differential check included. The work runs in numba kernels (:mod:`odin_env._batched_kernels`
and :mod:`odin_env._batched_steps`, compiled on first use and
cached on disk), on one thread, or on numba's threads with ``parallel=True`` (same results;
worth it only on otherwise idle cores); the random draws stay in Python, in each game's own
numpy ``Generator``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from odin_env import _batched_kernels as k
from odin_env import _batched_steps as steps
from odin_env._batched_tables import tables
from odin_env.cards import GOAT, MAX_HAND, NUM_VALUES
from odin_env.observation import LAYOUT, NUM_PLANES, OBS_SIZE, SCALE, observation_size
from odin_env.rules import (
    FIRST_PLAYER_RULES,
    GOAT_ACTION_RANGES,
    MAX_PLAYERS,
    MIN_PLAYERS,
    PHASE_NAMES,
    Config,
    Game,
)
from odin_env.seeding import check_batch, check_seeds, game_seeds
from odin_env.spec import ACTION_RANGES

MAX_LEGAL = 256
"""Room for the legal actions of one decision: a follow offers at most C(9,4) + C(9,5) = 252
combos (every subset of a 9-card hand is at most one combo) plus pass. With the Goat, a hand of
the Goat and 8 cards offers at most C(8,4) + C(8,5) = 126 combos without it (subsets of the 8)
and 126 with it (the Goat with the subsets of 3 or 4 cards of one colour), plus pass: 253."""


class BatchStep(NamedTuple):
    """What ``reset`` and ``step`` return: the engine's own arrays (the same objects each time)."""

    obs: np.ndarray
    mask: np.ndarray
    seat: np.ndarray
    rewards: np.ndarray
    done: np.ndarray


_announced = False


def announce_compilation() -> bool:
    """Say so on stderr, once per process, when the kernels are about to be compiled (numba
    keeps no cache of them yet): a silent 20-60 s pause looks like a hang. ``BatchedGames``
    calls it; a caller that draws a progress bar calls it first, so the line comes before it.
    Returns whether it said so (the first call of a process, on a cold cache)."""
    global _announced
    if _announced:
        return False
    _announced = True
    # The step kernels' index: the rules of _batched_kernels are all inlined into them.
    cache = Path(os.environ.get("NUMBA_CACHE_DIR") or Path(steps.__file__).parent / "__pycache__")
    if any(cache.rglob(f"{Path(steps.__file__).stem}.*.nbi")):
        return False
    print(
        "odin_env: compiling the batched engine (numba, first use only: 20-60 s, then cached)",
        file=sys.stderr,
        flush=True,
    )
    return True


_PLANES = ("hand", "table", "take", "discard", "known")
if any(LAYOUT[name][0].start % 2 for name in _PLANES) or OBS_SIZE % 2:
    # The kernels write planes as pairs of float32; a layout change must keep them aligned.
    raise RuntimeError("observation planes must start at even indices for odin_env.batched")

_SCALARS = ("hand_size", "penalty", "table_owner", "phase", "passes")
_OFFSETS = np.array([LAYOUT[name][0].start for name in (*_PLANES, *_SCALARS)], dtype=np.int64)


def _config_tail(config: Config) -> np.ndarray:
    """The observation entries fixed by the config (players, threshold, colours)."""
    tail = np.zeros(observation_size(config), dtype=np.float32)  # the Goat's field: 0 so far
    players = tail[LAYOUT["players"][0]]
    players[config.players - MIN_PLAYERS] = 1.0
    tail[LAYOUT["threshold"][0]] = config.threshold / SCALE["threshold"]
    tail[LAYOUT["colours"][0]][: config.colours] = 1.0
    return tail


class BatchedGames:
    """B independent games of one config in lockstep; see the module docstring.

    ``config``: the game settings (``rules.Config``); ``batch``: B >= 1; ``seed``: the batch
    seed (``None``: ``config.seed``, and fresh entropy when that is ``None`` too), or a
    sequence of B per-game seeds; the seeds actually used are in ``game_seeds``;
    ``auto_forced``: apply one-option decisions; ``parallel``: share the games of a step among
    numba's threads (``NUMBA_NUM_THREADS``, default one per core). Results are identical either
    way; threads pay off on large batches on idle cores, and cost a lot on busy ones.
    ``next_hand``: deal a game its next hand as soon as one ends (``False``: hold it; see the
    module docstring).
    """

    def __init__(
        self,
        config: Config | None = None,
        batch: int = 1,
        seed: int | Sequence[int] | None = None,
        auto_forced: bool = True,
        parallel: bool = False,
        next_hand: bool = True,
    ):
        check_batch(batch)
        flags = (("auto_forced", auto_forced), ("parallel", parallel), ("next_hand", next_hand))
        for name, flag in flags:
            if not isinstance(flag, (bool, np.bool_)):
                raise ValueError(f"{name} must be True or False; got {flag!r}")
        announce_compilation()
        self._step_games = steps.step_games_parallel if parallel else steps.step_games
        self.config = config = config or Config()
        self.batch = batch = int(batch)
        self.auto_forced, self.next_hand = bool(auto_forced), bool(next_hand)
        n = config.players
        self._cfg = np.zeros(k.NUM_CONFIG, dtype=np.int64)
        self._cfg[k.C_PLAYERS] = n
        self._cfg[k.C_THRESHOLD] = config.threshold
        self._cfg[k.C_RULE] = FIRST_PLAYER_RULES.index(config.first_player)
        self._cfg[k.C_HAND_EPISODE] = config.episode == "hand"
        self._cfg[k.C_WIN_REWARD] = config.reward == "win"
        self._cfg[k.C_AUTO_FORCED] = self.auto_forced
        self._cfg[k.C_GOAT] = config.goat
        self._tables = tables()
        self._state = np.zeros((batch, k.NUM_FIELDS), dtype=np.int64)
        self._hands = np.zeros((batch, MAX_PLAYERS), dtype=np.int64)
        self._known = np.zeros((batch, MAX_PLAYERS), dtype=np.int64)
        self._totals = np.zeros((batch, MAX_PLAYERS), dtype=np.int64)
        self._legal = np.zeros((batch, MAX_LEGAL), dtype=np.int64)
        # the card set each observation plane shows now, so that only changes are written
        self._shown = np.zeros((batch, NUM_PLANES), dtype=np.int64)
        self._deal_slots = np.zeros(batch, dtype=np.int64)
        self._orders = np.zeros((batch, config.colours * NUM_VALUES + config.goat), dtype=np.int64)
        self._leaders = np.zeros(batch, dtype=np.int64)
        self.obs = np.zeros((batch, observation_size(config)), dtype=np.float32)
        self.mask = np.zeros((batch, config.num_actions), dtype=np.int8)
        self.seat = np.zeros(batch, dtype=np.int64)
        self.rewards = np.zeros((batch, n), dtype=np.float64)
        self.done = np.zeros(batch, dtype=np.bool_)
        self.hand_end = np.zeros(batch, dtype=np.bool_)
        self.penalties = np.zeros((batch, n), dtype=np.int64)
        self.final_totals = np.zeros((batch, n), dtype=np.int64)
        self.winners = np.zeros((batch, n), dtype=np.bool_)
        self.final_hands = np.zeros(batch, dtype=np.int64)
        self._outs = (
            self.rewards,
            self.done,
            self.hand_end,
            self.penalties,
            self.final_totals,
            self.winners,
            self.final_hands,
        )
        self._result = BatchStep(self.obs, self.mask, self.seat, self.rewards, self.done)
        self.game_seeds: list[int] = []
        self._rngs: list[np.random.Generator] = []
        self.reset(config.seed if seed is None else seed)

    def reset(self, seed: int | Sequence[int] | None = None) -> BatchStep:
        """Start a new episode in every game. ``seed`` an int: reseed every game from it (see
        ``game_seeds``); a sequence of B ints: game ``i`` is ``rules.Game(config,
        seed=seed[i])``; ``None``: each game's generator carries on (as ``env.reset()``)."""
        if seed is not None and not isinstance(seed, (int, np.integer)):
            self.game_seeds = check_seeds(seed, self.batch, "seed")
            self._rngs = [np.random.default_rng(s) for s in self.game_seeds]
        elif seed is not None or not self._rngs:
            self.game_seeds = game_seeds(seed, self.batch)
            self._rngs = [np.random.default_rng(s) for s in self.game_seeds]
        self.obs[:] = _config_tail(self.config)
        self.mask[:] = 0
        self._shown[:] = 0
        self._state[:, k.NLEGAL] = 0
        self._state[:, k.DEAL] = 2
        self._state[:, k.DRAW] = self.config.first_player != "fixed"
        self._state[:, k.NEXT_LEADER] = 0
        self._outs[0][:] = 0.0
        for out in self._outs[1:]:
            out[:] = 0
        self._deal(np.arange(self.batch, dtype=np.int64))
        return self._result

    def step(self, actions: np.ndarray) -> BatchStep:
        """Apply one action per game (``int`` array of shape ``(B,)``; a held game's is ignored);
        returns the new ``BatchStep``. A bad action raises ``ValueError`` and changes no game."""
        acts = np.asarray(actions)
        if acts.shape != (self.batch,) or acts.dtype.kind not in "iu":
            raise ValueError(
                f"actions must be an integer array of shape ({self.batch},); "
                f"got shape {acts.shape} and dtype {acts.dtype}"
            )
        acts = acts.astype(np.int64, copy=False)
        bad = steps.find_illegal(acts, self._state, self._legal)
        if bad >= 0:
            self._refuse(bad, acts[bad])
        waiting = self._step_games(
            acts,
            self._cfg,
            _OFFSETS,
            self._state,
            self.seat,
            self._hands,
            self._known,
            self._totals,
            self._legal,
            self.mask,
            self.obs,
            self._shown,
            *self._outs,
            self._deal_slots,
            self._tables,
        )
        if waiting and self.next_hand:
            self._deal(self._deal_slots[:waiting])
        return self._result

    def restart(self, slots: Sequence[int] | np.ndarray, seeds: Sequence[int]) -> None:
        """Drop the episodes in progress in games ``slots`` and start ``rules.Game(config,
        seed=seeds[k])`` in game ``slots[k]``; that game's later episodes continue the new
        generator. The other games and this step's outputs (``rewards``, ``done``, ...) are
        left as they are; ``obs``, ``mask`` and ``seat`` show the new decisions."""
        rows = self._slots(slots)
        values = check_seeds(seeds, rows.size, "seeds")
        st = self._state
        for i, value in zip(rows.tolist(), values):
            # A deal writes only the new legal entries of the mask: clear the old ones first.
            self.mask[i, self._legal[i, : st[i, k.NLEGAL]]] = 0
            self.game_seeds[i] = value
            self._rngs[i] = np.random.default_rng(value)
        st[rows, k.DEAL] = 2
        st[rows, k.DRAW] = self.config.first_player != "fixed"
        st[rows, k.NEXT_LEADER] = 0
        self._deal(rows)

    def load(
        self, slots: Sequence[int] | np.ndarray, game: Game, hands: np.ndarray | None = None
    ) -> None:
        """Put the position of ``game`` in each game ``slots[k]``, dropping the episode in
        progress there: many continuations of one position, played at once (a search). Each
        slot's later deals draw from a copy of ``game``'s generator, so a loaded game goes on
        exactly as ``game`` would (its ``game_seeds`` entry becomes -1: no seed made it); with
        ``next_hand=False`` no later deal comes, and the slot keeps its own generator.

        ``game``: a ``rules.Game`` of this engine's config at a decision (not over and, with
        ``auto_forced``, with two legal actions or more). ``hands``: optional
        ``(len(slots), players)`` card-set ints dealt in slot ``k`` instead of ``game.hands``,
        another layout of the cards nobody has seen: hand ``s`` of each row holds as many cards
        as ``game.hands[s]`` and every card of ``game.known[s]``, the hands are disjoint and
        drawn from the cards in ``game``'s hands or set aside (the rest of those is set aside).
        Anything else raises ``ValueError`` before any game changes. This step's outputs are
        left as they are; ``obs``, ``mask`` and ``seat`` show the loaded decisions, as
        ``observe`` and ``legal_mask`` would."""
        rows = self._slots(slots)
        n, st = self.config.players, self._state
        if not isinstance(game, Game) or game.config != self.config:
            raise ValueError(f"game must be a rules.Game of {self.config}")
        if game.is_over or (self.auto_forced and len(game.legal) < 2):
            raise ValueError(
                "game must be at a decision with two legal actions or more (not over, no "
                "forced decision: play_forced first)"
            )
        free = game.set_aside
        for h in game.hands:
            free |= h
        if hands is None:
            dealt = np.tile(np.array(game.hands, dtype=np.int64), (rows.size, 1))
        else:
            dealt = np.asarray(hands)
            if dealt.shape != (rows.size, n) or dealt.dtype.kind not in "iu":
                raise ValueError(f"hands must be an int array of shape ({rows.size}, {n})")
            dealt = dealt.astype(np.int64)
            union = np.bitwise_or.reduce(dealt, axis=1)
            sizes = np.bitwise_count(dealt)
            known = np.array(game.known, dtype=np.int64)
            if (
                (sizes != [h.bit_count() for h in game.hands]).any()
                or (np.bitwise_count(union) != sizes.sum(axis=1)).any()
                or (union & ~np.int64(free)).any()
                or ((dealt & known) != known).any()
            ):
                raise ValueError(
                    "hands must keep each hand's size and known cards, be disjoint and come "
                    "from the cards in the game's hands or set aside"
                )
        self.mask[rows[:, None], self._legal[rows]] = 0  # clear each row's old legal entries
        fields = (k.TABLE, k.OWNER, k.TAKE_FROM, k.DISCARD, k.PHASE, k.PASSES, k.HAND_LEADER)
        values = (game.table, game.owner, game.take_from, game.discard, game.phase, game.passes)
        st[rows[:, None], fields] = (*values, game.hand_leader)
        st[rows, k.HANDS_PLAYED], st[rows, k.DEAL] = len(game.history), 0
        st[rows, k.SET_ASIDE] = np.int64(free) & ~np.bitwise_or.reduce(dealt, axis=1)
        self._hands[rows, :n] = dealt
        self._known[rows, :n], self._totals[rows, :n] = game.known, game.totals
        self.seat[rows] = game.current
        if self.next_hand:
            state = game.rng.bit_generator.state
            for i in rows.tolist():
                self._rngs[i] = rng = np.random.Generator(type(game.rng.bit_generator)())
                rng.bit_generator.state = state
        for i in rows.tolist():
            self.game_seeds[i] = -1
        steps.show_games(
            rows,
            self._cfg,
            _OFFSETS,
            st,
            self.seat,
            self._hands,
            self._known,
            self._totals,
            self._legal,
            self.mask,
            self.obs,
            self._shown,
            self._tables,
        )

    def _slots(self, slots: Sequence[int] | np.ndarray) -> np.ndarray:
        """``slots`` as distinct game indices (an int64 array), else ``ValueError``."""
        rows = np.asarray(slots)
        if rows.ndim != 1 or (rows.size and rows.dtype.kind not in "iu"):
            raise ValueError(f"slots must be a sequence of game indices; got {slots!r}")
        rows = rows.astype(np.int64)
        if rows.size and not 0 <= rows.min() <= rows.max() < self.batch:
            raise ValueError(f"slots must be game indices 0-{self.batch - 1}; got {rows.tolist()}")
        if np.unique(rows).size != rows.size:
            raise ValueError(f"slots must not repeat a game; got {rows.tolist()}")
        return rows

    def _deal(self, slots: np.ndarray) -> None:
        """Draw the next deal of each waiting game from its own generator, in the order
        ``rules.Game`` draws: the first leader when the rule draws one, then the shuffle."""
        n, cards, goat = self.config.players, self._orders.shape[1], self.config.goat
        orders, leaders, rngs = self._orders, self._leaders, self._rngs
        draws = self._state[slots, k.DRAW].tolist()
        for j, (i, draw) in enumerate(zip(slots.tolist(), draws)):
            rng = rngs[i]
            if draw:
                leaders[j] = rng.integers(n)
            order = orders[j]
            order[:] = rng.permutation(cards)
            if goat:  # G1, drawn as rules.Game._deal draws it: swapped into a dealt place
                at, to = int(np.flatnonzero(order == cards - 1)[0]), rng.integers(n * MAX_HAND)
                order[at], order[to] = order[to], GOAT
        count = len(draws)
        steps.deal_games(
            slots,
            orders[:count],
            leaders[:count],
            self._cfg,
            _OFFSETS,
            self._state,
            self.seat,
            self._hands,
            self._known,
            self._totals,
            self._legal,
            self.mask,
            self.obs,
            self._shown,
            self._tables,
        )

    def _refuse(self, game: int, action: int) -> None:
        phase = PHASE_NAMES[self._state[game, k.PHASE]]
        raise ValueError(
            f"game {game}: illegal action {int(action)} for seat {int(self.seat[game])} in phase "
            f"{phase}: {int(self._state[game, k.NLEGAL])} actions are legal "
            f"({GOAT_ACTION_RANGES if self.config.goat else ACTION_RANGES}); no game was changed"
        )

    @property
    def hand_leaders(self) -> np.ndarray:
        """The seat that led each game's current hand (``rules.Game.hand_leader``), ``(B,)``
        (a fresh array)."""
        return self._state[:, k.HAND_LEADER].copy()

    def hold(self, slots: Sequence[int] | np.ndarray) -> None:
        """Hold these games where they are, as a hand's end holds them (``next_hand=False``
        only, else ``ValueError``): :meth:`step` leaves them alone, their masks empty, until
        :meth:`load` gives them a new position. For a search that stops its playouts at a
        chosen decision."""
        if self.next_hand:
            raise ValueError("hold needs an engine built with next_hand=False")
        rows = self._slots(slots)
        self._state[rows, k.DEAL] = 1
        self.mask[rows] = 0

    @property
    def held(self) -> np.ndarray:
        """Which games wait for a deal, ``(B,)`` bool (a fresh array): with ``next_hand=False``,
        those whose hand has ended; never any otherwise."""
        return self._state[:, k.DEAL] != 0

    @property
    def first_legal(self) -> np.ndarray:
        """One legal action of each game's pending decision (the first the engine lists, not
        the lowest), ``(B,)`` (a fresh array): a cheap filler for games whose play is ignored."""
        return self._legal[:, 0].copy()

    @property
    def legal_count(self) -> np.ndarray:
        """Number of legal actions of each game's pending decision (a fresh array)."""
        return self._state[:, k.NLEGAL].copy()

    def legal_actions(self, game: int) -> list[int]:
        """The legal actions of game ``game``'s pending decision, ascending."""
        return sorted(self._legal[game, : self._state[game, k.NLEGAL]].tolist())

    def hands(self) -> np.ndarray:
        """Every game's hands now, ``(B, players)`` card-set ints (a fresh array): what a
        search that loaded its own layouts (:meth:`load`) reads back after stepping them."""
        return self._hands[:, : self.config.players].copy()

    def totals(self) -> np.ndarray:
        """Penalty totals of the episodes in progress, ``(B, players)`` (a fresh array)."""
        return self._totals[:, : self.config.players].copy()


__all__ = ["BatchedGames", "BatchStep", "MAX_LEGAL", "game_seeds"]
