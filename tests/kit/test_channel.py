"""The child channel: a typed spec in, READY and the start signal, progress lines, one JSON result."""

import dataclasses
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.kit import channel
from iolab.kit.procs import ProcessFailed, ProcessTimeout

# A child as the kit's are written: a Spec, and a __main__ that is child_main(Spec, run).
CHILD = textwrap.dedent("""
    import os
    import signal
    from dataclasses import dataclass
    from typing import ClassVar
    from iolab.kit import channel, sockets

    @dataclass(frozen=True)
    class Inner:
        name: str
        weight: float

    @dataclass(frozen=True)
    class Job(channel.Spec):
        ENTRY: ClassVar[str] = "iolab_test_child"
        ticks: int
        label: str = ""
        inner: tuple[Inner, ...] = ()
        wait_for_start: bool = False
        fail: bool = False
        listen: bool = False
        exit_code: int | None = None
        read_fd: int | None = None

        def __post_init__(self):
            if self.ticks < 0:
                raise ValueError("ticks must be 0 or more")

    def run(job):
        print("a line outside the protocol", flush=True)
        print("TICKET 99 is not a progress line", flush=True)
        if job.listen:
            with sockets.open_listener(0) as listener:
                sockets.announce(listener)
                signal.sigwait({signal.SIGTERM})
            return None
        if job.read_fd is not None:
            return {"read": os.read(job.read_fd, 100).decode()}
        if job.wait_for_start:
            signal.pthread_sigmask(signal.SIG_BLOCK, {channel.START_SIGNAL})
            channel.send_ready()
            signal.sigwait({channel.START_SIGNAL})
        for second in range(job.ticks):
            channel.send_progress(second, 10 * second)
        if job.fail:
            raise RuntimeError("the child broke before its result")
        if job.exit_code is not None:
            return job.exit_code
        return {"label": job.label, "weights": [i.weight for i in job.inner], "types": [type(i).__name__ for i in job.inner]}

    if __name__ == "__main__":
        channel.child_main(Job, run)
""")


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[type]:
    """The child module's Spec class, imported here as the parent would."""
    (tmp_path / "iolab_test_child.py").write_text(CHILD)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))  # open_child's environment is this one's
    monkeypatch.syspath_prepend(str(tmp_path))
    import iolab_test_child

    yield iolab_test_child.Job
    sys.modules.pop("iolab_test_child", None)


def _progress(child: channel.Child) -> list[tuple[int, ...]]:
    ticks = []
    while (tick := child.wait_progress(timeout=30)) is not None:
        ticks.append(tick)
    return ticks


def test_a_child_gets_its_spec_and_sends_its_progress_then_one_result(job: type) -> None:
    Inner = sys.modules["iolab_test_child"].Inner
    spec = job(ticks=3, label="é, \"quoted\"", inner=(Inner("a", 1.5), Inner("b", 2)))
    with channel.open_child(spec) as child:
        assert _progress(child) == [(0, 0), (1, 10), (2, 20)]
        # Nested dataclasses came back as Inner, and 2 (an int for a float field) as a float.
        assert child.result == {"label": spec.label, "weights": [1.5, 2.0], "types": ["Inner", "Inner"]}
        assert child.wait_progress(timeout=0.1) is None  # the result stays; nothing more is read
        assert child.wait(timeout=10) == 0


def test_a_spec_round_trips_and_refuses_a_wrong_field_by_name(job: type) -> None:
    Inner = sys.modules["iolab_test_child"].Inner
    spec = job(ticks=2, inner=(Inner("a", 1.0),))
    assert job.from_json(spec.to_json()) == spec
    assert job.from_argv(["prog", spec.to_json()]) == spec
    with pytest.raises(channel.SpecError, match="ticks"):
        job.from_json('{"ticks": "two"}')
    with pytest.raises(channel.SpecError, match="surprise"):
        job.from_json('{"ticks": 1, "surprise": 1}')
    with pytest.raises(channel.SpecError, match="ticks"):
        job.from_json('{}')
    with pytest.raises(channel.SpecError, match="JSON object"):
        job.from_json('[1]')
    with pytest.raises(channel.SpecError, match="recursion"):  # nested past Python's stack: refused, not a crash
        job.from_json("[" * 100_000)
    with pytest.raises(channel.SpecError, match="one argument"):
        job.from_argv(["prog"])
    with pytest.raises(ValueError, match="0 or more"):  # the spec's own checks run on the way in
        job.from_json('{"ticks": -1}')


def test_a_child_given_a_bad_spec_fails_naming_the_field(job: type) -> None:
    bad = dataclasses.replace(job(ticks=1), label=7)  # type: ignore[arg-type]
    with channel.open_child(bad) as child:
        with pytest.raises(ProcessFailed, match="label"):
            _progress(child)


def test_a_child_that_dies_before_its_result_is_an_error_quoting_its_traceback(job: type) -> None:
    with channel.open_child(job(ticks=1, fail=True)) as child:
        with pytest.raises(ProcessFailed, match="the child broke before its result"):
            _progress(child)
        assert child.result is None


def test_an_int_that_run_returns_is_the_exit_code(job: type) -> None:
    with channel.open_child(job(ticks=0, exit_code=3)) as child:
        assert child.wait(timeout=30) == 3 and child.result is None


def test_a_ready_child_waits_for_the_start_signal(job: type) -> None:
    with channel.open_child(job(ticks=1, wait_for_start=True)) as child:
        child.wait_ready()
        with pytest.raises(ProcessTimeout):
            child.wait_progress(timeout=0.3)  # said READY, and waits
        child.start()
        assert _progress(child) == [(0, 0)] and child.result is not None


def test_a_listening_child_says_where(job: type) -> None:
    with channel.open_child(job(ticks=0, listen=True)) as child:
        where = child.wait_listening(timeout=30)
        assert where.pid == child.pid and where.port > 0
        assert where.url == f"http://127.0.0.1:{where.port}"


def test_a_child_inherits_the_descriptors_it_is_passed(job: type) -> None:
    read_end, write_end = os.pipe()
    try:
        os.write(write_end, b"through the pipe")
        with channel.open_child(job(ticks=0, read_fd=read_end), pass_fds=[read_end]) as child:
            assert child.wait_progress(timeout=30) is None
            assert child.result == {"read": "through the pipe"}
    finally:
        os.close(read_end)
        os.close(write_end)
