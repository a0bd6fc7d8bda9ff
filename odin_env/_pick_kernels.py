"""Numba kernels that pick a uniform legal action per row of a mask (``agents.batch``'s random
agent, the batched engine's fillers); private, no public API."""

from __future__ import annotations

from numba import njit, prange

PICK_BLOCK = 64


@njit(cache=True, inline="always")
def _pick_row(mask, i, u, out, sums):
    """Row ``i``'s nonzero entry of rank ``floor(u[i] * count)`` into ``out[i]`` (-1 when the
    row has none). One pass counts the entries by blocks of 64 (a loop the compiler vectorises)
    into ``sums[i]``, then only the block holding the chosen rank is scanned."""
    width = mask.shape[1]
    blocks = width // PICK_BLOCK
    total = 0
    for b in range(blocks):
        s = 0
        base = b * PICK_BLOCK
        for j in range(PICK_BLOCK):
            s += mask[i, base + j] != 0
        sums[i, b] = s
        total += s
    s = 0
    for a in range(blocks * PICK_BLOCK, width):
        s += mask[i, a] != 0
    sums[i, blocks] = s
    total += s
    out[i] = -1
    if total == 0:
        return
    rank = min(int(u[i] * total), total - 1)
    b = 0
    while rank >= sums[i, b]:
        rank -= sums[i, b]
        b += 1
    for a in range(b * PICK_BLOCK, width):
        if mask[i, a] != 0:
            if rank == 0:
                out[i] = a
                return
            rank -= 1


@njit(cache=True)
def pick_uniform(mask, u, out, sums):
    """For each row, a nonzero entry chosen by ``u`` (``_pick_row``); returns the first row
    without any, or -1. ``sums``: scratch of shape ``(rows, width // 64 + 1)``."""
    for i in range(mask.shape[0]):
        _pick_row(mask, i, u, out, sums)
        if out[i] < 0:
            return i
    return -1


@njit(cache=True, parallel=True)
def pick_uniform_parallel(mask, u, out, sums):
    """``pick_uniform`` with the rows shared among numba's threads."""
    for i in prange(mask.shape[0]):
        _pick_row(mask, i, u, out, sums)
    for i in range(mask.shape[0]):
        if out[i] < 0:
            return i
    return -1
