"""The child channel: a JSON spec in, READY and the start signal, progress lines, one JSON result."""

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.kit import channel
from iolab.kit.procs import ProcessFailed, ProcessTimeout

# A child as the kit's are written: its spec in argv[1], everything it says through iolab.kit.channel.
CHILD = textwrap.dedent("""
    import json, signal, sys
    from iolab.kit import channel

    spec = json.loads(sys.argv[1])
    print("a line outside the protocol", flush=True)
    print("TICKET 99 is not a progress line", flush=True)
    if spec.get("wait_for_start"):
        signal.pthread_sigmask(signal.SIG_BLOCK, {channel.START_SIGNAL})
        channel.send_ready()
        signal.sigwait({channel.START_SIGNAL})
    for second in range(spec["ticks"]):
        channel.send_progress(second, 10 * second)
    if spec.get("fail"):
        raise RuntimeError("the child broke before its result")
    channel.send_result({"echo": spec})
""")


@pytest.fixture
def child_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    (tmp_path / "iolab_test_child.py").write_text(CHILD)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # open_child's environment is this one's
    yield "iolab_test_child"


def _progress(child: channel.Child) -> list[tuple[int, ...]]:
    ticks = []
    while (tick := child.wait_progress(timeout=30)) is not None:
        ticks.append(tick)
    return ticks


def test_a_child_gets_its_spec_and_sends_its_progress_then_one_result(child_module: str) -> None:
    spec = {"ticks": 3, "label": "é, \"quoted\""}
    with channel.open_child(child_module, json.dumps(spec)) as child:
        assert _progress(child) == [(0, 0), (1, 10), (2, 20)]
        assert child.result == {"echo": spec}
        assert child.wait_progress(timeout=0.1) is None  # the result stays; nothing more is read
        assert child.wait(timeout=10) == 0


def test_a_child_that_dies_before_its_result_is_an_error_quoting_its_traceback(child_module: str) -> None:
    with channel.open_child(child_module, json.dumps({"ticks": 1, "fail": True})) as child:
        with pytest.raises(ProcessFailed, match="the child broke before its result"):
            _progress(child)
        assert child.result is None


def test_a_ready_child_waits_for_the_start_signal(child_module: str) -> None:
    with channel.open_child(child_module, json.dumps({"ticks": 1, "wait_for_start": True})) as child:
        child.wait_ready()
        with pytest.raises(ProcessTimeout):
            child.wait_progress(timeout=0.3)  # said READY, and waits
        child.start()
        assert _progress(child) == [(0, 0)] and child.result is not None
