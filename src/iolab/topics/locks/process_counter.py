"""A counter shared by processes: a ``multiprocessing.Value`` in shared memory, incremented three ways.

Each process increments the same ``Value`` batched, under the Value's lock per increment, or with no
lock at all (``value.value += 1`` takes the lock to read and again to write, not across the two).
"""

from __future__ import annotations

import functools
import multiprocessing
from collections.abc import Callable

import pandas as pd

from iolab.kit.together import run_together
from iolab.topics.locks.harness import RUN_TIMEOUT_S


def _value_batched(value, n: int) -> None:
    batch = 0
    for _ in range(n):
        batch += 1
    with value.get_lock():
        value.value += batch


def _value_locked(value, n: int) -> None:
    # The idiom of the multiprocessing documentation: the Value's own lock around the increment.
    for _ in range(n):
        with value.get_lock():
            value.value += 1


def _value_unlocked(value, n: int) -> None:
    # value.value takes the lock to read and again to write, but not across the two.
    for _ in range(n):
        value.value += 1


VALUE_STRATEGIES: dict[str, Callable[..., None]] = {
    "batched": _value_batched,
    "lock": _value_locked,
    "no lock": _value_unlocked,
}


def value_costs(processes: list[int], ops: int, repeats: int = 3) -> pd.DataFrame:
    """A ``multiprocessing.Value`` incremented by N forked processes at once, per strategy.

    ``ops`` increments in all per run, split evenly. One row per run: runtime, strategy, processes,
    ops, seconds, ns_per_op, lost (increments missing from the final value), repeat.
    """
    rows = []
    for repeat in range(repeats):
        for strategy, body in VALUE_STRATEGIES.items():
            for n_procs in processes:
                per_process = ops // n_procs
                value = multiprocessing.Value("q", 0)  # shared memory, created before the fork
                wall = run_together(n_procs, functools.partial(body, value, per_process), RUN_TIMEOUT_S).wall_s.iloc[0]
                total = per_process * n_procs
                rows.append(
                    {"runtime": "Python processes", "strategy": strategy, "processes": n_procs, "ops": total,
                     "seconds": wall, "ns_per_op": wall / total * 1e9, "lost": total - value.value, "repeat": repeat}
                )
    return pd.DataFrame(rows)
