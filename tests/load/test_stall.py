"""``iolab.load.stall``: a server stopped mid-run answers nothing while stopped, and always resumes."""

from __future__ import annotations

import time

import pytest

from iolab.kit import procfs
from iolab.load import LoadSpec, run_load, stall
from iolab.servers import open_server


def test_a_stalled_server_is_stopped_then_running_again() -> None:
    with open_server("asyncio") as server:
        with stall.stalled(server.pid, 0.1, 0.6) as pause:
            time.sleep(0.3)
            assert procfs.status(server.pid).state == "T"  # stopped by SIGSTOP
            time.sleep(0.6)
        assert procfs.status(server.pid).state in ("S", "R")
        assert pause.seconds == pytest.approx(0.6, abs=0.2)


def test_leaving_the_block_early_resumes_the_server() -> None:
    with open_server("asyncio") as server:
        with pytest.raises(RuntimeError):
            with stall.stalled(server.pid, 0.05, 30.0):
                time.sleep(0.3)
                raise RuntimeError("the cell failed mid-stall")
        assert procfs.wait_for_state(server.pid, "SR", timeout=5).state in "SR"


def test_open_loop_corrected_latency_carries_the_stall_and_closed_loop_hides_it() -> None:
    with open_server("asyncio") as server:
        figures = {}
        for mode in ("closed", "open"):
            spec = LoadSpec(server.url + "/", mode=mode, connections=4 if mode == "closed" else 20,
                            rate=500 if mode == "open" else None, duration_s=2.0)
            with stall.stalled(server.pid, 0.7, 0.5):
                figures[mode] = run_load(spec).to_dict()
    assert figures["open"]["p90_ms"] > 100  # a quarter of the scheduled requests waited in the stall
    assert figures["closed"]["p90_ms"] < 100  # each client lost one request to it, no more
    assert figures["open"]["uncorrected_p90_ms"] < figures["open"]["p90_ms"] / 10
