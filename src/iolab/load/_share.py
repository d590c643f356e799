"""``Share``: one worker process's part of a load run, handed from the manager to the worker as JSON.

The manager (:mod:`iolab.load.manager`) splits a ``LoadSpec`` into shares, one per worker, and
starts each worker with its share as one command-line argument (:mod:`iolab.load.worker`).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass

from iolab.load.model import LoadSpec


@dataclass(frozen=True)
class Share:
    """One worker's part of a run: its slots, its rate and where its schedule starts."""

    spec: LoadSpec
    index: int
    connections: int
    rate: float | None  # open loop: this worker's requests per second
    phase_s: float  # open loop: offset of its first send, so that the workers' schedules interleave
    max_requests: int | None

    def to_json(self) -> str:
        """The share as one JSON argument."""
        return json.dumps(asdict(self) | {"spec": self.spec.to_dict()})

    @classmethod
    def from_json(cls, text: str) -> Share:
        """The share ``to_json`` wrote."""
        d = json.loads(text)
        return cls(**(d | {"spec": LoadSpec.from_dict(d["spec"])}))
