"""The sleepers programs' shared protocol and command line."""

from __future__ import annotations

import pytest

from iolab.topics.c10k import protocol


def test_the_output_lines_are_parsed_and_the_rest_kept():
    report = protocol.parse_output([
        "READY 10",
        "goroutine 1 [running]:",
        'FAILED 21824 {"error": "can\'t start new thread", "maps": 65531}',
    ])
    assert report.started == 21824
    assert report.failed["maps"] == 65531
    assert report.completed is None
    assert report.other == ["goroutine 1 [running]:"]
    assert protocol.parse_output(["READY 5", "DONE 5"]).completed == 5
    done = protocol.parse_output(['DONE 5 {"gc_s": 0.25, "gc_collections": [9, 0, 0]}'])
    assert done.completed == 5 and done.done["gc_s"] == 0.25


@pytest.mark.parametrize("argv", [[], ["nap", "1", "1"], ["sleep", "x", "1"], ["sleep", "-1", "1"], ["pipe", "10", "1"]])
def test_a_malformed_command_line_ends_with_the_usage(argv):
    with pytest.raises(SystemExit, match="usage"):
        protocol.parse_args(argv)


def test_a_well_formed_command_line_is_parsed():
    assert protocol.parse_args(["pipe", "10", "2.5", "/tmp/f"]) == protocol.Args("pipe", 10, 2.5, "/tmp/f")


def test_no_gc_may_come_anywhere_and_switches_the_collector_off():
    assert protocol.parse_args(["sleep", "10", "1"]).gc
    assert not protocol.parse_args(["sleep", "10", "1", "--no-gc"]).gc
    assert protocol.parse_args(["--no-gc", "pipe", "10", "2", "/tmp/f"]) == protocol.Args("pipe", 10, 2.0, "/tmp/f", gc=False)
