"""Freeze a server for a while in the middle of a run: the stall that closed-loop benchmarks hide.

``SIGSTOP`` stops every process of the server's process group at once (the kernel, not the program,
does it, so no server can ignore it); ``SIGCONT`` lets them go on. Connections stay open and the
kernel keeps accepting and queueing requests meanwhile: to a client the server is simply very slow,
the way a garbage-collection pause, a swapped-out page or a noisy neighbour makes it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field


@dataclass
class Stall:
    """When the stall really began and ended (``time.monotonic()``), filled in as it happens."""

    after_s: float
    for_s: float
    stopped_at: float | None = None
    resumed_at: float | None = None
    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    @property
    def seconds(self) -> float:
        """How long the server was really stopped (0 if the stall never began)."""
        if self.stopped_at is None or self.resumed_at is None:
            return 0.0
        return self.resumed_at - self.stopped_at


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(os.getpgid(pid), sig)


@contextlib.contextmanager
def stalled(pid: int, after_s: float, for_s: float) -> Iterator[Stall]:
    """Stop ``pid``'s process group ``after_s`` seconds into the block, for ``for_s`` seconds.

    The group is always continued on the way out, also when the block fails or is interrupted: a
    server left stopped would hang every later cell (and the stop of the server itself, which
    needs it to run its SIGTERM handler).
    """
    stall = Stall(after_s, for_s)

    def run() -> None:
        if stall._cancel.wait(after_s):
            return
        stall.stopped_at = time.monotonic()
        _signal_group(pid, signal.SIGSTOP)
        stall._cancel.wait(for_s)
        _signal_group(pid, signal.SIGCONT)
        stall.resumed_at = time.monotonic()

    thread = threading.Thread(target=run, name=f"stall-{pid}", daemon=True)
    thread.start()
    try:
        yield stall
    finally:
        stall._cancel.set()
        thread.join()
        _signal_group(pid, signal.SIGCONT)
