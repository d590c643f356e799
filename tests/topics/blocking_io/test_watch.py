import os
import time

import pytest

from iolab.kit.procs import open_fork
from iolab.topics.blocking_io import watch


def test_spin_is_bounded_in_time_and_counts_iterations():
    start = time.monotonic()
    assert watch.spin(0.05) > 1000
    assert time.monotonic() - start < 1


def test_block_in_read_returns_when_a_byte_arrives():
    r, w = os.pipe()
    try:
        os.write(w, b"x")
        assert watch.block_in_read(r) == 1
    finally:
        os.close(r)
        os.close(w)


def test_sample_sees_a_blocked_reader_sleep_and_a_spinner_run():
    r, w = os.pipe()
    try:
        with open_fork(watch.block_in_read, r) as blocked, open_fork(watch.spin, 5) as busy:
            df = watch.sample({"blocked": blocked.pid, "busy": busy.pid}, seconds=0.6, interval=0.1)
    finally:
        os.close(r)
        os.close(w)
    assert set(df.role) == {"blocked", "busy"}
    late = df[df.t_s > 0.15]
    assert set(late[late.role == "blocked"].state) == {"S"}
    assert "R" in set(late[late.role == "busy"].state)
    cpu = df.groupby("role").cpu_s.agg(lambda s: s.iloc[-1] - s.iloc[0])
    assert cpu["busy"] > 0.05 and cpu["blocked"] < 0.05


def test_sample_rejects_a_non_positive_interval():
    with pytest.raises(ValueError):
        watch.sample({"me": os.getpid()}, seconds=1, interval=0)


def test_count_states_sees_a_spinner_run_and_returns_when_it_exits():
    with open_fork(watch.spin, 0.2) as busy:
        start = time.monotonic()
        counts = watch.count_states(busy.pid, timeout=10)
        took = time.monotonic() - start
    assert counts.get("R", 0) > 0 and "Z" not in counts
    assert took < 5, "count_states should stop at the child's exit"


def test_count_states_gives_up_on_a_process_that_does_not_exit():
    with open_fork(watch.spin, 5) as busy:
        with pytest.raises(TimeoutError, match="still running"):
            watch.count_states(busy.pid, timeout=0.1)
