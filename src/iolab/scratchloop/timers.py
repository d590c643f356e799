"""Step 6: timers on a heap. ``sleep`` is a future that a timer, not a socket, sets.

A loop with timers must know, before it blocks in ``select``, how long it may block: until the
earliest timer is due. A heap (``heapq``) keeps the earliest timer at index 0, so that question costs
nothing and adding or removing a timer costs O(log n): 10,000 sleeping tasks are 10,000 heap entries,
not 10,000 threads. The sequence number breaks ties, so two timers due at the same instant run in
the order they were set (and callbacks are never compared).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable
from typing import Any

Callback = tuple[Callable[..., Any], tuple[Any, ...]]


class TimerHeap:
    """Callbacks due at given times (``time.monotonic()`` seconds), earliest first."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Callable[..., Any], tuple[Any, ...]]] = []
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._heap)

    def push(self, when: float, fn: Callable[..., Any], *args: Any) -> None:
        """Call ``fn(*args)`` at time ``when`` (once :meth:`pop_due` says so)."""
        heapq.heappush(self._heap, (when, next(self._sequence), fn, args))

    def timeout(self, now: float) -> float | None:
        """How long a loop may block before the next timer is due (None: no timer, block until I/O)."""
        if not self._heap:
            return None
        return max(0.0, self._heap[0][0] - now)

    def pop_due(self, now: float) -> list[Callback]:
        """The callbacks due at ``now``, in time order, removed from the heap."""
        due = []
        while self._heap and self._heap[0][0] <= now:
            _, _, fn, args = heapq.heappop(self._heap)
            due.append((fn, args))
        return due
