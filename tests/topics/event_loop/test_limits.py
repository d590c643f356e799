"""The limits chapter 5 runs into on purpose: descriptors (its error says the same as every instrument's), and
threads under an address-space limit (the count ends with the limit's error, never with a hang)."""

import errno
import os

import pytest

from iolab.kit import machine, platforms
from iolab.topics.event_loop import limits


def test_emfile_becomes_a_descriptor_limit_naming_the_limit_and_what_to_raise_it_to(monkeypatch) -> None:
    monkeypatch.setattr(machine, "open_files_limit", lambda: (60, 1024))
    error = limits.descriptor_limit(100, 51, OSError(errno.EMFILE, os.strerror(errno.EMFILE)))
    assert isinstance(error, machine.DescriptorLimit)
    message = str(error)
    assert message.startswith("connection 52 of 100 failed: Too many open files (errno 24).")
    assert "its limit (ulimit -n) allows 60" in message
    assert f"Raise it with `ulimit -n {100 + machine.SPARE_DESCRIPTORS}`" in message



@pytest.mark.parametrize("spare_mb", range(16, 28))
def test_small_stacks_end_with_an_error_whatever_the_spare_memory(spare_mb: int) -> None:
    # With 32 KiB stacks, the limit lands on a Python allocation in the new thread about half the time;
    # threading.Thread.start() then waited forever for the thread to say it had started.
    started, error = limits.thread_capacity(spare_mb, 32, limit=5_000, timeout=20)
    assert started > 0
    assert error != "none"


def test_limit_reached_first_reports_none() -> None:
    assert limits.thread_capacity(512, 256, limit=50) == (50, "none")


def test_larger_stacks_fit_fewer_threads() -> None:
    small, _ = limits.thread_capacity(256, 256, limit=5_000)
    large, _ = limits.thread_capacity(256, 4096, limit=5_000)
    assert large < small


def test_on_a_faked_macos_thread_capacity_stops_with_the_note_before_its_child_starts(monkeypatch) -> None:
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")

    def forbidden(*args, **kwargs):
        raise AssertionError("a thread-counting child started on a system without /proc")

    monkeypatch.setattr(limits.channel, "open_child", forbidden)
    with pytest.raises(platforms.FacilityMissing, match=r"^needs Linux's /proc, .* on macOS this cell is skipped"):
        limits.thread_capacity(64)
