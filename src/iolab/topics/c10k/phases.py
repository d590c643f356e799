"""Where a sleepers run's time goes beyond its sleep: the marks a program notes, and the breakdown.

100,000 sleepers of 10 s take longer than 10 s. The extra time lies on one path, the last sleeper's:
the interpreters start and import, the program creates every task, each task takes its first step
(``asyncio.sleep`` makes a future and pushes a timer on the loop's heap), the *last* timer set runs
its full sleep, its wake-up comes a little late behind the others', and the program ends.

The asyncio program notes a :class:`Marks` reading at each step of that path, with the time its
cyclic garbage collector had taken so far (``collector``), and sends them in its DONE line. The
runner makes them relative to its own start (both read ``CLOCK_MONOTONIC`` on Linux), and
:func:`breakdown` turns one run into a table whose seconds add up to the run's wall time.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from iolab.topics.c10k.collector import CollectorClock

if TYPE_CHECKING:
    import pandas as pd

# The marks the asyncio program notes, in order; each phase of the breakdown runs from one to the next.
MARKS = ("main", "created", "timers_set", "woken")
# The phases of the breakdown, in order, with what happens in each.
PHASES = (
    ("start-up", "the runner's launcher and the program start their interpreters and import"),
    ("creating tasks", "create_task per sleeper: a task, its coroutine, a context"),
    ("first steps", "each task's first step: asyncio.sleep makes a future and pushes a timer on the heap"),
    ("the sleep", "the last timer set waits its full sleep; the others' wake-ups run meanwhile"),
    ("late wake-up", "the last timer fires late, behind the wake-ups queued before it"),
    ("teardown", "DONE, asyncio.run's shutdown, the interpreter's exit, the runner seeing it"),
)


class Marks:
    """The program's side: when each step of the last sleeper's path was reached, and the collector's time by then."""

    def __init__(self, clock: CollectorClock) -> None:
        self.clock = clock
        self.readings: dict[str, tuple[float, float]] = {}
        self.note("main")

    def note(self, name: str) -> None:
        """Record ``name`` now: (``time.monotonic()``, seconds in the collector so far)."""
        self.readings[name] = (time.monotonic(), self.clock.seconds)

    def details(self) -> dict[str, Any]:
        """What the program adds to its DONE line."""
        return {"marks": {name: [round(t, 6), round(gc_s, 6)] for name, (t, gc_s) in self.readings.items()}}


def since(details: dict[str, Any] | None, start: float) -> dict[str, tuple[float, float]] | None:
    """The marks of a DONE line's ``details`` as (seconds since ``start``, collector seconds); None if it has none."""
    marks = (details or {}).get("marks")
    if not marks:
        return None
    return {name: (t - start, gc_s) for name, (t, gc_s) in marks.items()}


def breakdown(run: Any) -> "pd.DataFrame":
    """One row per phase of ``run`` (a :class:`~iolab.topics.c10k.runner.ProgramRun` of the asyncio program's
    ``sleep`` mode): ``phase``, ``seconds``, ``collector_s`` (of those seconds, in the cyclic collector)
    and ``what``. The seconds add up to ``run.wall_s``.

    ValueError for a run without marks (another runtime, another mode, or a run that did not finish).
    """
    import pandas as pd

    marks = run.marks
    if not marks or not set(MARKS) <= marks.keys() or run.wall_s is None:
        raise ValueError(
            f"a {run.runtime} {run.mode} run with status {run.status} has no marks: only the asyncio "
            "program's sleep mode notes them, and only when it finishes"
        )
    (t_main, gc_main), (t_created, gc_created), (t_timers, gc_timers), (t_woken, gc_woken) = (marks[m] for m in MARKS)
    seconds = (
        t_main,
        t_created - t_main,
        t_timers - t_created,
        run.seconds,
        t_woken - t_timers - run.seconds,
        run.wall_s - t_woken,
    )
    # The collector's clock starts in the program's first line: none is counted during start-up. The
    # collections of the sleep's window overlap it (they run during the other sleepers' wake-ups) and
    # lengthen the run only as far as they make the last wake-up late: they are listed with the
    # sleep, and the late wake-up's row shows what they did to the wall time.
    collector_s = (
        0.0,
        gc_created - gc_main,
        gc_timers - gc_created,
        gc_woken - gc_timers,
        0.0,
        max(0.0, (run.gc_s or 0.0) - gc_woken),  # gc_s is rounded to 0.1 ms: never below the last mark
    )
    return pd.DataFrame(
        [
            {"phase": phase, "seconds": s, "collector_s": gc_s, "what": what}
            for (phase, what), s, gc_s in zip(PHASES, seconds, collector_s)
        ]
    )
