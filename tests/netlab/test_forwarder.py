"""iolab.netlab.forwarder: the link's process takes its whole input as one ForwarderSpec (kit.channel)."""

from __future__ import annotations

import subprocess

import pytest

from iolab.kit.channel import SpecError
from iolab.kit.procs import python_argv
from iolab.netlab.forwarder import ForwarderSpec
from iolab.netlab.impair import Impairments


def test_the_spec_carries_the_impairments_and_the_seed_across() -> None:
    spec = ForwarderSpec("iolab-s", "iolab-c", 7, impairments=Impairments(25, 5, 0.01, 3.5, 10), seed=42)
    assert ForwarderSpec.from_json(spec.to_json()) == spec
    with pytest.raises(SpecError, match="server_ns"):
        ForwarderSpec.from_json('{"client_ns": "iolab-c", "control_fd": 7}')
    with pytest.raises(ValueError, match="probability"):
        ForwarderSpec.from_json(spec.to_json().replace('"loss": 0.01', '"loss": 2.0'))


def test_the_old_flags_are_refused_with_the_usage() -> None:
    done = subprocess.run(python_argv("-m", ForwarderSpec.ENTRY, "--server-ns", "a", "--client-ns", "b"),
                          capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "ForwarderSpec as JSON" in done.stderr
