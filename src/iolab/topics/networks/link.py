"""A netlab link's round-trip time, measured the way TCP pays it: the time ``connect()`` takes.

``connect()`` sends a SYN and returns when the SYN-ACK is back: one round trip, with no server
program involved (the kernel answers a SYN to a listening socket by itself). The listener lives in
the lab's server namespace, the connecting sockets in its client namespace.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import pandas as pd

from iolab.netlab import NetLab, available, open_netlab

T = TypeVar("T")


def connect_times_ms(lab: NetLab, samples: int) -> list[float]:
    """``samples`` connect() times, in ms, from the client namespace to a listener in the server's."""
    with lab.socket("server") as listener:
        listener.bind((lab.server_ip, 0))
        listener.listen(samples)
        address = (lab.server_ip, listener.getsockname()[1])
        times = []
        for _ in range(samples):
            with lab.socket("client") as sock:
                started = time.perf_counter()
                sock.connect(address)
                times.append((time.perf_counter() - started) * 1000)
                accepted, _ = listener.accept()  # not timed: it waits for the handshake's last ACK
                accepted.close()
        return times


def rtt_accuracy(lab: NetLab, rtts_ms: Sequence[float], samples: int = 20) -> pd.DataFrame:
    """One row per configured round trip: the median measured one, its spread, the error in %."""
    rows = []
    for rtt in rtts_ms:
        lab.set(delay_ms=rtt / 2, jitter_ms=0.0, loss=0.0)  # the delay is one way
        times = connect_times_ms(lab, samples)
        measured = statistics.median(times)
        rows.append({"configured_rtt_ms": rtt, "measured_rtt_ms": measured, "min_ms": min(times),
                     "max_ms": max(times), "error_pct": 100 * (measured - rtt) / rtt, "samples": samples})
    return pd.DataFrame(rows)


def in_lab(experiment: Callable[[NetLab], T], **link: Any) -> T | None:
    """``experiment(lab)`` in a fresh netlab (``link``: :func:`open_netlab`'s impairments), closed after.

    Where this machine cannot run a lab (not root, no ``ip``, no TUN device), print what is missing
    and return None: the notebook's cells then skip their plots and say so.
    """
    missing = available()
    if missing:
        print(f"skipped: {missing}")
        return None
    with open_netlab(**link) as lab:
        return experiment(lab)
