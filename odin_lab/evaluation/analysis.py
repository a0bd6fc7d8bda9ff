"""Analysis helpers for the research notebooks: what the studies and stats modules do not cover.

- :func:`action_text`: an action index in words (``play R3 B3 (33)``, ``pass``, ``take R3``).
- :func:`agent_available`: whether an agent spec loads now (the bundled PPO model may be absent).
- :func:`round_robin`: a leaderboard of more agents than seats, every table of ``players``
  agents playing the same seeded, seat-rotated deals; records are re-indexed into the full list
  so :func:`odin_lab.evaluation.stats.agent_summary` rates everyone together.
- :func:`two_proportions`: is one win rate different from another (a two-sided z-test)?
- :func:`read_scalars`: the scalars of a training run's TensorBoard logs.
- :func:`behaviour` and :func:`summarise`: what an agent does at its decisions (pass rate,
  cards per play, which card it leads and takes), measured in seeded, seat-rotated games.

The behaviour measures read each decision as the agent saw it (:func:`agents.hand.see`, i.e.
through the observation's named views), never the game's hidden state. Only real decisions are
recorded: forced ones (a lone legal action) are applied by the engine without asking the agent.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
from scipy import stats as scipy_stats
from tqdm import tqdm

from agents.base import Agent, refuse_goat
from agents.hand import cover, joins, see
from agents.registry import make
from odin_env.cards import card_name, cards_of, names, value_of
from odin_env.combos import COMBO_BITS, COMBO_NUMBER, COMBO_SIZE, NUM_COMBOS
from odin_env.rules import NUM_ACTIONS, PASS, PHASE_NAMES, TAKE, Config
from odin_lab.evaluation.stats import Z95
from odin_lab.evaluation.tournament import (
    GameRecord,
    play_deals,
    play_tournament,
)


def agent_available(spec: str) -> tuple[bool, str]:
    """``(True, "")`` when :func:`agents.make` builds ``spec`` now, else ``(False, why)``."""
    try:
        make(spec)
    except Exception as error:  # noqa: BLE001 - any failure means "not available", with why
        first = str(error).splitlines()[0] if str(error) else ""
        return False, f"{type(error).__name__}: {first}"
    return True, ""


def action_text(action: int) -> str:
    """An action of the shared action space in words: ``play R3 B3 (33)``, ``pass``, ``take R3``."""
    action = int(action)
    if 0 <= action < NUM_COMBOS:
        return f"play {names(COMBO_BITS[action])} ({int(COMBO_NUMBER[action])})"
    if action == PASS:
        return "pass"
    if TAKE <= action < NUM_ACTIONS:
        return f"take {card_name(action - TAKE)}"
    raise ValueError(f"action must be 0-{NUM_ACTIONS - 1}; got {action}")


# -- leaderboard -----------------------------------------------------------------------------------


def round_robin(
    specs: Sequence[str],
    config: Config,
    deals: int,
    seed: int = 0,
    *,
    workers: int = 1,
    progress: bool = True,
) -> list[GameRecord]:
    """Every table of ``config.players`` distinct agents of ``specs`` plays the same ``deals``
    seeded deals from every seat (:func:`odin_lab.evaluation.tournament.play_tournament`).

    Returns all games, table after table (tables in ``itertools.combinations`` order); each
    record's ``agents`` indexes ``specs``. With exactly ``config.players`` specs this is one
    rotated tournament."""
    n = config.players
    if len(specs) < n:
        raise ValueError(f"round_robin needs at least {n} agents for {n} players; got {len(specs)}")
    if len(set(specs)) != len(specs):
        raise ValueError(f"round_robin needs distinct agent specs; got {list(specs)}")
    records: list[GameRecord] = []
    for table in itertools.combinations(range(len(specs)), n):
        played = play_tournament(
            [specs[i] for i in table], config, deals, seed, workers=workers, progress=progress
        )
        records += [replace(r, agents=tuple(table[i] for i in r.agents)) for r in played]
    return records


# -- comparing rates -------------------------------------------------------------------------------


def two_proportions(wins_a: float, games_a: int, wins_b: float, games_b: int) -> dict:
    """Two-sided z-test that rates ``wins_a / games_a`` and ``wins_b / games_b`` are equal.

    Wins may be fractional (shared wins). Returns both rates, their difference ``b - a`` with a
    95% normal interval, ``z`` and the p-value."""
    for wins, games, name in ((wins_a, games_a, "a"), (wins_b, games_b, "b")):
        if games < 1 or not 0 <= wins <= games:
            raise ValueError(f"sample {name}: need games >= 1 and 0 <= wins <= games")
    p_a, p_b = wins_a / games_a, wins_b / games_b
    pooled = (wins_a + wins_b) / (games_a + games_b)
    se_pooled = math.sqrt(pooled * (1 - pooled) * (1 / games_a + 1 / games_b))
    z = (p_b - p_a) / se_pooled if se_pooled > 0 else 0.0
    se = math.sqrt(p_a * (1 - p_a) / games_a + p_b * (1 - p_b) / games_b)
    return {
        "rate_a": p_a,
        "rate_b": p_b,
        "diff": p_b - p_a,
        "diff_low": p_b - p_a - Z95 * se,
        "diff_high": p_b - p_a + Z95 * se,
        "z": z,
        "p": float(2 * scipy_stats.norm.sf(abs(z))),
    }


# -- TensorBoard -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scalars:
    """One TensorBoard scalar series, in step order."""

    steps: np.ndarray
    values: np.ndarray


def read_scalars(logdir: str | Path) -> dict[str, Scalars]:
    """Every scalar series in the TensorBoard event files of ``logdir`` (e.g. ``runs/NAME/tb``),
    by tag. Points logged twice at one step (a resumed run) keep the last one."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    logdir = Path(logdir)
    if not logdir.is_dir() or not any(logdir.glob("**/events.out.tfevents.*")):
        raise FileNotFoundError(f"no TensorBoard event files under {logdir}")
    out = {}
    for run in sorted({p.parent for p in logdir.glob("**/events.out.tfevents.*")}):
        accumulator = EventAccumulator(str(run), size_guidance={"scalars": 0})
        accumulator.Reload()
        for tag in accumulator.Tags()["scalars"]:
            points = {e.step: e.value for e in accumulator.Scalars(tag)}
            if tag in out:  # several event files: merge, later files win
                points = {**dict(zip(out[tag].steps.tolist(), out[tag].values.tolist())), **points}
            steps = np.array(sorted(points), dtype=np.int64)
            out[tag] = Scalars(steps, np.array([points[s] for s in steps], dtype=np.float64))
    return out


# -- behaviour -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decision:
    """One real decision of an agent, as it saw it, and what it chose."""

    phase: str
    """``lead``, ``follow`` or ``take``."""
    action: int
    plays: int
    """Legal plays it had (0 while taking)."""
    size: int
    """Cards it played (0 for a pass or a take)."""
    table_size: int
    """Cards of the combo it had to beat (0 when leading or taking)."""
    could_finish: bool
    """A legal play would have emptied its hand."""
    finished: bool
    """Its play emptied its hand."""
    lead_value: int
    """Value of the single card it led (0 otherwise)."""
    hand_low: int
    """Lowest value in its hand (0 while taking)."""
    hand_high: int
    """Highest value in its hand (0 while taking)."""
    take_highest: bool
    """Taking: it took a card of the highest value offered."""
    take_most_joins: bool
    """Taking: it took a card that forms the most combos with its hand."""
    take_fewest_combos: bool
    """Taking: it took a card that leaves its hand in the fewest combos."""

    @property
    def passed(self) -> bool:
        return self.action == PASS


def decision_of(observation: np.ndarray, action_mask: np.ndarray, action: int) -> Decision:
    """Describe the decision ``action`` taken at ``observation`` with ``action_mask`` (a game
    without the Goat: its measures count combos as RULES R4 makes them)."""
    refuse_goat(action_mask, "the behaviour analysis")
    seen = see(observation, action_mask)
    phase = PHASE_NAMES[seen.phase]
    hand_values = [value_of(c) for c in cards_of(seen.hand)]
    low, high = (min(hand_values), max(hand_values)) if hand_values else (0, 0)
    could_finish = any(COMBO_BITS[a] == seen.hand for a in seen.plays)
    if phase == "take":
        card = action - TAKE
        if card not in seen.takes:
            raise ValueError(f"action {action} is not a legal take here")
        values = [value_of(c) for c in seen.takes]
        links = [joins(seen.hand, c) for c in seen.takes]
        covers = [cover(seen.hand | 1 << c) for c in seen.takes]
        i = seen.takes.index(card)
        return Decision(
            phase,
            action,
            0,
            0,
            0,
            False,
            False,
            0,
            0,
            0,
            take_highest=values[i] == max(values),
            take_most_joins=links[i] == max(links),
            take_fewest_combos=covers[i] == min(covers),
        )
    if action != PASS and action not in seen.plays:
        raise ValueError(f"action {action} is not a legal play or pass here")
    size = 0 if action == PASS else int(COMBO_SIZE[action])
    single = phase == "lead" and size == 1
    return Decision(
        phase=phase,
        action=action,
        plays=int(seen.plays.size),
        size=size,
        table_size=seen.table.bit_count() if phase == "follow" else 0,
        could_finish=could_finish,
        finished=action != PASS and COMBO_BITS[action] == seen.hand,
        lead_value=value_of(cards_of(COMBO_BITS[action])[0]) if single else 0,
        hand_low=low,
        hand_high=high,
        take_highest=False,
        take_most_joins=False,
        take_fewest_combos=False,
    )


class DecisionLog:
    """Wraps an agent: plays exactly as it does and records each decision it is asked."""

    def __init__(self, agent: Agent):
        self.agent = agent
        self.name = agent.name
        self.decisions: list[Decision] = []

    def reset(self, seat: int, seed: int | None = None) -> None:
        reset = getattr(self.agent, "reset", None)
        if reset is not None:
            reset(seat, seed)

    def act(self, observation: np.ndarray, action_mask: np.ndarray) -> int:
        action = int(self.agent.act(observation, action_mask))
        self.decisions.append(decision_of(observation, action_mask, action))
        return action


def behaviour(
    agent: str | Agent,
    opponents: Sequence[str],
    config: Config,
    deals: int,
    seed: int = 0,
    *,
    progress: bool = True,
) -> tuple[list[Decision], list[GameRecord]]:
    """Play ``deals`` seeded deals, each from every seat (the games of
    :func:`odin_lab.evaluation.tournament.play_tournament` with ``rotate=True``), with ``agent`` as
    agent 0 and ``opponents`` in the other seats; return agent 0's decisions and the game
    records."""
    n = config.players
    if len(opponents) != n - 1:
        raise ValueError(
            f"{n} players need {n - 1} opponents; got {len(opponents)}: {list(opponents)}"
        )
    if deals < 1:
        raise ValueError(f"deals must be >= 1; got {deals}")
    log = DecisionLog(make(agent) if isinstance(agent, str) else agent)
    players = [log, *(make(spec) for spec in opponents)]
    records: list[GameRecord] = []
    for deal in tqdm(range(deals), unit="deal", disable=not progress, leave=False):
        records += play_deals(players, config, range(deal, deal + 1), seed, engine="single")
    return log.decisions, records


def _share(hits: int, total: int) -> float:
    return hits / total if total else math.nan


def summarise(decisions: Sequence[Decision]) -> dict[str, float]:
    """Behaviour statistics of some decisions (NaN where a measure had no decision to count):

    ``decisions``; ``pass_rate`` (following, every decision has a legal play, so a pass is a
    choice); ``cards_per_play`` (leads and follows); ``follow_one_more`` (share of follow plays
    with one card more than the table, R7); ``finish_rate`` (share of the chances to empty the
    hand that it took); ``lead_lowest`` / ``lead_highest`` (single-card leads of its lowest /
    highest value); ``take_highest``, ``take_most_joins``, ``take_fewest_combos`` (share of takes
    of the highest value, of a card that forms the most combos with its hand, of a card that
    leaves its hand in the fewest combos)."""
    follows = [d for d in decisions if d.phase == "follow"]
    plays = [d for d in decisions if d.phase != "take" and not d.passed]
    follow_plays = [d for d in follows if not d.passed]
    leads = [d for d in decisions if d.lead_value]
    takes = [d for d in decisions if d.phase == "take"]
    chances = [d for d in decisions if d.could_finish]
    return {
        "decisions": len(decisions),
        "pass_rate": _share(sum(d.passed for d in follows), len(follows)),
        "cards_per_play": float(np.mean([d.size for d in plays])) if plays else math.nan,
        "follow_one_more": _share(
            sum(d.size == d.table_size + 1 for d in follow_plays), len(follow_plays)
        ),
        "finish_rate": _share(sum(d.finished for d in chances), len(chances)),
        "lead_lowest": _share(sum(d.lead_value == d.hand_low for d in leads), len(leads)),
        "lead_highest": _share(sum(d.lead_value == d.hand_high for d in leads), len(leads)),
        "take_highest": _share(sum(d.take_highest for d in takes), len(takes)),
        "take_most_joins": _share(sum(d.take_most_joins for d in takes), len(takes)),
        "take_fewest_combos": _share(sum(d.take_fewest_combos for d in takes), len(takes)),
    }


__all__ = [
    "Decision",
    "DecisionLog",
    "Scalars",
    "action_text",
    "agent_available",
    "behaviour",
    "decision_of",
    "read_scalars",
    "round_robin",
    "summarise",
    "two_proportions",
]
