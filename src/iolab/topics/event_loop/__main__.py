"""One measured run in a fresh process: ``python -m iolab.topics.event_loop MEASUREMENT_JSON``.

The argument is a :class:`~iolab.topics.event_loop.run.Measurement` (a :class:`~iolab.kit.channel.Spec`);
the child sends what it measured as its ``RESULT`` line. It is what :func:`~iolab.topics.event_loop.run.measure`
starts, so that no run inherits the memory or the descriptors of another. The word server is a child
of its own (:mod:`iolab.topics.event_loop.server`).

The command ``python -m iolab wordfreq`` builds the same specs from its flags and calls the same functions.
"""

from __future__ import annotations

import sys
from typing import Any

from iolab.kit import channel
from iolab.topics.event_loop.run import Measurement, measure_here


def run(spec: Measurement) -> dict[str, Any] | int:
    """Measure ``spec`` here; what it measured (an ``error`` key if it failed), or exit code 1 if a signal stopped it."""
    result = measure_here(spec)
    if result is None:
        print("stopped by a signal", file=sys.stderr)
        return 1
    return result


if __name__ == "__main__":
    channel.child_main(Measurement, run)
