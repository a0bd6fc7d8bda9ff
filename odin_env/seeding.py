"""Seeds and counter-based random numbers, the one place the lab derives them.

- :func:`spawn_seed`: a 63-bit seed for a named sub-stream of a seed (``SeedSequence`` spawn
  keys): a deal of a tournament, the environments of a training run after ``steps`` decisions.
  Every seed the lab derives from another goes through it, never through arithmetic such as
  ``seed + 1``, so streams never overlap.
- :func:`splitmix64` and :func:`splitmix64_array`: SplitMix64's output function, a well-mixed
  64-bit hash; equal keys give equal numbers and neighbouring keys unrelated ones. Batched agents
  draw a row's randomness from its key alone (:func:`keyed_uniforms`), so a game's random
  decisions do not depend on which other games share its batch.
- :func:`game_seeds`: the seed of each game of a batch (:class:`odin_env.batched.BatchedGames`),
  with the checks of a batch size and of given seeds.
"""

from __future__ import annotations

import numpy as np

GOLDEN = 0x9E3779B97F4A7C15
"""SplitMix64's stream increment (2^64 / golden ratio): key ``k + t * GOLDEN`` is draw ``t``."""
_MASK64 = (1 << 64) - 1
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB


def spawn_seed(seed: int, *key: int) -> int:
    """The seed (a 63-bit int) of sub-stream ``key`` of ``seed``: ``SeedSequence(seed,
    spawn_key=key)``. ``ValueError`` for a negative seed or key."""
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be an integer >= 0; got {seed!r}")
    if any(k < 0 for k in key):
        raise ValueError(f"seed keys must be integers >= 0; got {key}")
    state = np.random.SeedSequence(int(seed), spawn_key=key).generate_state(2, dtype=np.uint32)
    return int(state[0]) << 31 ^ int(state[1])


def splitmix64(x: int) -> int:
    """SplitMix64's output for the Python int ``x`` (taken modulo 2^64)."""
    x = (x + GOLDEN) & _MASK64
    x = ((x ^ (x >> 30)) * _MIX1) & _MASK64
    x = ((x ^ (x >> 27)) * _MIX2) & _MASK64
    return x ^ (x >> 31)


def splitmix64_array(keys: np.ndarray) -> np.ndarray:
    """:func:`splitmix64` of each ``uint64`` key (wrapping arithmetic, as the scalar form)."""
    z = np.asarray(keys, dtype=np.uint64) + np.uint64(GOLDEN)
    z = (z ^ (z >> np.uint64(30))) * np.uint64(_MIX1)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(_MIX2)
    return z ^ (z >> np.uint64(31))


def keyed_uniforms(keys: np.ndarray) -> np.ndarray:
    """One float64 in ``[0, 1)`` per ``uint64`` key: the top 53 bits of its SplitMix64 hash."""
    return (splitmix64_array(keys) >> np.uint64(11)).astype(np.float64) * 2.0**-53


def game_seeds(seed: int | None, batch: int) -> list[int]:
    """The seed of each game of a batch of ``batch`` games made from ``seed``.

    Derived with ``numpy.random.SeedSequence(seed).generate_state(batch, uint64)``: distinct,
    well-mixed 64-bit seeds, the same for slot ``i`` whatever the batch size.
    """
    check_batch(batch)
    state = np.random.SeedSequence(seed).generate_state(batch, dtype=np.uint64)
    return [int(s) for s in state]


def check_seeds(seeds: object, count: int, what: str) -> list[int]:
    """``seeds`` as a list of ``count`` non-negative ints (the seeds ``rules.Game`` accepts)."""
    try:
        values = list(seeds)  # type: ignore[call-overload]
    except TypeError:
        raise ValueError(
            f"{what} must be an int, None or a sequence of ints; got {seeds!r}"
        ) from None
    if len(values) != count:
        raise ValueError(f"{what} must hold one seed per game ({count}); got {len(values)}")
    for value in values:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
            raise ValueError(f"{what} must hold integers >= 0; got {value!r}")
    return [int(v) for v in values]


def check_batch(batch: object) -> None:
    """``ValueError`` unless ``batch`` is an integer >= 1 (a number of games)."""
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise ValueError(f"batch must be an integer >= 1; got {batch!r}")


__all__ = [
    "GOLDEN", "check_batch", "check_seeds", "game_seeds", "keyed_uniforms", "spawn_seed",
    "splitmix64", "splitmix64_array",
]  # fmt: skip
