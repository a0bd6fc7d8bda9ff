"""Statistics of tournament results: win rates with confidence intervals, seat effects, ratings.

Win rates share ties: each of the ``w`` players on the lowest total wins ``1/w`` of the game
(RULES R14). Confidence intervals are Wilson score intervals on that share. Ratings are
OpenSkill's Plackett-Luce model (the open multiplayer successor of TrueSkill), updated game by
game in the tournament's ``(deal, rotation)`` order, so they are reproducible.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from openskill.models import PlackettLuce

from odin_lab.evaluation.names import labels
from odin_lab.evaluation.tournament import GameRecord

Z95 = 1.959963984540054
"""The two-sided 95% normal quantile."""


def wilson(successes: float, trials: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of a proportion (95% by default); ``(0, 1)`` for no trials."""
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials; got {successes} of {trials}")
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    denom = 1 + z * z / trials
    centre = (p + z * z / (2 * trials)) / denom
    half = z * math.sqrt(p * (1 - p) / trials + z * z / (4 * trials * trials)) / denom
    # round-off can put a bound a hair past p at p = 0 or 1; the interval always holds p
    return min(p, max(0.0, centre - half)), max(p, min(1.0, centre + half))


def mean_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """The mean of ``values`` and its Student-t confidence interval (95% by default): a mean of
    many games is close to normal, and t widens the interval for few. ``ValueError`` for fewer
    than 2 values."""
    x = np.asarray(values, dtype=float)
    if x.size < 2:
        raise ValueError(f"an interval of a mean needs 2+ values; got {x.size}")
    from scipy import stats  # here: scipy takes 0.7 s to import, and most commands never ask

    mean = float(x.mean())
    half = float(stats.t.ppf(0.5 + level / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size))
    return mean, mean - half, mean + half


def ranked(agents: Sequence[dict]) -> list[dict]:
    """:func:`agent_summary`'s rows best first, by win rate (equal rates keep their order): the
    order of the tournament table and of its figure."""
    return sorted(agents, key=lambda a: -a["win_rate"])


def seat_shares(record: GameRecord) -> list[float]:
    """Each seat's share of the win of one game."""
    shares = [0.0] * len(record.totals)
    for seat in record.winners:
        shares[seat] = 1.0 / len(record.winners)
    return shares


def agent_summary(records: Sequence[GameRecord], specs: Sequence[str]) -> list[dict]:
    """Per agent (in ``specs`` order): games, win rate with its 95% CI, mean final penalty total,
    mean penalty per hand, and its OpenSkill rating."""
    n = len(specs)
    wins, totals, hand_penalty, hands, games = ([0.0] * n for _ in range(5))
    for r in records:
        for seat, share in enumerate(seat_shares(r)):
            i = r.agents[seat]
            games[i] += 1
            wins[i] += share
            totals[i] += r.totals[seat]
            hand_penalty[i] += sum(h[seat] for h in r.hands)
            hands[i] += len(r.hands)
    rating = ratings(records, n)
    out = []
    for i, name in enumerate(labels(specs)):
        lo, hi = wilson(wins[i], int(games[i]))
        out.append(
            {
                "agent": name,
                "spec": specs[i],
                "games": int(games[i]),
                "win_rate": wins[i] / games[i] if games[i] else 0.0,
                "ci_low": lo,
                "ci_high": hi,
                "mean_total": totals[i] / games[i] if games[i] else 0.0,
                "mean_penalty_per_hand": hand_penalty[i] / hands[i] if hands[i] else 0.0,
                **rating[i],
            }
        )
    return out


def ratings(records: Sequence[GameRecord], agents: int) -> list[dict]:
    """OpenSkill Plackett-Luce ratings of agents ``0 .. agents-1``, ranked by final total
    (lower is better, equal totals tie). ``ordinal`` is the conservative ``mu - 3 sigma``."""
    model = PlackettLuce()
    current = [model.rating(name=str(i)) for i in range(agents)]
    for r in records:
        teams = [[current[i]] for i in r.agents]
        new = model.rate(teams, ranks=list(r.totals))
        for seat, i in enumerate(r.agents):
            current[i] = new[seat][0]
    return [{"mu": c.mu, "sigma": c.sigma, "ordinal": c.ordinal()} for c in current]


def seat_win_rates(records: Sequence[GameRecord], from_leader: bool = False) -> list[dict]:
    """Win rate (with 95% CI) of each seat, or of each position counted clockwise from the
    game's first leader when ``from_leader``."""
    n = len(records[0].totals) if records else 0
    wins = [0.0] * n
    for r in records:
        for seat, share in enumerate(seat_shares(r)):
            wins[(seat - r.first_leader) % n if from_leader else seat] += share
    out = []
    for s in range(n):
        lo, hi = wilson(wins[s], len(records))
        out.append(
            {
                "seat": s,
                "win_rate": wins[s] / len(records),
                "ci_low": lo,
                "ci_high": hi,
                "wins": wins[s],
            }
        )
    return out


def no_seat_effect(wins: Sequence[float]) -> dict:
    """Chi-square test that every seat wins equally often, from each seat's (tie-shared) wins."""
    observed = np.asarray(wins, dtype=float)
    if observed.size < 2 or observed.sum() <= 0:
        raise ValueError("the seat-effect test needs 2+ seats and at least one game")
    from scipy import stats

    result = stats.chisquare(observed)
    return {
        "chi2": float(result.statistic),
        "dof": int(observed.size - 1),
        "p": float(result.pvalue),
    }


def draw_rate(records: Sequence[GameRecord]) -> float:
    """Share of games won by more than one player (R14's shared win)."""
    return sum(len(r.winners) > 1 for r in records) / len(records) if records else 0.0


def mean_hands(records: Sequence[GameRecord]) -> float:
    """Mean number of hands per game."""
    return sum(len(r.hands) for r in records) / len(records) if records else 0.0


__all__ = [
    "Z95",
    "agent_summary",
    "draw_rate",
    "mean_hands",
    "mean_interval",
    "no_seat_effect",
    "ranked",
    "ratings",
    "seat_shares",
    "seat_win_rates",
    "wilson",
]
