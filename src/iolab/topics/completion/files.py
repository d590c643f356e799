"""Random 4 KiB reads from a file, four ways: one thread, a thread pool, io_uring, and fio.

Chapter 2 showed that a read from a regular file blocks (state ``D``) whatever ``O_NONBLOCK``
says. Here we measure what each answer to that costs: one blocking thread (:func:`read_blocking`),
a pool of threads as ``asyncio.to_thread`` uses (:func:`read_threads`), io_uring with ``depth``
reads in flight (:func:`read_uring`), and fio's io_uring engine as the reference (:func:`read_fio`).
Each stops after ``count`` reads or ``seconds``, whichever comes first (fio too: it is given
``--io_size`` as well as ``--number_ios``), and returns :class:`Reads`.

The reads bypass the page cache (``O_DIRECT``): otherwise a file that fits in memory is read from
memory after the first pass, and we would measure memcpy, not the device. A file bigger than the
machine's memory would do too, but it would take minutes to write and gigabytes of disk.
``O_DIRECT`` asks two things: the buffer's address, its length and the offset aligned (to the
device's logical block, 512 bytes, or a page to be safe) and a filesystem that really reads the device:
tmpfs accepts the flag (since Linux 6.6) but still serves from memory, so :func:`direct_io_problem`
refuses it. The file is written with real bytes: a sparse file's holes are never read from disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import errno
import json
import os
import random
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iolab.kit.cache import cache_dir
from iolab.kit.procs import open_process
from iolab.kit.scale import Scale
from iolab.topics.completion import support

BLOCK = 4096
# A page: safe for O_DIRECT on common devices and filesystems (most need 512 bytes). open(2) says the
# rules vary by filesystem and kernel; since Linux 6.1 statx(STATX_DIOALIGN) reports them.
ALIGN = 4096
# Filesystems that accept O_DIRECT but answer from memory: reads there never reach a device.
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs", "devtmpfs", "hugetlbfs"})
FIO_SLACK_S = 30.0  # fio stops itself at `seconds`; this only catches a hung fio


@dataclass(frozen=True)
class Reads:
    """What a run of random reads did: how many, how fast, and the latency of each read."""

    way: str
    depth: int  # reads in flight at once: 1 for one thread, N for N threads or a queue depth of N
    reads: int
    seconds: float
    p50_us: float  # from the read's hand-over to the kernel (or its call, for a blocking read) to its completion
    p99_us: float
    held_us: float = 0.0  # mean time a read waited, prepared, in the program before it was handed over

    @property
    def iops(self) -> float:
        """Reads per second."""
        return self.reads / self.seconds if self.seconds > 0 else 0.0


def file_size(scale: Scale) -> int:
    """Bytes of the test file: big enough that random reads rarely hit the same block twice."""
    return scale.pick(256, 1024) << 20


def filesystem_type(path: Path) -> str:
    """The type of the filesystem that holds ``path`` ("ext4", "tmpfs"...), from /proc/self/mountinfo."""
    target, best = os.path.realpath(path), ("", "?")
    with open("/proc/self/mountinfo") as mounts:
        for line in mounts:
            fields = line.split()
            # mount point is field 5; the type follows the " - " separator
            point, kind = fields[4], fields[fields.index("-") + 1]
            inside = target == point or target.startswith(point.rstrip("/") + "/")
            if inside and len(point) >= len(best[0]):
                best = (point, kind)
    return best[1]


def _sys_text(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def on_virtual_machine() -> bool:
    """Whether this Linux runs under a hypervisor (the CPU's ``hypervisor`` flag in /proc/cpuinfo)."""
    return any(line.startswith("flags") and " hypervisor" in line for line in _sys_text(Path("/proc/cpuinfo")).split("\n"))


def describe_disk(directory: Path | None = None) -> str:
    """One line on the block device under ``directory`` (the kit's cache folder): name, driver, model,
    the kernel's rotational flag and I/O scheduler, and whether the machine is virtual.

    On a virtual machine the "device" is a program on the host: the driver (virtio_blk, nvme...) says
    what the guest sees, not what the host's disk is.
    """
    folder = Path(directory) if directory is not None else cache_dir()
    machine = "a virtual machine (the CPU reports a hypervisor)" if on_virtual_machine() else "no hypervisor reported"
    dev = os.stat(folder).st_dev
    node = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not node.exists():
        return f"{filesystem_type(folder)} on no block device the kernel lists ({os.major(dev)}:{os.minor(dev)}); {machine}"
    disk = node.resolve()
    if (disk / "partition").exists():  # a partition's queue and driver are its disk's
        disk = disk.parent
    driver = os.path.basename(os.path.realpath(disk / "device" / "driver")) if (disk / "device" / "driver").exists() else "?"
    model = _sys_text(disk / "device" / "model") or "no model given"
    scheduler = _sys_text(disk / "queue" / "scheduler")
    chosen = scheduler[scheduler.find("[") + 1:scheduler.find("]")] if "[" in scheduler else scheduler or "?"
    rotational = {"0": "non-rotational", "1": "rotational"}.get(_sys_text(disk / "queue" / "rotational"), "rotational flag ?")
    return (f"{filesystem_type(folder)} on {disk.name} (driver {driver}, {model}, {rotational} by the kernel's flag, "
            f"scheduler {chosen}); {machine}")


def direct_io_problem(directory: Path) -> str | None:
    """Why O_DIRECT reads in ``directory`` would not measure a device, or None if they would."""
    kind = filesystem_type(directory)
    if kind in MEMORY_FILESYSTEMS:
        return f"{directory} is on {kind}, which serves O_DIRECT reads from memory: use a folder on a disk"
    probe = directory / f".odirect-{os.getpid()}"
    try:
        probe.write_bytes(b"\0" * BLOCK)
        fd = os.open(probe, os.O_RDONLY | os.O_DIRECT)
        try:
            os.preadv(fd, [aligned_buffer(BLOCK)], 0)
        finally:
            os.close(fd)
    except OSError as exc:
        return f"{directory} ({kind}) does not take O_DIRECT reads: {exc}"
    finally:
        probe.unlink(missing_ok=True)
    return None


def aligned_buffer(size: int = BLOCK) -> bytearray:
    """A bytearray of ``size`` bytes whose data starts on an ALIGN boundary, as O_DIRECT needs.

    The io_uring binding takes only a bytearray (not an mmap or a memoryview), and a bytearray's
    memory comes from malloc, aligned to 16 bytes. Deleting from the front of a bytearray moves
    its start without copying (CPython), so we allocate ALIGN - 1 bytes more and cut to a boundary.
    """
    data = bytearray(size + ALIGN - 1)
    start = ctypes.addressof((ctypes.c_char * len(data)).from_buffer(data))
    del data[: -start % ALIGN]
    del data[size:]
    address = ctypes.addressof((ctypes.c_char * len(data)).from_buffer(data))
    if address % ALIGN:  # another Python may copy on delete: say so rather than fail with EINVAL
        raise RuntimeError(f"could not align a bytearray to {ALIGN} bytes on this Python")
    return data


@contextlib.contextmanager
def open_test_file(size: int, directory: Path | None = None) -> Iterator[Path]:
    """A file of ``size`` bytes of real data in ``directory`` (the kit's cache folder), removed on exit."""
    folder = Path(directory) if directory is not None else cache_dir()
    if (problem := direct_io_problem(folder)) is not None:
        raise RuntimeError(problem)
    fd, name = tempfile.mkstemp(prefix="reads-", suffix=".dat", dir=folder)  # not one per pid: an abandoned block's
    path = Path(name)  # cleanup, run later by the garbage collector, removed a later block's file
    try:
        with open(fd, "wb") as out:
            for _ in range(max(1, size >> 20)):
                out.write(os.urandom(1 << 20))  # random, so no layer below can compress or dedupe it
            out.flush()
            os.fsync(out.fileno())  # on the device before we time reads from it
        yield path
    finally:
        path.unlink(missing_ok=True)


def _offsets(path: Path, seed: int) -> Iterator[int]:
    """Endless random block-aligned offsets in the file (the same sequence for the same seed)."""
    blocks = os.path.getsize(path) // BLOCK
    rng = random.Random(seed)
    while True:
        yield rng.randrange(blocks) * BLOCK


def _result(way: str, depth: int, latencies_ns: list[int], seconds: float, held_ns: list[int] | None = None) -> Reads:
    p50, p99 = np.percentile(latencies_ns, [50, 99]) / 1000 if latencies_ns else (0.0, 0.0)
    held = float(np.mean(held_ns)) / 1000 if held_ns else 0.0
    return Reads(way, depth, len(latencies_ns), seconds, float(p50), float(p99), held)


def _open(path: Path, direct: bool) -> int:
    """A descriptor to read ``path``: with O_DIRECT (to the device), or through the page cache."""
    return os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))


def warm(path: Path) -> None:
    """Read all of ``path`` once, so that reads through the page cache find every block there."""
    with open(path, "rb", buffering=0) as file:
        while file.read(1 << 20):
            pass


def read_blocking(path: Path, count: int, seconds: float, seed: int = 0, *, direct: bool = True) -> Reads:
    """``count`` random reads (or ``seconds``' worth), one at a time with ``os.preadv`` in this thread."""
    buffer, offsets, latencies = aligned_buffer(), _offsets(path, seed), []
    fd = _open(path, direct)
    try:
        start = time.perf_counter_ns()
        deadline = start + int(seconds * 1e9)
        now = start
        while len(latencies) < count and now < deadline:
            os.preadv(fd, [buffer], next(offsets))
            latencies.append(time.perf_counter_ns() - now)
            now += latencies[-1]
    finally:
        os.close(fd)
    return _result("one thread", 1, latencies, (now - start) / 1e9)


async def _pool_reads(fd: int, path: Path, count: int, seconds: float, threads: int, seed: int) -> Reads:
    offsets, latencies = _offsets(path, seed), []
    loop = asyncio.get_running_loop()
    start = time.perf_counter_ns()
    deadline = start + int(seconds * 1e9)

    async def reader() -> None:
        buffer = aligned_buffer()  # one per task: the threads read at the same time
        while len(latencies) < count and (began := time.perf_counter_ns()) < deadline:
            await asyncio.to_thread(os.preadv, fd, [buffer], next(offsets))
            latencies.append(time.perf_counter_ns() - began)

    with ThreadPoolExecutor(max_workers=threads) as pool:
        # to_thread runs in the loop's default executor: make it a pool of exactly `threads`
        loop.set_default_executor(pool)
        await asyncio.gather(*(reader() for _ in range(threads)))
    return _result("thread pool", threads, latencies[:count], (time.perf_counter_ns() - start) / 1e9)


def read_threads(path: Path, count: int, seconds: float, threads: int, seed: int = 0, *, direct: bool = True) -> Reads:
    """Random reads from ``threads`` asyncio tasks, each awaiting ``asyncio.to_thread(os.preadv, ...)``."""
    fd = _open(path, direct)
    try:
        reads = _pool_reads(fd, path, count, seconds, threads, seed)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(reads)
        # A notebook's kernel already runs a loop in this thread: run ours in a thread of its own.
        with ThreadPoolExecutor(max_workers=1) as beside:
            return beside.submit(asyncio.run, reads).result()
    finally:
        os.close(fd)


def _init_ring(uring: object, ring: object, depth: int) -> None:
    """Set up ``ring`` for ``depth`` entries, with completions run only when we wait (as fio 3.33 and later do).

    DEFER_TASKRUN (Linux 6.1, with SINGLE_ISSUER) lets the kernel finish completions in our own
    io_uring_enter instead of interrupting the program for each one; older kernels refuse the flags
    with EINVAL, and then the ring works without them.
    """
    deferred = uring.IORING_SETUP_SINGLE_ISSUER | uring.IORING_SETUP_DEFER_TASKRUN  # type: ignore[attr-defined]
    try:
        uring.io_uring_queue_init(depth, ring, deferred)  # type: ignore[attr-defined]
    except OSError as exc:
        if exc.errno != errno.EINVAL:
            raise
        uring.io_uring_queue_init(depth, ring)  # type: ignore[attr-defined]


def read_uring(path: Path, count: int, seconds: float, depth: int, seed: int = 0, *,
               batch: bool = True, direct: bool = True) -> Reads:
    """Random reads through io_uring, ``depth`` in flight: one system call submits and waits per batch.

    Each turn fills every free slot with a read, then ``io_uring_submit_and_wait`` hands the new
    reads to the kernel and sleeps until at least one completes; all completions are then taken.
    With ``batch=False`` each read is handed over as soon as it is prepared, as fio does: a system
    call per read, each read on its way to the device at once rather than with its batch. A batch
    reaches the kernel only when Python has prepared its last read: ``held_us`` is how long a read
    waited for that, on average (about nothing for a call per read). A read's latency starts when it
    is handed over, as fio's does, so the two series and fio's time the same span.
    The binding holds Python's lock while it waits: other Python threads stop meanwhile.
    """
    support.require("files")
    import liburing as uring  # only here: the rest of the module works without the binding

    buffers = [aligned_buffer() for _ in range(depth)]  # slot i reads into buffers[i]
    began, prepared_at = [0] * depth, [0] * depth
    free, offsets, latencies, held = list(range(depth)), _offsets(path, seed), [], []
    ring, cqe = uring.Ring(), uring.Cqe()
    fd = _open(path, direct)
    _init_ring(uring, ring, depth)
    try:
        start = time.perf_counter_ns()
        deadline, issued = start + int(seconds * 1e9), 0
        now = start
        while True:
            waiting = []  # prepared this turn, not yet handed over
            while free and issued < count and now < deadline:
                slot = free.pop()
                sqe = uring.io_uring_get_sqe(ring)
                uring.io_uring_prep_read(sqe, fd, buffers[slot], next(offsets))
                sqe.user_data = slot
                prepared_at[slot] = time.perf_counter_ns()
                waiting.append(slot)
                issued += 1
                if not batch:
                    _handed_over(waiting, began, prepared_at, held)
                    uring.io_uring_submit(ring)
            if len(free) == depth:
                break
            _handed_over(waiting, began, prepared_at, held)  # the batch's clocks start at its one call
            uring.io_uring_submit_and_wait(ring, 1)
            now = time.perf_counter_ns()
            # CqeIter walks the completion ring (wrapping at its end); cqe[0] is the current entry
            taken = 0
            for _ in uring.CqeIter(ring, cqe):
                entry = cqe[0]
                if entry.res != BLOCK:  # .res raises OSError for an error
                    raise OSError(f"io_uring read returned {entry.res} bytes, not {BLOCK}")
                slot = entry.user_data
                latencies.append(now - began[slot])
                free.append(slot)
                taken += 1
            uring.io_uring_cq_advance(ring, taken)
    finally:
        uring.io_uring_queue_exit(ring)
        os.close(fd)
    return _result("io_uring (Python)", depth, latencies, (now - start) / 1e9, held)


def _handed_over(slots: list[int], began: list[int], prepared_at: list[int], held: list[int]) -> None:
    """Start the clocks of the reads in ``slots``, which are handed to the kernel now; note how long each waited."""
    now = time.perf_counter_ns()
    for slot in slots:
        began[slot] = now
        held.append(now - prepared_at[slot])
    slots.clear()


def fio_missing() -> str | None:
    """Why fio cannot run here (it is optional: Debian's package ``fio``), or None."""
    if shutil.which("fio") is None:
        return "fio is not installed (apt install fio): the reference series is left out"
    return support.unavailable("files")


def fio_version() -> str | None:
    """fio's version ("fio-3.33"), which decides what its io_uring engine does; None where fio is missing.

    From fio 3.33 on, its engine sets up the ring with COOP_TASKRUN, SINGLE_ISSUER and DEFER_TASKRUN
    (:func:`_init_ring` sets the last two; where the kernel refuses them it falls back to no flags, fio to
    COOP_TASKRUN); an older fio's line is a ring without them.
    """
    if (fio := shutil.which("fio")) is None:
        return None
    try:
        done = subprocess.run([fio, "--version"], capture_output=True, text=True, timeout=FIO_SLACK_S, check=True)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() or None


def fio_argv(path: Path, count: int, seconds: float, depth: int, direct: bool = True) -> list[str]:
    """fio's command line for the same reads: random 4 KiB, O_DIRECT (or cached), io_uring at ``depth``."""
    return [
        shutil.which("fio") or "fio", "--name=reads", f"--filename={path}", "--rw=randread",
        # --invalidate=0: fio drops the file's cached pages before a job unless told not to
        f"--bs={BLOCK}", f"--direct={int(direct)}", "--invalidate=0", "--ioengine=io_uring", f"--iodepth={depth}",
        # uniform random offsets, like ours (fio's default visits every block once per pass)
        "--norandommap", "--randrepeat=0", f"--number_ios={count}",
        f"--io_size={count * BLOCK}",  # --number_ios alone stops at the file's size (fio's HOWTO): one pass
        f"--runtime={max(1, round(seconds * 1000))}ms", "--lat_percentiles=1", "--percentile_list=50:99",
        "--output-format=json",
    ]


def read_fio(path: Path, count: int, seconds: float, depth: int, *, direct: bool = True) -> Reads | None:
    """fio's io_uring engine on the same reads; None if fio cannot run (:func:`fio_missing` says why)."""
    if fio_missing() is not None:
        return None
    report = path.with_name(f"{path.name}.fio.json")  # a file: fio's JSON is longer than the kept output
    try:
        with open_process([*fio_argv(path, count, seconds, depth, direct), f"--output={report}"]) as fio:
            if fio.wait(seconds + FIO_SLACK_S) != 0:
                raise RuntimeError(f"fio failed:\n{fio.tail(20)}")
        text = report.read_text()
    finally:
        report.unlink(missing_ok=True)
    read = json.loads(text[text.index("{"):])["jobs"][0]["read"]  # fio may print notes before it
    percentiles = read["lat_ns"]["percentile"]
    return Reads("fio io_uring", depth, int(read["total_ios"]), read["runtime"] / 1000,
                 percentiles["50.000000"] / 1000, percentiles["99.000000"] / 1000)
