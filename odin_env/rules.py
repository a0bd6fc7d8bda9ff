"""The pure game of Odin (RULES R1-R16): state, legal actions, apply, scoring.

No RL library is imported here. The settings (:class:`Config`) and the action space's
constants live in :mod:`odin_env.spec` and are re-exported here. One :class:`Game` is one game
(or one hand, with ``episode="hand"``) in progress. Every decision is one action of the shared
action space (the table in :mod:`odin_env.spec`).

The legal actions of the decision at hand are computed once, when the decision arises, and kept
in ``Game.legal`` (ascending). Card sets are 54-bit ints (see :mod:`odin_env.cards`; bit 54 is
the Goat in a game with ``Config.goat``, RULES G1-G5).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from functools import lru_cache

import numpy as np

from odin_env import combos
from odin_env.cards import (
    GOAT,
    GOAT_BIT,
    GOAT_PENALTY,
    MAX_HAND,
    NUM_COLOURS,
    NUM_VALUES,
    VALUE_BITS,
    bits_of,
    cards_of,
    deck_bits,
)
from odin_env.combos import (
    BEAT_LO,
    BY_COLOUR,
    BY_VALUE,
    COMBO_BITS,
    GOAT_BEAT_LO,
    goat_combo_index_of_bits,
)
from odin_env.positions import check_position
from odin_env.spec import (  # re-exported: odin_env.rules is where users look for them
    ACTION_RANGES,
    EPISODES,
    FIRST_PLAYER_RULES,
    FOLLOW,
    GOAT_ACTION_RANGES,
    GOAT_PLAY,
    GOAT_TAKE,
    LEAD,
    MAX_PLAYERS,
    MIN_PLAYERS,
    NUM_ACTIONS,
    OVER,
    PASS,
    PHASE_NAMES,
    PLAY_BITS,
    PLAY_NUMBER,
    PLAY_SIZE,
    REWARDS,
    TAKE,
    TAKING,
    ActionTypeError,
    Config,
    check_action,
    refuse_goat,
    taken_card,
)

_BEAT_LO = [*BEAT_LO.tolist(), *[0] * (GOAT_PLAY - PASS), *GOAT_BEAT_LO.tolist()]
_SIZE = list(PLAY_SIZE)
_NUMBER = list(PLAY_NUMBER)


@lru_cache(maxsize=1 << 16)
def hand_combos(hand: int, size: int) -> tuple[int, ...]:
    """The sorted indices of the ``size``-card combos inside the card set ``hand``."""
    found: list[int] = []
    for colour in range(NUM_COLOURS):
        p = hand >> (colour * NUM_VALUES) & VALUE_BITS
        if p:
            found += BY_COLOUR[colour][p][size]
    if 2 <= size <= NUM_COLOURS:
        t = combos.value_patterns(hand)
        for value in range(NUM_VALUES):
            q = t >> (NUM_COLOURS * value) & 63
            if q & (q - 1):
                found += BY_VALUE[value][q][size]
    found.sort()
    return tuple(found)


def follow_plays(hand: int, table: int) -> list[int]:
    """R7/R9: the combos without the Goat in ``hand`` that beat the play ``table`` (an action;
    with the Goat or not), ascending."""
    hand &= ~GOAT_BIT
    size = _SIZE[table]
    same = hand_combos(hand, size)
    plays = list(same[bisect_left(same, _BEAT_LO[table]) :])
    if size < MAX_HAND:
        plays += hand_combos(hand, size + 1)
    return plays


def goat_combos(hand: int, size: int) -> list[int]:
    """G2: the plays (actions) of ``size`` cards that hold the Goat inside ``hand`` (which holds
    it), ascending: the Goat with ``size - 1`` cards of one colour."""
    if size == 1:
        return [GOAT_PLAY]
    found = []
    for combo in hand_combos(hand & ~GOAT_BIT, size - 1):
        bits = COMBO_BITS[combo]
        if combos.same_colour(bits):
            found.append(GOAT_PLAY + goat_combo_index_of_bits(bits | GOAT_BIT))
    found.sort()
    return found


def goat_follow_plays(hand: int, table: int) -> list[int]:
    """G3: the plays with the Goat in ``hand`` that beat the play ``table``, ascending (none
    when the hand does not hold the Goat)."""
    if not hand & GOAT_BIT:
        return []
    size = _SIZE[table]
    plays = [a for a in goat_combos(hand, size) if _NUMBER[a] > _NUMBER[table]]
    if size < MAX_HAND:
        plays += goat_combos(hand, size + 1)
    return plays


def lead_plays(hand: int) -> list[int]:
    """R8: one card, or the whole hand when it is one combo (G3: the Goat too)."""
    plays = sorted(combos.SINGLE[c] for c in cards_of(hand & ~GOAT_BIT))
    many = hand & (hand - 1)
    if many and hand & GOAT_BIT:
        rest = hand & ~GOAT_BIT
        if combos.same_colour(rest):
            return [*plays, GOAT_PLAY, GOAT_PLAY + goat_combo_index_of_bits(hand)]
    elif many and combos.is_combo(hand):
        plays.append(combos.combo_index_of_bits(hand))
    return plays + [GOAT_PLAY] if hand & GOAT_BIT else plays


class Game:
    """One game of Odin in progress. Public attributes are read-only to callers.

    ``hands[s]``, ``discard``, ``known[s]``, ``set_aside``: card-set ints. ``table``: the combo
    index on the table (-1 when a trick is to be led); ``owner``: who played it. ``take_from``:
    the beaten combo's cards while its beater chooses one (phase ``TAKING``). ``current``: the
    seat to act; ``legal``: its legal actions. ``rewards``: per seat, what the last action paid
    (``None`` when it paid nothing). ``totals``: penalty totals; ``history``: each finished hand's
    penalties.
    """

    __slots__ = (
        "config", "rng", "deck", "hands", "table", "owner", "take_from", "discard", "known",
        "set_aside", "phase", "current", "passes", "legal", "totals", "history", "hand_leader",
        "rewards", "winners",
    )  # fmt: skip

    def __init__(self, config: Config | None = None, seed: int | np.random.Generator | None = None):
        self.config = config = config or Config()
        self.rng = np.random.default_rng(config.seed if seed is None else seed)
        self.deck = deck_bits(config.colours, config.goat)
        self.totals = [0] * config.players
        self.history: list[tuple[int, ...]] = []
        self.rewards: list[float] | None = None
        self.winners: tuple[int, ...] = ()
        self._deal(self._first_leader(previous=None, emptied=None))

    @classmethod
    def from_position(
        cls,
        config: Config,
        hands: Sequence[Iterable[int]],
        current: int,
        *,
        table: Iterable[int] | None = None,
        owner: int | None = None,
        take_from: Iterable[int] | None = None,
        passes: int = 0,
        discard: Iterable[int] = (),
        known: Sequence[Iterable[int]] | None = None,
        totals: Sequence[int] | None = None,
        hand_leader: int | None = None,
        seed: int | None = None,
    ) -> Game:
        """A game at a built position (cards as ids). ``take_from`` given: ``current`` has just
        played ``table`` and chooses a card of ``take_from``; ``table`` given: ``current`` follows;
        neither: ``current`` leads. Cards nobody holds are set aside.

        Every field is checked before anything is built: an inconsistent position raises
        ``ValueError`` whose message starts with the field's name and states what is allowed.
        ``owner`` is required while following (a seat other than ``current``), and may only be
        ``current`` (or ``None``) while taking and ``None`` while leading; ``passes`` is
        ``0 .. players - 2`` while following and 0 otherwise; ``totals`` are non-negative and,
        with ``episode="game"``, below the threshold (else the game would be over)."""
        p = check_position(
            config,
            hands,
            current,
            table,
            owner,
            take_from,
            passes,
            discard,
            known,
            totals,
            hand_leader,
        )
        game = cls.__new__(cls)
        game.config = config
        game.rng = np.random.default_rng(seed)
        game.deck = deck_bits(config.colours, config.goat)
        game.hands = p.hands
        game.table = p.table
        game.owner = -1 if p.owner is None else p.owner  # as after a deal: nobody has played
        game.take_from = p.take_from
        game.discard = p.discard
        game.known = p.known
        game.passes = p.passes
        game.current = p.current
        game.phase = p.phase
        game.totals = p.totals
        game.history = []
        game.hand_leader = p.current if p.hand_leader is None else p.hand_leader
        game.rewards = None
        game.winners = ()
        placed = p.discard | p.take_from | (0 if p.table < 0 else PLAY_BITS[p.table])
        for h in p.hands:
            placed |= h
        game.set_aside = game.deck & ~placed
        game._decide()
        return game

    # -- the game flow -------------------------------------------------------------------------

    def _first_leader(self, previous: int | None, emptied: int | None) -> int:
        rule, n = self.config.first_player, self.config.players
        if rule == "fixed":
            return 0
        if previous is None or rule == "random":
            return int(self.rng.integers(n))
        return (previous + 1) % n if rule == "rotate" else emptied

    def _deal(self, leader: int) -> None:
        """R2: a fresh shuffle of the deck in play, 9 cards each, the rest set aside. G1: with
        the Goat, it is shuffled in too and then swapped with a uniformly drawn dealt place."""
        n = self.config.players
        in_play = self.config.colours * NUM_VALUES
        if self.config.goat:  # as Board Game Arena deals it (TableManager.shuffleAndDealCards)
            order = self.rng.permutation(in_play + 1).tolist()
            at, to = order.index(in_play), int(self.rng.integers(n * MAX_HAND))
            order[at], order[to] = order[to], GOAT
        else:
            order = self.rng.permutation(in_play).tolist()
        self.hands = [bits_of(order[i * MAX_HAND : (i + 1) * MAX_HAND]) for i in range(n)]
        self.set_aside = bits_of(order[n * MAX_HAND :])
        self.known = [0] * n
        self.discard = 0
        self.table = -1
        self.owner = -1
        self.take_from = 0
        self.passes = 0
        self.hand_leader = self.current = leader
        self.phase = LEAD
        self._decide()

    def _decide(self) -> None:
        hand = self.hands[self.current]
        if self.phase == LEAD:
            self.legal = lead_plays(hand)
        elif self.phase == FOLLOW:
            self.legal = follow_plays(hand, self.table)
            self.legal.append(PASS)
            if hand & GOAT_BIT:
                self.legal += goat_follow_plays(hand, self.table)
        elif self.phase == TAKING:
            self.legal = [TAKE + c for c in cards_of(self.take_from)]
            if self.take_from & GOAT_BIT:  # the Goat, the last card id, has its own action
                self.legal[-1] = GOAT_TAKE
        else:
            self.legal = []

    @property
    def is_over(self) -> bool:
        """The episode has ended (the hand with ``episode="hand"``, else the game)."""
        return self.phase == OVER

    def legal_mask(self) -> np.ndarray:
        """The ``int8[3634]`` mask of the legal actions (``int8[6702]`` with the Goat, G5)."""
        mask = np.zeros(self.config.num_actions, dtype=np.int8)
        mask[self.legal] = 1
        return mask

    def apply(self, action: int) -> list[float] | None:
        """Apply the acting player's action; returns (and keeps in ``rewards``) what it paid.

        An illegal action raises ``ValueError`` and changes nothing.
        """
        action = check_action(action, self.config.goat)
        if action not in self.legal:
            self._refuse(action)
        self.rewards = None
        seat = self.current
        n = self.config.players
        if self.phase == TAKING:  # R10: take one card, discard the rest face up
            card_bit = 1 << taken_card(action)
            self.hands[seat] |= card_bit
            self.known[seat] |= card_bit
            self.discard |= self.take_from & ~card_bit
            self.take_from = 0
            self.phase = FOLLOW
            self.current = (seat + 1) % n
        elif action == PASS:  # R9, R11
            self.passes += 1
            if self.passes == n - 1:
                self.discard |= PLAY_BITS[self.table]
                self.table = -1
                self.passes = 0
                self.phase = LEAD
                self.current = self.owner
            else:
                self.current = (seat + 1) % n
        else:  # R8, R9: a play
            played = PLAY_BITS[action]
            hand = self.hands[seat] = self.hands[seat] & ~played
            self.known[seat] &= ~played
            beaten = self.table
            self.table = action
            self.owner = seat
            self.passes = 0
            if not hand:  # R10 exception, R13
                if beaten >= 0:
                    self.discard |= PLAY_BITS[beaten]
                self._end_hand(seat)
                return self.rewards
            if beaten < 0:
                self.phase = FOLLOW
                self.current = (seat + 1) % n
            else:
                self.take_from = PLAY_BITS[beaten]
                self.phase = TAKING
        self._decide()
        return self.rewards

    def play_forced(self) -> list[float] | None:
        """Apply decisions that have one legal action until a real choice or the episode's end;
        returns the rewards they paid, summed per seat (``None`` if none)."""
        paid = None
        while len(self.legal) == 1:
            rewards = self.apply(self.legal[0])
            if rewards is not None:
                paid = rewards if paid is None else [a + b for a, b in zip(paid, rewards)]
        self.rewards = paid
        return paid

    def _refuse(self, action: int) -> None:
        raise ValueError(
            f"illegal action {action!r} for seat {self.current} in phase "
            f"{PHASE_NAMES[self.phase]}: {len(self.legal)} actions are legal "
            f"({GOAT_ACTION_RANGES if self.config.goat else ACTION_RANGES})"
        )

    def _end_hand(self, emptied: int) -> None:
        """R13-R15: score the hand, then end the episode or deal the next hand."""
        config = self.config
        # G4: the Goat costs GOAT_PENALTY, of which bit_count has counted 1.
        penalties = tuple(
            h.bit_count() + (GOAT_PENALTY - 1 if h & GOAT_BIT else 0) for h in self.hands
        )
        self.history.append(penalties)
        self.totals = [t + p for t, p in zip(self.totals, penalties)]
        over = config.episode == "hand" or max(self.totals) >= config.threshold
        if config.reward == "penalty":
            self.rewards = [-float(p) for p in penalties]
        else:
            self.rewards = [0.0] * config.players
        if over:
            low = min(self.totals)
            self.winners = tuple(s for s, t in enumerate(self.totals) if t == low)
            if config.reward == "win":
                for s in self.winners:
                    self.rewards[s] = 1.0 / len(self.winners)
            self.phase = OVER
            self.current = emptied
            self.legal = []
        else:
            self._deal(self._first_leader(self.hand_leader, emptied))

    # -- inspection ----------------------------------------------------------------------------

    @property
    def hand_number(self) -> int:
        """1 for the first hand of the game; counts finished hands plus the one in play."""
        return len(self.history) + (0 if self.is_over else 1)

    def snapshot(self) -> tuple:
        """Everything that defines the state (the generator's state included), for comparisons."""
        return (
            tuple(self.hands),
            self.table,
            self.owner,
            self.take_from,
            self.discard,
            tuple(self.known),
            self.set_aside,
            self.phase,
            self.current,
            self.passes,
            tuple(self.legal),
            tuple(self.totals),
            tuple(self.history),
            self.hand_leader,
            self.winners,
            repr(self.rng.bit_generator.state),
        )

    def where(self) -> dict[str, int]:
        """Every card in play mapped to its place (``hand0``.., ``table``, ``take``, ``discard``,
        ``aside``): the bookkeeping that property tests check."""
        places = {f"hand{s}": h for s, h in enumerate(self.hands)}
        places.update(
            table=PLAY_BITS[self.table] if self.table >= 0 else 0,
            take=self.take_from,
            discard=self.discard,
            aside=self.set_aside,
        )
        return places


__all__ = [
    "EPISODES", "FIRST_PLAYER_RULES", "MAX_PLAYERS", "MIN_PLAYERS", "REWARDS",
    "Config", "Game", "NUM_ACTIONS", "PASS", "TAKE", "LEAD", "FOLLOW", "TAKING", "OVER",
    "PHASE_NAMES", "follow_plays", "lead_plays", "hand_combos", "check_action", "ActionTypeError",
    "GOAT_PLAY", "GOAT_TAKE", "PLAY_BITS", "goat_combos", "goat_follow_plays", "refuse_goat",
]  # fmt: skip
