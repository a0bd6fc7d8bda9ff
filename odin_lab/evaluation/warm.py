"""Compile the batched engine and the batched agents' numba kernels side by side.

numba compiles one function at a time in a process: on a cold cache (a fresh clone) the engine
takes about 22 s of CPU and the heuristics' kernels about 13 s more, one after the other.
:func:`compile_side_by_side` compiles the engine in this process while a second process
compiles the agents' kernels into the same on-disk cache, so that the first batched tournament
waits for the longer of the two, not their sum. Nothing here changes what is compiled or
played: a kernel not yet cached when it is called is compiled there, as without it.
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
from collections.abc import Sequence

import numpy as np

from agents.registry import make_batch_agent
from odin_env.batched import BatchedGames
from odin_env.observation import OBS_SIZE
from odin_env.rules import Config
from odin_env.spec import NUM_ACTIONS
from odin_lab.evaluation.processes import started_ignoring_ctrl_c


def warm_kernels(specs: Sequence[str]) -> None:
    """Call the numba kernel of each spec's batched form on zero rows: numba compiles it (and
    caches it) for the engine's arrays, ``float32`` observations and ``int8`` masks."""
    for spec in dict.fromkeys(specs):
        agent = make_batch_agent(spec, seed=0)
        if getattr(type(agent), "kernel", None) is not None:  # a KernelAgent
            obs, mask = np.zeros((0, OBS_SIZE), np.float32), np.zeros((0, NUM_ACTIONS), np.int8)
            agent.act_batch(obs, mask)


def _warm_in_child(specs: Sequence[str]) -> None:
    # A head start only: what fails here, the parent compiles itself when it calls it.
    with contextlib.suppress(Exception):
        warm_kernels(specs)


def compile_side_by_side(config: Config, specs: Sequence[str]) -> None:
    """Compile the engine's kernels here (one short game step) while a spawned process compiles
    the kernels of ``specs``' batched forms; return when both are done. Ctrl-C ends the other
    process at once."""
    child = mp.get_context("spawn").Process(target=_warm_in_child, args=(tuple(specs),))
    with started_ignoring_ctrl_c():  # the parent handles Ctrl-C and ends the child
        child.start()
    try:
        engine = BatchedGames(config, batch=1, seed=0)
        engine.step(engine.first_legal)
        child.join()
    finally:
        if child.is_alive():
            child.terminate()
            child.join()


__all__ = ["compile_side_by_side", "warm_kernels"]
