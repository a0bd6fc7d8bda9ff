"""The one progress display of training: a bar of learner steps with the rate and a note, and
the TensorBoard figures of finished episodes."""

from __future__ import annotations

import time
from collections.abc import Iterable

import numpy as np
from tqdm import tqdm


class Progress:
    """A progress bar over ``total`` steps starting at ``initial``, with a rate clock.

    ``rate()`` is the steps per second since its previous call (or the start); ``show(note)``
    puts the rate and ``note`` after the bar."""

    def __init__(self, total: int, initial: int = 0, desc: str = "train", enabled: bool = True):
        self.bar = tqdm(
            total=int(total),
            initial=min(int(initial), int(total)),
            unit="step",
            desc=desc,
            dynamic_ncols=True,
            smoothing=0.05,
            mininterval=2.0,
            disable=not enabled,
        )
        self.steps = int(initial)
        self._clock = (time.perf_counter(), self.steps)

    def advance(self, steps: int) -> None:
        """``steps`` more steps done."""
        self.steps += int(steps)
        self.bar.update(int(steps))

    def rate(self) -> float:
        """Steps per second since the previous call."""
        now = time.perf_counter()
        rate = (self.steps - self._clock[1]) / max(now - self._clock[0], 1e-9)
        self._clock = (now, self.steps)
        return rate

    def show(self, rate: float, note: str = "") -> None:
        """The rate and ``note`` after the bar."""
        self.bar.set_postfix_str(f"{rate:,.0f} steps/s" + (f" | {note}" if note else ""))

    def close(self) -> None:
        self.bar.close()


def episode_figures(
    results: dict[str, Iterable[tuple[float, float]]], lengths: Iterable[int] = ()
) -> dict[str, float]:
    """TensorBoard figures of finished episodes: per opponent kind, the learner's
    ``opponents/<kind>/win_rate`` and ``mean_penalty`` from its ``(win share, penalty total)``
    results, and ``charts/episode_length`` (learner decisions per episode)."""
    out: dict[str, float] = {}
    lengths = list(lengths)
    if lengths:
        out["charts/episode_length"] = float(np.mean(lengths))
    for kind, pairs in results.items():
        pairs = list(pairs)
        if pairs:
            wins, penalties = zip(*pairs)
            out[f"opponents/{kind}/win_rate"] = float(np.mean(wins))
            out[f"opponents/{kind}/mean_penalty"] = float(np.mean(penalties))
    return out


__all__ = ["Progress", "episode_figures"]
