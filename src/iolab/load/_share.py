"""``Share``: one worker process's part of a load run, the spec the manager hands to each worker.

The manager (:mod:`iolab.load.manager`) splits a ``LoadSpec`` into shares, one per worker, and
starts each worker with its share (:mod:`iolab.load.worker`) through :mod:`iolab.kit.channel`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from iolab.kit.channel import Spec
from iolab.load.model import LoadSpec


@dataclass(frozen=True)
class Share(Spec):
    """One worker's part of a run: its slots, its rate and where its schedule starts."""

    ENTRY: ClassVar[str] = "iolab.load.worker"

    spec: LoadSpec
    index: int
    connections: int
    rate: float | None  # open loop: this worker's requests per second
    phase_s: float  # open loop: offset of its first send, so that the workers' schedules interleave
    max_requests: int | None
