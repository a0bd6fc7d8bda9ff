"""The studies' figures, drawn to go into a paper as they are.

Each function takes a study's summary (the dict its JSON holds) and returns a bare matplotlib
``Figure`` (never pyplot: no backend is chosen or changed for the importing process, so a notebook
keeps its inline backend); :func:`save_figure` writes it as PNG and PDF.

Conventions, in every figure: the size is the printed size (6.5 in wide, a page's text width), with
9 pt text; proportions are in percent; every interval is the 95% interval the tables print, drawn
as it is, so a Wilson interval stays asymmetric; a dashed grey line marks the fair share where
there is one; colours are Okabe-Ito (distinguishable in colour-blindness and in grey).

- :func:`tournament_figure`: win rate per agent, agents in the table's order (best first).
- :func:`seating_figure`: one panel per player count, on a shared y-axis "win rate / fair share
  1/n" (1 = no seat effect), one series per first-player rule offset sideways so no two share an
  x position; the legend sits below the panels.
- :func:`thresholds_figure`: win rate of the first agent, hands per game and draws against the
  threshold, each with its interval.
- :func:`goat_figure`: the Goat study (:mod:`odin_lab.evaluation.goat_study`) against the
  player count, with and without the Goat.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from pathlib import Path

import matplotlib as mpl
from matplotlib import transforms
from matplotlib.figure import Figure

from odin_lab.evaluation import stats
from odin_lab.evaluation.names import labels, short_names
from odin_lab.files import write_atomic

WIDTH = 6.5
"""Printed width of every figure, in inches (a page's text width)."""
DPI = 200
COLOURS = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000")
"""Okabe-Ito: one colour per series."""
STYLE = {
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "figure.titlesize": 10,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "errorbar.capsize": 2.5,
}
FAIR = {"color": "0.45", "ls": "--", "lw": 1.0, "zorder": 1}
"""How the fair-share (parity) line is drawn."""


def save_figure(fig: Figure, path: Path) -> None:
    """Write ``fig`` to ``path`` (PNG) and beside it as PDF, atomically. No metadata (no date,
    no version), so the files depend only on the data."""
    for suffix, metadata in ((".png", {"Software": None}), (".pdf", _PDF_METADATA)):
        buf = io.BytesIO()
        fig.savefig(buf, format=suffix[1:], dpi=DPI, metadata=metadata)
        write_atomic(Path(path).with_suffix(suffix), buf.getvalue())


_PDF_METADATA = {"Creator": None, "Producer": None, "CreationDate": None}


def interval(
    rows: Sequence[dict],
    value: str = "win_rate",
    low: str = "ci_low",
    high: str = "ci_high",
    scale: float = 100.0,
) -> tuple[list[float], list[list[float]]]:
    """The values ``rows[i][value] * scale`` and their error-bar lengths below and above, as
    matplotlib's ``xerr``/``yerr`` take them, from the interval bounds ``low`` and ``high``
    (clipped at 0: rounding can put a Wilson bound 1e-17 past a rate of 0 or 1)."""
    values = [scale * r[value] for r in rows]
    below = [max(0.0, v - scale * r[low]) for v, r in zip(values, rows)]
    above = [max(0.0, scale * r[high] - v) for v, r in zip(values, rows)]
    return values, [below, above]


def tournament_figure(summary: dict) -> Figure:
    """Win rate per agent with its 95% Wilson interval, one row per agent in the order of the
    tournament table (:func:`odin_lab.evaluation.stats.ranked`, best first, top to bottom), each
    labelled with its rate and interval; the dashed line is the fair share 1/n."""
    agents = stats.ranked(summary["agents"])
    config, n = summary["config"], summary["config"]["players"]
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, 0.9 + 0.32 * len(agents)), layout="constrained")
        ax = fig.subplots()
        rates, err = interval(agents)
        rows = range(len(agents))
        ax.barh(rows, rates, height=0.6, color=COLOURS[0], alpha=0.35, zorder=2)
        ax.errorbar(rates, rows, xerr=err, fmt="o", color=COLOURS[0], ms=4, zorder=3, clip_on=False)
        ax.axvline(100 / n, **FAIR)
        ax.set_yticks(list(rows), [a["agent"] for a in agents])
        ax.invert_yaxis()  # the table's first row on top
        right = max([100 * a["ci_high"] for a in agents] + [100 / n])
        ax.set_xlim(0, min(100.0, 10 * math.ceil(right * 1.1 / 10)))
        # The figures as a column right of the axes, as in a forest plot: never over the data.
        column = transforms.blended_transform_factory(ax.transAxes, ax.transData)
        ax.text(
            1.02,
            -0.75,
            "win rate [95% CI]",
            transform=column,
            va="center",
            fontsize=8,
            weight="bold",
        )
        for y, a in zip(rows, agents):
            ax.text(
                1.02,
                y,
                f"{100 * a['win_rate']:.1f}% [{100 * a['ci_low']:.1f}, {100 * a['ci_high']:.1f}]",
                transform=column,
                va="center",
                fontsize=8,
            )
        ax.set_xlabel("win rate, % of games (ties shared); whiskers: 95% Wilson interval")
        fig.suptitle(
            f"{summary['games']} games, {n} players, threshold {config['threshold']}, every deal "
            f"from every seat; dashed: fair share 1/{n}",
            fontsize=9,
        )
    return fig


def seating_figure(summary: dict) -> Figure:
    """One panel per player count n (shared axes): for each seat counted clockwise from the
    game's first leader, the win rate divided by the fair share 1/n (so 1 is no seat effect and
    every panel reads on one scale), with its 95% Wilson interval; one series per first-player
    rule, offset sideways."""
    cells = summary["cells"]
    rules = list(dict.fromkeys(c["first_player"] for c in cells))
    counts = sorted({c["players"] for c in cells})
    cols = min(len(counts), 3)
    rows = math.ceil(len(counts) / cols)
    offsets = seating_offsets(len(rules))
    # The fair share and one entry per rule, at most three a line: four rules fit the width.
    entries = 1 + len(rules)
    lines = math.ceil(entries / 3)
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, 1.0 + 1.9 * rows + 0.3 * lines), layout="constrained")
        # The panels above, the legend in a strip of its own below: outside the data, and clear
        # of the title and the axis labels whatever the grid.
        panels, strip = fig.subfigures(2, 1, height_ratios=[0.6 + 1.9 * rows, 0.05 + 0.3 * lines])
        axes = panels.subplots(rows, cols, sharey=True, squeeze=False)
        for k, ax in enumerate(axes.flat):
            if k >= len(counts):
                ax.set_visible(False)
                continue
            n = counts[k]
            ax.axhline(1.0, **FAIR, label="fair share (no seat effect)")
            for j, rule in enumerate(rules):
                cell = next(
                    (c for c in cells if c["players"] == n and c["first_player"] == rule), None
                )
                if cell is None:
                    continue
                ys, err = interval(cell["positions"], scale=n)
                xs = [p["seat"] + offsets[j] for p in cell["positions"]]
                ax.errorbar(
                    xs,
                    ys,
                    yerr=err,
                    fmt="o",
                    ms=3.5,
                    color=COLOURS[j % len(COLOURS)],
                    label=f"first player: {rule}",
                )
            ax.set_xticks(range(n))
            ax.set_xlim(-0.5, n - 0.5)
            ax.set_title(f"{n} players", loc="left")
            if k % cols == 0:
                ax.set_ylabel("win rate ÷ fair share 1/n")
        legend = {}
        for ax in axes.flat:
            for handle, label in zip(*ax.get_legend_handles_labels()):
                legend.setdefault(label, handle)
        ncols = math.ceil(len(legend) / lines)
        strip.legend(legend.values(), legend.keys(), loc="center", ncols=ncols, frameon=False)
        panels.supxlabel(
            "seat, counted clockwise from the game's first leader (0 = first leader)", fontsize=9
        )
        fig.suptitle(
            f"Seat effect: {short_names([summary['agent']])[0]} in every seat, "
            f"{summary['games_per_cell']} games per series; 95% Wilson intervals",
            fontsize=10,
        )
    return fig


def seating_offsets(series: int, width: float = 0.4) -> list[float]:
    """Sideways offsets of ``series`` series sharing one x position: spread over ``width``
    (< 1, so a series never reaches the next position's), centred on 0."""
    if series <= 1:
        return [0.0]
    step = width / (series - 1)
    return [-width / 2 + j * step for j in range(series)]


def thresholds_figure(summary: dict) -> Figure:
    """Against the threshold: the first agent's win rate (Wilson interval; dashed: fair share
    1/n), hands per game (t interval of the mean) and draws (Wilson interval), in three panels
    sharing the x-axis."""
    rows = summary["rows"]
    n = summary["config"]["players"]
    xs = [r["threshold"] for r in rows]
    first, *others = labels(summary["agents_specs"])
    panels = (
        (interval(rows), f"{first} win rate, %", 100 / n),
        (
            interval(rows, "mean_hands", "hands_ci_low", "hands_ci_high", 1.0),
            "hands per game",
            None,
        ),
        (interval(rows, "draw_rate", "draw_ci_low", "draw_ci_high"), "draws, % of games", None),
    )
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, 2.5), layout="constrained")
        axes = fig.subplots(1, 3, sharex=True)
        for ax, ((ys, err), label, fair) in zip(axes, panels):
            if fair is not None:
                ax.axhline(fair, **FAIR)
                ax.annotate(
                    f"fair share 1/{n}",
                    (xs[0], fair),
                    xytext=(0, 3),
                    textcoords="offset points",
                    color=FAIR["color"],
                    fontsize=8,
                )
            ax.errorbar(xs, ys, yerr=err, fmt="o-", ms=3.5, lw=1, color=COLOURS[0])
            ax.set_ylabel(label)
            ax.set_xticks(xs)
            top = ax.get_ylim()[1]
            ax.set_ylim(-0.04 * top, top)  # from 0, with room for a point at 0
        fig.supxlabel("threshold (penalty points that end the game)", fontsize=9)
        opponents = ", ".join(others)
        fig.suptitle(
            f"{first} against {opponents}: {rows[0]['games']} games per threshold, 95% intervals",
            fontsize=10,
        )
    return fig


def goat_figure(summary: dict) -> Figure:
    """The Goat study against the player count, without the Goat (one colour) and with it
    (another), offset sideways, each with its 95% interval, in four panels: hands per game;
    the first leader's win rate and the Goat holder's hand-win rate, each divided by the fair
    share 1/n (dashed: 1); the share of hands that end with the Goat in a hand; the winner's
    (filled) and the loser's (open) final totals."""
    cells = summary["cells"]
    offsets = seating_offsets(2, 0.3)
    series = [(False, "without the Goat"), (True, "with the Goat")]
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, 5.0), layout="constrained")
        axes = fig.subplots(2, 2, sharex=True).flat
        for j, (goat, name) in enumerate(series):
            rows = [c for c in cells if c["goat"] == goat]
            xs = [c["players"] + offsets[j] for c in rows]
            dot = {"fmt": "o-", "ms": 3.5, "lw": 1, "color": COLOURS[j]}
            ys, err = interval(rows, "mean_hands", "hands_ci_low", "hands_ci_high", 1.0)
            axes[0].errorbar(xs, ys, yerr=err, label=name, **dot)
            fair = [
                {
                    k: c[k] / c["fair_share"]
                    for k in ("leader_win_rate", "leader_ci_low", "leader_ci_high")
                }
                for c in rows
            ]
            ys, err = interval(fair, "leader_win_rate", "leader_ci_low", "leader_ci_high", 1.0)
            axes[1].errorbar(xs, ys, yerr=err, label=f"first leader, {name}", **dot)
            if goat:
                held = [
                    {
                        k: c[k] / c["fair_share"]
                        for k in ("holder_rate", "holder_ci_low", "holder_ci_high")
                    }
                    for c in rows
                ]
                ys, err = interval(held, "holder_rate", "holder_ci_low", "holder_ci_high", 1.0)
                axes[1].errorbar(
                    xs,
                    ys,
                    yerr=err,
                    label="the Goat's holder, hands won",
                    **{**dot, "color": COLOURS[2], "fmt": "s--"},
                )
                ys, err = interval(rows, "goat_left_rate", "goat_left_ci_low", "goat_left_ci_high")
                axes[2].errorbar(xs, ys, yerr=err, **{**dot, "color": COLOURS[2]})
            for who, face in (("winner", COLOURS[j]), ("loser", "white")):
                ys, err = interval(rows, f"{who}_total", f"{who}_ci_low", f"{who}_ci_high", 1.0)
                axes[3].errorbar(xs, ys, yerr=err, mfc=face, label=f"{who}, {name}", **dot)
        axes[1].axhline(1.0, **FAIR)
        titles = ("hands per game", "win rate ÷ fair share 1/n",
                  "hands ending with the Goat in a hand, %", "final total")  # fmt: skip
        for ax, title in zip(axes, titles):
            ax.set_title(title, loc="left")
            ax.set_xticks(sorted({c["players"] for c in cells}))
        for ax in (axes[0], axes[1], axes[3]):
            ax.legend(frameon=False)
        fig.supxlabel("players", fontsize=9)
        fig.suptitle(
            f"The Grumpy Goat: {short_names([summary['agent']])[0]} in every seat, "
            f"{summary['games_per_cell']} games per point; 95% intervals",
            fontsize=10,
        )
    return fig


def leaderboard_figure(summary: dict) -> Figure:
    """A leaderboard (:mod:`odin_lab.evaluation.leaderboard`): one row per agent in the table's
    order (rating, best on top); left, the OpenSkill rating mu with its interval; right, the win
    share against the field in % with its 95% Wilson interval (dashed: the fair share 1/n). Every
    whisker is drawn from the interval's own bounds. An agent with no games yet (a partial
    leaderboard) keeps its row, marked "no games", with no point."""
    agents = sorted(summary["agents"], key=lambda a: a["rank"])
    n = summary["config"]["players"]
    rows = list(range(len(agents)))
    played = [a for a in agents if a["games"]]
    ys = [y for y, a in zip(rows, agents) if a["games"]]
    with mpl.rc_context(STYLE):
        fig = Figure(figsize=(WIDTH, 1.2 + 0.3 * len(agents)), layout="constrained")
        left, right = fig.subplots(1, 2, sharey=True)
        mus, err = interval(played, "mu", "rating_low", "rating_high", 1.0)
        left.errorbar(mus, ys, xerr=err, fmt="o", color=COLOURS[0], ms=4, zorder=3)
        for y, a in zip(rows, agents):
            if not a["games"]:
                left.text(
                    0.02,
                    y,
                    "no games",
                    transform=left.get_yaxis_transform(),
                    va="center",
                    color=FAIR["color"],
                    fontsize=8,
                )
        left.set_xlabel(
            "OpenSkill rating $\\mu$ (Plackett-Luce);\n"
            "whiskers: [$\\mu - 1.96\\sigma$, $\\mu + 1.96\\sigma$]"
        )
        left.set_ylabel("agent, by rating")
        shares, err = interval(played, "win_share", "ci_low", "ci_high")
        right.errorbar(
            shares, ys, xerr=err, fmt="o", color=COLOURS[1], ms=4, zorder=3, clip_on=False
        )
        right.axvline(100 / n, **FAIR)
        above = transforms.blended_transform_factory(right.transData, right.transAxes)
        right.text(
            100 / n,
            1.01,
            f"fair share 1/{n}",
            transform=above,
            ha="center",
            va="bottom",
            color=FAIR["color"],
            fontsize=8,
        )
        top = max(100 * a["ci_high"] for a in played)
        right.set_xlim(0, min(100.0, 10 * math.ceil(max(top, 100 / n) * 1.1 / 10)))
        right.set_xlabel("win share against the field, % (ties shared);\nwhiskers: 95% Wilson")
        left.set_yticks(rows, [a["agent"] for a in agents])
        left.invert_yaxis()  # the table's first row on top
        for ax in (left, right):
            ax.grid(axis="x", color="0.9", lw=0.6, zorder=0)
            ax.set_ylim(len(agents) - 0.5, -0.5)
        done, planned = len(summary["tables"]), summary["tables_planned"]
        tables = f"{done} of {planned} tables" if done < planned else f"{done} tables"
        partial = " played, partial" if done < planned else ""
        fig.suptitle(
            f"Leaderboard: {len(agents)} agents, {tables} of {n}{partial} "
            f"({summary['selection']}),\n{summary['games_per_table']} games per table, every deal "
            f"from every seat; threshold {summary['config']['threshold']}; 95% intervals",
            fontsize=9,
        )
    return fig


__all__ = [
    "interval",
    "leaderboard_figure",
    "save_figure",
    "seating_figure",
    "seating_offsets",
    "thresholds_figure",
    "tournament_figure",
]
