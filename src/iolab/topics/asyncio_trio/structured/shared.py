"""What both versions of the service share: the jobs, the event log, the failure, and their diff."""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import time
from dataclasses import dataclass, field
from types import ModuleType

import pandas as pd


class UpstreamError(Exception):
    """An upstream answered with an error (a job with ``fails=True``)."""


@dataclass(frozen=True)
class Job:
    """A call to an upstream that takes ``seconds`` to answer, with ``name``, or to fail."""

    name: str
    seconds: float
    fails: bool = False


@dataclass
class Log:
    """A record of what each job did and when: started, done, failed or cancelled."""

    started: float = field(default_factory=time.perf_counter)
    rows: list[tuple[float, str, str]] = field(default_factory=list)

    def add(self, job: str, event: str) -> None:
        """Note ``event`` for ``job`` now."""
        self.rows.append(((time.perf_counter() - self.started) * 1000, job, event))

    def frame(self) -> pd.DataFrame:
        """One row per event: at_ms (since the log was made), job, event."""
        return pd.DataFrame(self.rows, columns=["at_ms", "job", "event"])

    def outcome(self) -> dict[str, str]:
        """Each job's last event: how it ended (or "started" if it never did)."""
        return {job: event for _, job, event in self.rows}


@dataclass(frozen=True)
class Sample:
    """One item sent through the pipeline: when it was sent, how long the producer waited to send it,
    the buffer's depth right after, and how long the item then sat in the buffer until it was taken."""

    at_ms: float
    item: int
    waited_ms: float
    depth: int
    queued_ms: float = math.nan


def with_queue_times(samples: list[Sample], taken_ms: dict[int, float]) -> list[Sample]:
    """``samples`` with ``queued_ms`` filled in from when the consumer took each item (ms, same clock)."""
    return [dataclasses.replace(s, queued_ms=max(0.0, taken_ms[s.item] - s.at_ms)) for s in samples]


def diff(left: ModuleType, right: ModuleType, context: int = 1) -> str:
    """The unified diff of two modules' source, from the first function on (the docstrings differ)."""

    def body(module: ModuleType) -> list[str]:
        lines = inspect.getsource(module).splitlines(keepends=True)
        first = next(i for i, line in enumerate(lines) if line.startswith(("async def", "def")))
        return lines[first:]

    return "".join(difflib.unified_diff(body(left), body(right), left.__name__, right.__name__, n=context))
