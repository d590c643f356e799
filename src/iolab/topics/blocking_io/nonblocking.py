"""Non-blocking descriptors: EAGAIN, short reads and writes, and the loop that must handle them.

A descriptor in blocking mode (the default) makes ``read()`` wait until at least one byte is there
and ``write()`` wait until every byte has been copied into the kernel's buffer. With ``O_NONBLOCK``
neither call waits: ``read()`` on an empty pipe fails with EAGAIN (Python raises
``BlockingIOError``), and ``write()`` copies what fits in the buffer, returns that count, and fails
with EAGAIN once nothing fits. Code that uses non-blocking descriptors must therefore loop: write
the rest, and when the kernel says "again", wait for the descriptor to become writable, which is
what :func:`write_all` does (and what ``socket.sendall`` does inside CPython).
"""

from __future__ import annotations

import fcntl
import os
import selectors
import time
from dataclasses import dataclass

import pandas as pd

# Pipes start with 16 pages of buffer (64 KiB on 4 KiB pages); F_SETPIPE_SZ can grow one up to
# /proc/sys/fs/pipe-max-size (1 MiB by default).
DEFAULT_PIPE_BYTES = 64 * 1024
# A bound on every loop here: a writer that cannot make progress for this long gives up.
WRITE_TIMEOUT_S = 10.0


def pipe_size(fd: int) -> int:
    """The capacity of the pipe ``fd`` belongs to, in bytes (``F_GETPIPE_SZ``)."""
    return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)


def read_now(fd: int, asked: int) -> bytes | None:
    """One ``read()`` on a non-blocking ``fd``: the bytes there (maybe fewer than asked), or None on EAGAIN."""
    try:
        return os.read(fd, asked)
    except BlockingIOError:
        return None


def fill(fd: int, chunk_bytes: int, max_calls: int = 10_000) -> pd.DataFrame:
    """``write()`` ``chunk_bytes`` at a time to a non-blocking ``fd`` until EAGAIN; one row per call.

    Columns: ``call``, ``asked``, ``returned`` (bytes the kernel took; 0 for EAGAIN),
    ``outcome`` ("all", "partial" or "EAGAIN"), ``total`` (bytes written so far).
    """
    if os.get_blocking(fd):
        raise ValueError(f"fd {fd} is in blocking mode: write() would wait instead of returning; os.set_blocking(fd, False)")
    chunk = b"x" * chunk_bytes
    rows, total = [], 0
    for call in range(1, max_calls + 1):
        try:
            n = os.write(fd, chunk)
        except BlockingIOError:
            rows.append({"call": call, "asked": chunk_bytes, "returned": 0, "outcome": "EAGAIN", "total": total})
            break
        total += n
        outcome = "all" if n == chunk_bytes else "partial"
        rows.append({"call": call, "asked": chunk_bytes, "returned": n, "outcome": outcome, "total": total})
    else:
        raise RuntimeError(f"{max_calls} writes of {chunk_bytes} bytes never filled fd {fd}: is anybody reading it?")
    return pd.DataFrame(rows)


@dataclass(frozen=True)
class WriteReport:
    """What it took :func:`write_all` to get every byte out."""

    bytes_written: int
    writes: int  # write() calls that copied something
    partial: int  # of those, how many copied less than they were given
    eagain: int  # write() calls that failed with EAGAIN: the buffer was full
    waits: int  # times the loop blocked in select() until the descriptor was writable
    seconds: float


def write_all(fd: int, data: bytes, timeout: float = WRITE_TIMEOUT_S) -> WriteReport:
    """Write every byte of ``data`` to a non-blocking ``fd``, handling short writes and EAGAIN.

    The loop has three cases: the kernel took everything (done), took part (write the rest), or
    took nothing (EAGAIN: block in select() until the reader has made room, then try again).
    Spinning on EAGAIN instead of blocking would burn a core while the reader catches up.
    """
    view = memoryview(data)
    sent = writes = partial = eagain = waits = 0
    start = time.perf_counter()
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_WRITE)
        while sent < len(view):
            try:
                n = os.write(fd, view[sent:])
            except BlockingIOError:
                eagain += 1
                left = deadline - time.monotonic()
                if left <= 0 or not sel.select(left):
                    raise TimeoutError(
                        f"wrote {sent} of {len(view)} bytes; fd {fd} stayed full for {timeout:g} s (is the reader gone?)"
                    ) from None
                waits += 1
                continue
            writes += 1
            partial += n < len(view) - sent
            sent += n
    return WriteReport(sent, writes, partial, eagain, waits, time.perf_counter() - start)


def drain(fd: int, chunk_bytes: int = DEFAULT_PIPE_BYTES) -> int:
    """Read a blocking ``fd`` until end-of-file; the number of bytes read."""
    total = 0
    while chunk := os.read(fd, chunk_bytes):
        total += len(chunk)
    return total

