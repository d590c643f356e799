"""A slow output stream shared by worker threads: a coarse lock around it, or a queue to its owner.

Source 001's Java example: workers write events to one output stream under a lock
(``synchronized (outputStreamLock) { outputStream.write(event); }``), so while one writes, the others
wait; the fix gives the stream one owning thread and the workers a queue to it. Here the stream is a
file on disk and every write is made durable (``os.write`` then ``os.fsync``): a real device wait,
during which the writing thread holds no GIL, as it would on a slow socket.

Three designs, each in :data:`DESIGNS`:

- ``coarse lock``: each worker takes the lock, writes and syncs its event, releases the lock;
- ``queue to owner``: workers put events on a queue; one thread writes and syncs each in turn;
- ``queue + group commit``: the owner takes every event waiting and writes them with one sync.

A worker's own work per event is real and small: it serialises the event to JSON.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from iolab.kit.cache import cache_dir
from iolab.topics.locks.harness import RUN_TIMEOUT_S, run_threads, run_with_owner

PAYLOAD = "x" * 100  # an event about the size of a log line


class DurableFile:
    """An append-only file whose every write is on the device before ``write`` returns."""

    def __init__(self, path: Path) -> None:
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        self.syncs = 0

    def write(self, data: bytes) -> None:
        """Write ``data`` and wait for the device (fsync)."""
        os.write(self.fd, data)
        os.fsync(self.fd)
        self.syncs += 1

    def close(self) -> None:
        """Close the file."""
        os.close(self.fd)


@contextlib.contextmanager
def open_durable_file(directory: Path | None = None) -> Iterator[DurableFile]:
    """A :class:`DurableFile` in a temporary folder under ``directory`` (default: the kit's cache folder).

    The default is on the reader's disk: where /tmp is a tmpfs in memory, fsync costs nothing.
    """
    with tempfile.TemporaryDirectory(prefix="iolab-stream-", dir=directory or cache_dir()) as tmp:
        stream = DurableFile(Path(tmp) / "events.log")
        try:
            yield stream
        finally:
            stream.close()


def fsync_us(directory: Path | None = None, writes: int = 50) -> float:
    """Median microseconds of one small write + fsync in ``directory``: how slow the stream is here."""
    times = []
    with open_durable_file(directory) as stream:
        for _ in range(writes):
            began = time.perf_counter()
            stream.write(b"x" * 120)
            times.append(time.perf_counter() - began)
    return statistics.median(times) * 1e6


def make_event(worker: int, seq: int) -> bytes:
    """One event, serialised: the worker's own work per event."""
    return (json.dumps({"worker": worker, "seq": seq, "at": time.time(), "payload": PAYLOAD}) + "\n").encode()


@dataclass
class WorkerTotals:
    """What the workers of one run report, summed over workers (seconds)."""

    working_s: float = 0.0  # from a worker's start to its last hand-off
    handoff_s: float = 0.0  # in the hand-off: waiting for the lock, writing under it, or putting
    lock_wait_s: float = 0.0  # waiting for the lock only
    backlog: int = 0  # most events waiting for the owner at once
    lock: threading.Lock = field(default_factory=threading.Lock)

    def add(self, working: float, handoff: float, lock_wait: float) -> None:
        """Add one worker's figures."""
        with self.lock:
            self.working_s += working
            self.handoff_s += handoff
            self.lock_wait_s += lock_wait


def coarse_lock(stream: DurableFile, workers: int, events: int, tally: WorkerTotals) -> float:
    """Workers write under one lock; seconds until the last event is written (= handed off)."""
    stream_lock = threading.Lock()

    def work(worker: int) -> None:
        handoff = lock_wait = 0.0
        began = time.perf_counter()
        for seq in range(events):
            event = make_event(worker, seq)
            asked = time.perf_counter()
            with stream_lock:
                got = time.perf_counter()
                stream.write(event)
            handoff += time.perf_counter() - asked
            lock_wait += got - asked
        tally.add(time.perf_counter() - began, handoff, lock_wait)

    ids = iter(range(workers))
    return run_threads(lambda: work(next(ids)), workers)


def _owned(stream: DurableFile, workers: int, events: int, tally: WorkerTotals, group: bool) -> float:
    """Workers put events on a queue; one thread owns the stream. Seconds until all are written."""
    inbox: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()

    def own() -> None:
        finished = 0
        while finished < workers:
            batch = [inbox.get(timeout=RUN_TIMEOUT_S)]
            tally.backlog = max(tally.backlog, 1 + inbox.qsize())
            while group and not inbox.empty():  # group commit: everything already waiting, one sync
                batch.append(inbox.get_nowait())
            finished += batch.count(None)
            if data := b"".join(event for event in batch if event is not None):
                stream.write(data)

    def work(worker: int) -> None:
        handoff = 0.0
        began = time.perf_counter()
        for seq in range(events):
            event = make_event(worker, seq)
            asked = time.perf_counter()
            inbox.put(event)
            handoff += time.perf_counter() - asked
        tally.add(time.perf_counter() - began, handoff, 0.0)

    ids = iter(range(workers))
    return run_with_owner(own, inbox, lambda: work(next(ids)), workers)


def queue_to_owner(stream: DurableFile, workers: int, events: int, tally: WorkerTotals) -> float:
    """The owner writes and syncs one event at a time."""
    return _owned(stream, workers, events, tally, group=False)


def group_commit(stream: DurableFile, workers: int, events: int, tally: WorkerTotals) -> float:
    """The owner writes every waiting event with one sync."""
    return _owned(stream, workers, events, tally, group=True)


DESIGNS: dict[str, Callable[[DurableFile, int, int, WorkerTotals], float]] = {
    "coarse lock": coarse_lock,
    "queue to owner": queue_to_owner,
    "queue + group commit": group_commit,
}


def stream_experiment(
    workers: list[int], events: int, repeats: int = 1, directory: Path | None = None,
    designs: list[str] | None = None,
) -> pd.DataFrame:
    """Every design with each number of workers, ``events`` events per worker.

    One row per run: design, workers, events (all workers), handoff_per_s (events the workers
    handed off per second of their own time: their throughput), written_per_s (events on disk per
    second, until the last), blocked_pct (share of the workers' time spent handing off),
    lock_wait_pct (of which waiting for the lock), syncs, max_backlog, repeat.
    """
    rows = []
    with open_durable_file(directory) as stream:
        for repeat in range(repeats):
            # Designs side by side for each worker count: a disk's sync time drifts with what else
            # uses it, and designs compared within seconds of each other see the same disk.
            for n_workers in workers:
                for design in designs or list(DESIGNS):
                    tally, syncs_before = WorkerTotals(), stream.syncs
                    written_s = DESIGNS[design](stream, n_workers, events, tally)
                    total = n_workers * events
                    rows.append({
                        "design": design, "workers": n_workers, "events": total,
                        "handoff_per_s": total / (tally.working_s / n_workers),
                        "written_per_s": total / written_s,
                        "blocked_pct": 100 * tally.handoff_s / tally.working_s,
                        "lock_wait_pct": 100 * tally.lock_wait_s / tally.working_s,
                        "syncs": stream.syncs - syncs_before, "max_backlog": tally.backlog, "repeat": repeat,
                    })
    return pd.DataFrame(rows)
