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


# How much sooner a run ends with the collector off, in the words of the notebook's prediction pred-10-gc.
WITHOUT_COLLECTOR = ("later", "no sooner", "sooner, by more than the time spent in the collector",
                     "sooner, by at most the time spent in the collector")


def answers_allowed(saved_s: float, collector_s: float, margin_s: float) -> list[str]:
    """The words of ``WITHOUT_COLLECTOR`` that a pair of runs allows.

    ``saved_s`` is the wall time with the collector on minus that with it off, ``collector_s`` the time
    the first run spent in the collector, ``margin_s`` how far two runs of the same program differ by
    chance: an answer that holds once either figure moves by that much is allowed too.
    """
    later, no_sooner, by_more, by_at_most = WITHOUT_COLLECTOR
    allowed = {
        later: saved_s < margin_s,
        no_sooner: abs(saved_s) <= margin_s,
        by_more: saved_s > -margin_s and saved_s >= collector_s - margin_s,
        by_at_most: -margin_s <= saved_s <= collector_s + margin_s,
    }
    return [words for words, fits in allowed.items() if fits]
