import array
import fcntl
import os
import termios
import time

import pytest

from iolab.topics.blocking_io import nonblocking
from iolab.kit import procfs
from iolab.kit.procs import open_fork


def unread(fd: int) -> int:
    """Bytes waiting in a pipe (FIONREAD)."""
    count = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, count)
    return count[0]


@pytest.fixture
def pipe():
    r, w = os.pipe()
    yield r, w
    for fd in (r, w):
        try:
            os.close(fd)
        except OSError:
            pass


def test_read_now_on_an_empty_nonblocking_pipe_returns_none_instead_of_waiting(pipe):
    r, w = pipe
    os.set_blocking(r, False)
    assert nonblocking.read_now(r, 100) is None
    os.write(w, b"abc")
    assert nonblocking.read_now(r, 100) == b"abc"  # fewer bytes than asked: what was there


def test_fill_ends_with_a_partial_write_then_eagain_at_the_pipe_capacity(pipe):
    r, w = pipe
    os.set_blocking(w, False)
    capacity = nonblocking.pipe_size(w)
    calls = nonblocking.fill(w, 10_000)
    assert list(calls.outcome.iloc[-2:]) == ["partial", "EAGAIN"]
    assert set(calls.outcome.iloc[:-2]) <= {"all"}
    # The pipe holds 16 pages; the last write is cut at a page edge, so it stops a little short of full.
    assert capacity - 10_000 < calls.total.iloc[-1] <= capacity


def test_fill_refuses_a_blocking_descriptor(pipe):
    with pytest.raises(ValueError, match="blocking mode"):
        nonblocking.fill(pipe[1], 10)


def test_write_all_delivers_every_byte_through_a_full_pipe_to_a_reader(pipe):
    r, w = pipe
    result_r, result_w = os.pipe()
    data = os.urandom(1 << 20)  # 16 times the pipe: the writer must meet EAGAIN and wait

    writer = os.getpid()

    def reader():
        os.close(w)
        # Read nothing until the writer has filled the pipe and gone to sleep waiting for room:
        # otherwise a reader on the other core can keep up, and the writer never meets EAGAIN.
        deadline = time.monotonic() + 10
        while not (unread(r) and procfs.status(writer).state == "S") and time.monotonic() < deadline:
            time.sleep(0.001)
        os.write(result_w, nonblocking.drain(r).to_bytes(8, "little"))

    try:
        with open_fork(reader) as child:
            os.close(r)
            os.set_blocking(w, False)
            report = nonblocking.write_all(w, data)
            os.close(w)
            got = int.from_bytes(os.read(result_r, 8), "little")
            assert child.wait(timeout=10) == 0
    finally:
        os.close(result_r)
        os.close(result_w)
    assert report.bytes_written == got == len(data)
    assert report.eagain >= 1 and report.waits == report.eagain
    assert report.writes >= len(data) // nonblocking.DEFAULT_PIPE_BYTES


def test_write_all_gives_up_when_nobody_reads(pipe):
    r, w = pipe
    os.set_blocking(w, False)
    with pytest.raises(TimeoutError, match="stayed full"):
        nonblocking.write_all(w, b"x" * (1 << 20), timeout=0.2)
