"""The descriptor limit chapter 5 runs into on purpose: its error says the same as every instrument's."""

import errno
import os

from iolab.kit import machine
from iolab.topics.event_loop import limits


def test_emfile_becomes_a_descriptor_limit_naming_the_limit_and_what_to_raise_it_to(monkeypatch) -> None:
    monkeypatch.setattr(machine, "open_files_limit", lambda: (60, 1024))
    error = limits.descriptor_limit(100, 51, OSError(errno.EMFILE, os.strerror(errno.EMFILE)))
    assert isinstance(error, machine.DescriptorLimit)
    message = str(error)
    assert message.startswith("connection 52 of 100 failed: Too many open files (errno 24).")
    assert "its limit (ulimit -n) allows 60" in message
    assert f"Raise it with `ulimit -n {100 + machine.SPARE_DESCRIPTORS}`" in message
