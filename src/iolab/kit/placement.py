"""Which cores a server and its load run on: pinning them to separate halves of the machine.

On a small machine the load generator shares the cores with the server it measures, and where the
scheduler puts the two changes the figure: on the course machine (2 cores), wrk's rate on the uvloop
server over its rate on nginx ranged from 0.72 to 1.05 in one unpinned run of ``benchmarks/limits.py``
and from 0.81 to 0.82 in a pinned one (``benchmarks/README.md``). Pinning the server to one half of the cores and the load to the other
makes a comparison between two servers (or two load generators) compare like with like.

Affinity is inherited: a process started while this one runs :func:`on_cpus` runs on those CPUs
too, so a server started inside ``on_cpus(server)`` and a load run inside ``on_cpus(load)`` end up
apart without touching either program.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from typing import NamedTuple

from iolab.kit import platforms


class Halves(NamedTuple):
    """Two disjoint sets of CPUs: one for the server, one for the load."""

    server: frozenset[int]
    load: frozenset[int]


def halves() -> Halves | None:
    """This process's CPUs split in two (the load gets the lower half), or None with one CPU or no affinity (macOS)."""
    if platforms.missing("affinity") is not None:
        return None
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return None
    middle = len(cpus) // 2
    return Halves(server=frozenset(cpus[middle:]), load=frozenset(cpus[:middle]))


@contextlib.contextmanager
def on_cpus(cpus: frozenset[int] | None) -> Iterator[None]:
    """Run this process, and every process it starts meanwhile, on ``cpus`` (None: where it was)."""
    if cpus is None:  # nothing to pin, and nothing asked of the kernel: macOS has no affinity to ask
        yield
        return
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, cpus)
    try:
        yield
    finally:
        os.sched_setaffinity(0, before)


def listed(cpus: Iterable[int]) -> str:
    """CPUs as a list a reader reads: "1", "0,1"."""
    return ",".join(map(str, sorted(cpus)))
