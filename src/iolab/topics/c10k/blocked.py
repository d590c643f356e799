"""Sleepers blocked on a read instead of a timer: the OS threads of each runtime's process as N grows.

Source 003's second Go program looks at what a sleep benchmark hides: goroutines that wait in a
``read(2)`` instead of a timer. Here each runtime's readers block on a pipe nobody writes to, or on a
socket nobody sends on, and :func:`blocked_reads` counts the OS threads of the process for each N.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from iolab.kit.machine import DescriptorLimit
from iolab.topics.c10k import runner

if TYPE_CHECKING:
    import pandas as pd

# (runtime, what each reader reads): every combination the programs know.
VARIANTS: tuple[tuple[str, str], ...] = (
    ("threads", "pipe"),
    ("threads", "socket"),
    ("asyncio", "pipe"),
    ("asyncio", "socket"),
    ("trio", "pipe"),
    ("trio", "socket"),
    ("go", "pipe"),
    ("go", "socket"),
    ("node", "pipe"),
)
# How long a program holds its readers if nobody stops it; the runner stops it once its thread
# count has settled, long before.
HOLD_S = 60.0


def blocked_reads(
    counts: list[int],
    variants: tuple[tuple[str, str], ...] = VARIANTS,
    *,
    settle_s: float = 0.5,
    progress: bool = False,
) -> "pd.DataFrame":
    """One row per (runtime, medium, count): the OS threads and memory with ``count`` readers blocked.

    ``status`` is "held" when all readers blocked as planned, "failed" when the program met a limit
    (``error`` names it), "skipped" without the runtime, "refused" when ``ulimit -n`` is too low.
    """
    import pandas as pd
    from tqdm.auto import tqdm

    rows = []
    jobs = [(runtime, medium, n) for runtime, medium in variants for n in counts]
    for runtime, medium, n in tqdm(jobs, desc="blocked readers", disable=not progress):
        try:
            run = runner.run(runtime, n, HOLD_S, mode=medium, settle_s=settle_s, interval_s=0.05)
        except DescriptorLimit as exc:  # refused before starting: a row that says why
            run = runner.ProgramRun(runtime, medium, n, HOLD_S, "refused", error=str(exc))
        rows.append({
            "runtime": runtime,
            "medium": medium,
            "variant": f"{runtime} · {medium}",
            "count": n,
            "os_threads": run.max_os_threads,
            "rss_mb": run.peak_rss_mb,
            "ready_s": run.ready_s,
            "status": run.status,
            "error": run.error,
        })
    return pd.DataFrame(rows)
