"""The studies' figures and tables (evaluation.figures, evaluation.studies), read off the figure
objects: the tournament's rows in the table's order, whiskers at the Wilson bounds (asymmetric),
no two seating series on one x position and the legend clear of the data, intervals on every
thresholds panel, and tables that print intervals as [lo, hi], never a symmetric "±"."""

from __future__ import annotations

import math

import numpy as np
import pytest
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.container import ErrorbarContainer

from odin_env.rules import Config
from odin_lab.evaluation import figures, stats, studies


def errorbars(ax) -> list[ErrorbarContainer]:
    return [c for c in ax.containers if isinstance(c, ErrorbarContainer)]


def whiskers(container: ErrorbarContainer, axis: int) -> list[tuple[float, float]]:
    """The (low, high) ends of each drawn error bar along ``axis`` (0: x, 1: y)."""
    (segments,) = [c.get_segments() for c in container.lines[2]]
    return [(float(s[0][axis]), float(s[1][axis])) for s in segments]


def dashed(ax, axis: int) -> list[float]:
    """Where the dashed (fair-share) lines of ``ax`` sit along ``axis``."""
    return [
        float((line.get_xdata() if axis == 0 else line.get_ydata())[0])
        for line in ax.get_lines()
        if line.get_linestyle() == "--"
    ]


def rate(name: str, wins: float, games: int, key: str = "agent") -> dict:
    low, high = stats.wilson(wins, games)
    return {key: name, "win_rate": wins / games, "ci_low": low, "ci_high": high, "wins": wins}


def tournament_summary() -> dict:
    # Seat order (the summary's) differs from the win-rate order; greedy and random#2 tie.
    agents = [
        {
            **rate(name, wins, 200),
            "mean_total": 9.0,
            "mean_penalty_per_hand": 2.0,
            "ordinal": 1.0,
            "mu": 2.0,
        }
        for name, wins in (("random", 3), ("planner", 117), ("greedy", 40), ("random#2", 40))
    ]
    seats = [{**rate(s, w, 200, "seat")} for s, w in enumerate((55, 45, 52, 48))]
    return {
        "games": 200,
        "deals": 50,
        "seed": 0,
        "config": studies.config_dict(Config()),
        "agents": agents,
        "seats": seats,
        "draw_rate": 0.05,
        "mean_hands": 3.2,
    }


def test_tournament_rows_follow_the_table_and_whiskers_are_the_wilson_bounds():
    summary = tournament_summary()
    (ax,) = figures.tournament_figure(summary).axes
    labels = {y: t.get_text() for y, t in zip(ax.get_yticks(), ax.get_yticklabels())}
    screen_y = {y: ax.transData.transform((0, y))[1] for y in labels}
    top_to_bottom = [labels[y] for y in sorted(labels, key=lambda y: -screen_y[y])]
    table = studies.tournament_table(summary).splitlines()
    assert top_to_bottom == [line.split()[0] for line in table[2:6]]
    assert top_to_bottom == ["planner", "greedy", "random#2", "random"]

    ranked = stats.ranked(summary["agents"])
    (bars,) = errorbars(ax)
    drawn = whiskers(bars, axis=0)
    assert np.allclose(drawn, [(100 * a["ci_low"], 100 * a["ci_high"]) for a in ranked])
    centre = 100 * ranked[0]["win_rate"]  # 58.5%: its Wilson interval leans towards 50%
    assert drawn[0][1] - centre < centre - drawn[0][0] - 0.05
    assert dashed(ax, axis=0) == [25.0]
    assert "fair share 1/4" in ax.figure.get_suptitle()
    assert "%" in ax.get_xlabel() and "Wilson" in ax.get_xlabel()


def seating_summary(rules: tuple[str, ...] = ("rotate", "winner")) -> dict:
    rng = np.random.default_rng(0)
    cells = []
    for rule in rules:
        for n in (2, 3, 5):
            wins = rng.multinomial(300, [1 / n] * n)
            positions = [rate(s, int(w), 300, "seat") for s, w in enumerate(wins)]
            cells.append(
                {
                    "players": n,
                    "first_player": rule,
                    "games": 300,
                    "positions": positions,
                    **stats.no_seat_effect(wins),
                }
            )
    return {"agent": "greedy", "games_per_cell": 300, "cells": cells}


def test_seating_panels_share_one_scale_and_no_two_series_share_an_x_position():
    summary = seating_summary()
    fig = figures.seating_figure(summary)
    panels, strip = fig.subfigs
    axes = [ax for ax in panels.axes if ax.get_visible()]
    assert [ax.get_title(loc="left") for ax in axes] == ["2 players", "3 players", "5 players"]
    assert all(axes[0].get_shared_y_axes().joined(axes[0], ax) for ax in axes)
    assert axes[0].get_ylabel() == "win rate ÷ fair share 1/n"
    assert "first leader" in panels.get_supxlabel()
    for ax, n in zip(axes, (2, 3, 5)):
        assert dashed(ax, axis=1) == [1.0]
        series = errorbars(ax)
        assert len(series) == 2
        xs = [set(np.round(np.asarray(c.lines[0].get_xdata(), float), 9)) for c in series]
        assert not xs[0] & xs[1] and all(len(x) == n for x in xs)
        for container, rule in zip(series, ("rotate", "winner")):
            (cell,) = [
                c for c in summary["cells"] if (c["players"], c["first_player"]) == (n, rule)
            ]
            expected = [(n * p["ci_low"], n * p["ci_high"]) for p in cell["positions"]]
            assert np.allclose(whiskers(container, axis=1), expected)
            assert np.allclose(
                container.lines[0].get_ydata(), [n * p["win_rate"] for p in cell["positions"]]
            )
    # The legend lies in its own strip, outside every panel.
    FigureCanvasAgg(fig).draw()
    (legend,) = strip.legends
    box = legend.get_window_extent()
    assert not any(box.overlaps(ax.get_window_extent()) for ax in axes)
    assert [t.get_text() for t in legend.get_texts()] == [
        "fair share (no seat effect)",
        "first player: rotate",
        "first player: winner",
    ]


def test_the_seating_legend_of_every_first_player_rule_lies_whole_inside_the_figure():
    fig = figures.seating_figure(seating_summary(("rotate", "winner", "random", "fixed")))
    FigureCanvasAgg(fig).draw()
    (legend,) = fig.subfigs[1].legends
    box, page = legend.get_window_extent(), fig.bbox
    assert page.x0 <= box.x0 and box.x1 <= page.x1 and page.y0 <= box.y0 and box.y1 <= page.y1
    assert len(legend.get_texts()) == 5


def test_seating_table_prints_wilson_bounds_not_plus_minus():
    summary = seating_summary()
    table = studies.seating_table(summary)
    assert "±" not in table
    first = summary["cells"][0]["positions"][0]
    assert f"[{100 * first['ci_low']:.1f}, {100 * first['ci_high']:.1f}]" in table.splitlines()[2]


def thresholds_summary() -> dict:
    rows = []
    for threshold, wins, draws, hands in ((5, 150, 14, 1.6), (15, 180, 6, 4.4), (30, 196, 0, 8.6)):
        rows.append(
            {
                "threshold": threshold,
                "games": 200,
                **rate(threshold, wins, 200, "t"),
                "mean_hands": hands,
                "hands_ci_low": hands - 0.1,
                "hands_ci_high": hands + 0.1,
                "draw_rate": draws / 200,
                **dict(zip(("draw_ci_low", "draw_ci_high"), stats.wilson(draws, 200))),
            }
        )
    return {
        "agents_specs": ["greedy", "random", "random", "random"],
        "rows": rows,
        "config": studies.config_dict(Config(players=4)),
    }


def test_thresholds_panels_have_intervals_and_a_fair_share_line_on_the_win_rate():
    summary = thresholds_summary()
    rows = summary["rows"]
    win, hands, draws = figures.thresholds_figure(summary).axes
    for ax, low, high, scale in (
        (win, "ci_low", "ci_high", 100),
        (hands, "hands_ci_low", "hands_ci_high", 1),
        (draws, "draw_ci_low", "draw_ci_high", 100),
    ):
        (container,) = errorbars(ax)
        assert np.allclose(
            whiskers(container, axis=1), [(scale * r[low], scale * r[high]) for r in rows]
        )
        assert list(ax.get_xticks()) == [5, 15, 30]
        assert ax.get_ylim()[0] < 0 <= min(scale * r[low] for r in rows)  # 0 shown, not cut
    assert dashed(win, axis=1) == [25.0] and dashed(hands, 1) == dashed(draws, 1) == []
    assert "%" in win.get_ylabel() and "%" in draws.get_ylabel()
    table = studies.thresholds_table(summary)
    assert "±" not in table
    assert "[0.0, 1.9]" in table.splitlines()[-1]  # the Wilson interval of 0 draws in 200


def test_mean_interval_is_the_student_t_interval():
    mean, low, high = stats.mean_interval([1, 2, 3, 4])
    half = 3.182446305284263 * math.sqrt(5 / 3) / 2  # t(0.975, 3) * s / sqrt(n)
    assert mean == 2.5 and low == pytest.approx(2.5 - half) and high == pytest.approx(2.5 + half)
    with pytest.raises(ValueError, match="needs 2\\+ values; got 1"):
        stats.mean_interval([3])


def test_a_thresholds_study_writes_the_intervals_and_a_png_and_a_pdf(tmp_path):
    summary, _ = studies.thresholds(
        ["random", "random"], [2], games=6, seed=1, out=tmp_path, base=Config(players=2),
        progress=False,
    )  # fmt: skip
    (row,) = summary["rows"]
    draws = round(row["draw_rate"] * row["games"])
    assert (row["draw_ci_low"], row["draw_ci_high"]) == stats.wilson(draws, row["games"])
    assert row["hands_ci_low"] < row["mean_hands"] < row["hands_ci_high"] or (
        row["hands_ci_low"] == row["mean_hands"] == row["hands_ci_high"]
    )
    assert (tmp_path / "thresholds.png").read_bytes()[:4] == b"\x89PNG"
    assert (tmp_path / "thresholds.pdf").read_bytes()[:5] == b"%PDF-"
