"""CPython's cyclic garbage collector inside a sleepers program: the time it took, or switched off.

CPython frees most objects by reference counting; the cyclic collector is the second mechanism, for
objects that refer to each other. It runs when allocations outnumber deallocations by a threshold
(``gc.get_threshold()``), and each run walks every tracked object of the generations it collects.
Starting 100,000 tasks allocates hundreds of thousands of tracked objects that all stay alive, so it
runs again and again over a growing heap and finds nothing to free. ``gc.callbacks`` tells us how
long that took; ``gc.disable()`` shows what the program costs without it.
"""

from __future__ import annotations

import gc
import time
from typing import Any


class CollectorClock:
    """Adds up the time CPython spends in cyclic garbage collections, per generation."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = [0, 0, 0]  # generation 0, 1, 2
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._began
            self.collections[info["generation"]] += 1

    def readings(self) -> dict[str, Any]:
        """What the program reports in its DONE line."""
        return {"gc_s": round(self.seconds, 4), "gc_collections": self.collections, "gc_enabled": gc.isenabled()}


def start(enabled: bool) -> CollectorClock:
    """Switch the collector on or off for the rest of the program, and start timing its runs."""
    if enabled:
        gc.enable()
    else:
        gc.disable()
    clock = CollectorClock()
    gc.callbacks.append(clock)
    return clock
