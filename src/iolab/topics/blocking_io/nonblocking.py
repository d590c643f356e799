"""Non-blocking descriptors: EAGAIN, short reads and writes, and the loop that must handle them.

A descriptor in blocking mode (the default) makes ``read()`` wait until at least one byte is there
and ``write()`` wait until every byte has been copied into the kernel's buffer. With ``O_NONBLOCK``
neither call waits on a pipe, socket or terminal: ``read()`` on an empty pipe fails with EAGAIN
(Python raises ``BlockingIOError``), and ``write()`` never waits for room in the buffer either
(:func:`fill` records what it does instead). Code that uses non-blocking descriptors must therefore
loop until every byte is out, and wait for the descriptor to become writable when the kernel says
"again", which is what :func:`write_all` does (and what ``socket.sendall`` does inside CPython).

What ``O_NONBLOCK`` does to a ``read()`` of a regular file whose data is on disk, not in memory, is
what :func:`read_file`, :func:`file_reads` and :func:`reader_states` measure. Whether a file's page is
in the page cache, :func:`in_page_cache` asks ``mincore(2)``, which only looks: the per-call
``RWF_NOWAIT`` of ``preadv2`` (Linux 4.14+) refuses to wait for an uncached page, but its miss
starts the readahead, which a fast disk can finish within the same call, and the read then succeeds.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import mmap
import os
import selectors
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from iolab.kit import platforms
from iolab.kit.procs import open_fork
from iolab.topics.blocking_io import watch

# Pipes start with 16 pages of buffer (64 KiB on 4 KiB pages); F_SETPIPE_SZ can grow one up to
# /proc/sys/fs/pipe-max-size (1 MiB by default).
DEFAULT_PIPE_BYTES = 64 * 1024
# A bound on every loop here: a writer (or reader) that cannot make progress for this long gives up.
WRITE_TIMEOUT_S = 10.0
MIB = 2**20


def pipe_size(fd: int) -> int | None:
    """The capacity of the pipe ``fd`` belongs to, in bytes (``F_GETPIPE_SZ``); None where the system does not say (macOS)."""
    if platforms.missing("pipe-size") is not None:
        return None
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
    ``outcome`` ("EAGAIN", "all" or "partial"), ``total`` (bytes written so far).
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


# --- regular files through an O_NONBLOCK descriptor -----------------------------------------------


@contextlib.contextmanager
def open_scratch_file(mib: int, folder: Path | None = None) -> Iterator[Path]:
    """A file of ``mib`` MiB of random bytes, on disk (fsync'ed) in ``folder``; deleted on leaving.

    ``folder`` must be on a disk: on a tmpfs (``/tmp`` on some systems) the page cache *is* the
    file, and :func:`evict` cannot push it out.
    """
    block = os.urandom(MIB)
    with tempfile.TemporaryDirectory(dir=folder, prefix="iolab-file-") as directory:
        path = Path(directory) / "scratch.bin"
        with open(path, "wb") as f:
            for _ in range(mib):
                f.write(block)
            f.flush()
            os.fsync(f.fileno())
        yield path


def in_page_cache(path: Path) -> bool | None:
    """Whether the first page of ``path`` is in the page cache, asked with mincore(2); None where it cannot be asked.

    Not with a ``preadv2(RWF_NOWAIT)`` read: a miss starts the readahead, which on this course's VM (a disk
    the host caches) finished within that call in about one question in six, so an evicted file read "cached".
    mincore looks at a mapping of the page without reading it (Linux, macOS).
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
        libc.mincore.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p]
        libc.munmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
    except (OSError, AttributeError):  # no C library to ask (Windows)
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        if os.fstat(fd).st_size == 0:
            return None
        address = libc.mmap(None, mmap.PAGESIZE, mmap.PROT_READ, mmap.MAP_SHARED, fd, 0)
        if address in (None, ctypes.c_void_p(-1).value):
            return None
        try:
            resident = (ctypes.c_ubyte * 1)()
            if libc.mincore(address, mmap.PAGESIZE, resident) != 0:
                return None
            return bool(resident[0] & 1)
        finally:
            libc.munmap(address, mmap.PAGESIZE)
    finally:
        os.close(fd)


def evict(path: Path) -> None:
    """Drop ``path``'s pages from the page cache (fsync, then POSIX_FADV_DONTNEED), so its next read goes to disk.

    macOS has no posix_fadvise: :class:`~iolab.kit.platforms.FacilityMissing`, whose message is the cell's note.
    """
    platforms.require("fadvise")
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)  # dirty pages cannot be dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


@dataclass(frozen=True)
class FileRead:
    """What it took :func:`read_file` to read a regular file to the end through an O_NONBLOCK descriptor."""

    cached_at_start: bool | None  # the first page was in the page cache (None: could not ask)
    bytes_read: int
    reads: int  # read() calls that returned data
    short: int  # of those, how many returned less than asked (end-of-file excepted)
    eagain: int  # read() calls that failed with EAGAIN
    seconds: float
    slowest_read_ms: float


def read_file(path: Path, chunk_bytes: int = MIB, timeout: float = WRITE_TIMEOUT_S) -> FileRead:
    """Read ``path`` to end-of-file, ``chunk_bytes`` per read(), through a descriptor opened with O_NONBLOCK."""
    cached, size = in_page_cache(path), path.stat().st_size
    reads = short = eagain = total = 0
    slowest = 0.0
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    try:
        start = time.perf_counter()
        while True:
            t = time.perf_counter()
            try:
                data = os.read(fd, chunk_bytes)
            except BlockingIOError:  # counted, and bounded, should the kernel say EAGAIN
                eagain += 1
                if time.perf_counter() - start > timeout:
                    raise TimeoutError(f"{path}: read() kept failing with EAGAIN for {timeout:g} s") from None
                continue
            slowest = max(slowest, time.perf_counter() - t)
            if not data:
                break
            reads += 1
            total += len(data)
            short += len(data) < min(chunk_bytes, size - (total - len(data)))
        seconds = time.perf_counter() - start
    finally:
        os.close(fd)
    return FileRead(cached, total, reads, short, eagain, seconds, slowest * 1000)


def file_reads(path: Path, repeats: int = 3, chunk_bytes: int = MIB) -> pd.DataFrame:
    """:func:`read_file` ``repeats`` times after :func:`evict` and as many times from the page cache; one row each.

    Columns: ``cache`` ("evicted" or "cached"), ``repeat``, the fields of :class:`FileRead`, ``mib_per_s``.
    """
    rows = []
    for repeat in range(repeats):
        evict(path)
        for cache in ("evicted", "cached"):  # the evicted read is what fills the cache for the second
            result = read_file(path, chunk_bytes)
            rows.append({"cache": cache, "repeat": repeat, **asdict(result),
                         "mib_per_s": result.bytes_read / MIB / result.seconds})
    return pd.DataFrame(rows)


def reader_states(path: Path) -> pd.DataFrame:
    """The states of a child reading ``path`` with :func:`read_file`, once evicted, once cached; one row per state seen.

    Columns: ``cache``, ``state`` (one letter), ``readings`` (of ``/proc``, as fast as it can be read),
    ``share`` (of that run's readings).
    """
    rows = []
    for cache in ("evicted", "cached"):
        if cache == "evicted":
            evict(path)
        with open_fork(read_file, path) as reader:
            counts = watch.count_states(reader.pid)
        rows += [{"cache": cache, "state": state, "readings": n, "share": n / sum(counts.values())}
                 for state, n in sorted(counts.items())]
    return pd.DataFrame(rows, columns=["cache", "state", "readings", "share"])
