"""The upstreams and the service, for real: processes, sockets, faults, and the bandwidth law.

Every run here is small (a few hundred requests, a few threads) so that the suite stays short on a
busy two-core machine. Outside the solo stage, assertions are counts, orderings and floors a busy
machine cannot break (a 50 ms upstream never answers sooner); the tests whose claim is a rate (the
bandwidth law, a collapse) are marked solo.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time

import pytest

from iolab.kit import platforms, procfs, procs
from iolab.load import LoadSpec, run_load
from iolab.topics.upstreams import RunSpec, open_upstreams, run_service, run_upstreams
from iolab.topics.upstreams.endpoints import UpstreamsSpec
from iolab.topics.upstreams.experiments import law_rate, probe
from iolab.topics.upstreams.run import open_parked_service
from iolab.topics.upstreams.service import Monitor, ServiceSpec
from iolab.topics.upstreams.sync import BlockingCaller

pytestmark = pytest.mark.timeout(120)


@pytest.fixture(scope="module")
def faults():
    with open_upstreams("50ms,refuse,reset,hang") as upstreams:
        yield upstreams


def test_each_endpoint_answers_or_fails_as_its_spec_says(faults):
    table = probe(faults, timeout_s=0.3).set_index("endpoint")
    assert table.outcome.to_dict() == {"50ms": "ok", "refuse": "refused", "reset": "reset", "hang": "timeout"}
    assert table.loc["50ms", "ms"] >= 50
    assert table.loc["refuse", "ms"] < 50 and table.loc["reset", "ms"] < 50  # a refusal is news at once
    assert table.loc["hang", "ms"] >= 300  # only the timeout ends a call to a black hole


def test_the_upstreams_child_takes_a_checked_spec_and_is_one_process(faults):
    assert UpstreamsSpec(" 20ms, 20ms ,hang").latency == "20ms*2,hang"  # folded, as the runs name it
    assert UpstreamsSpec.from_json('{"latency": "20ms*9,hang"}').endpoints == UpstreamsSpec("20ms*9,hang").endpoints
    with pytest.raises(ValueError, match="neither a latency nor a fault"):
        UpstreamsSpec("20ms,sometimes")
    assert faults.pid == faults.process.pid and faults.process.poll() is None


def test_the_kit_load_generator_sees_the_same_faults(faults):
    def load(index: int, timeout_s: float = 2.0):
        spec = LoadSpec(faults.url(index), mode="open", rate=50, duration_s=1.0, connections=8, timeout_s=timeout_s, workers=1)
        return run_load(spec)

    answering = load(0)
    assert answering.error_count == 0 and answering.requests >= 40
    # The floor is the upstream's own wait; the ceiling, ten times it, only catches a wrong unit or
    # calls queued behind each other, and leaves a busy machine room.
    assert 50 <= answering.percentiles("latency")["p50"] < 500
    refused = load(1)
    assert refused.requests == 0 and refused.errors.get("refused", 0) > 0
    reset = load(2)
    assert reset.requests == 0 and set(reset.errors) <= {"reset", "closed"} and reset.error_count > 0
    hanging = load(3, timeout_s=0.2)
    assert hanging.requests == 0 and hanging.errors.get("timeout", 0) > 0


def test_a_malformed_request_gets_a_4xx(faults):
    with socket.create_connection(("127.0.0.1", faults.ports[0]), timeout=5) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        assert sock.recv(100).startswith(b"HTTP/1.1 400")


def test_a_keepalive_connection_serves_many_calls(faults):
    caller = BlockingCaller(ServiceSpec("sync", 1.0, 1, faults.endpoints, faults.ports))
    assert [caller.call(0) for _ in range(3)] == ["ok"] * 3
    first = caller.socks[0]
    assert caller.call(0) == "ok" and caller.socks[0] is first
    caller.close()


@pytest.mark.solo  # compares rates with the bandwidth law: needs the cores to itself
def test_sync_pool_reaches_the_bandwidth_law_and_async_holds_the_rate():
    # 4 threads, 50 ms calls: 4 / 0.05 = 80 answers a second, though 200 arrive.
    with open_upstreams("50ms*2") as upstreams:
        sync = run_service(RunSpec(200, 600, "50ms*2", "sync", threads=4, max_seconds=5), upstreams)
        asynchronous = run_service(RunSpec(200, 600, "50ms*2", "async", max_seconds=5), upstreams)
    law = law_rate(RunSpec(200, 600, "50ms*2", "sync", threads=4))
    assert law == pytest.approx(80)
    assert 0.7 * law <= sync.avg_rate <= 1.05 * law, sync.rate_per_second()
    assert asynchronous.avg_rate >= 0.9 * 200
    assert sync.overhead_percentiles()["p50"] > 10 * asynchronous.overhead_percentiles()["p50"]  # the queue


@pytest.mark.solo  # compares the two models' rates: needs the cores to itself
def test_one_slow_upstream_collapses_sync_but_not_async():
    with open_upstreams("20ms*4,3s") as upstreams:
        specs = [RunSpec(100, 300, "20ms*4,3s", model, threads=5, max_seconds=5) for model in ("sync", "async")]
        sync, asynchronous = (run_service(spec, upstreams) for spec in specs)
    assert asynchronous.avg_rate >= 0.9 * 80  # four in five succeed
    assert sync.avg_rate < 0.25 * asynchronous.avg_rate
    assert sync.unfinished > 0  # the run stopped with requests still queued
    assert asynchronous.failures() == {"late": 60}  # every call to the 3 s upstream, and only those


def test_a_client_timeout_gives_the_sync_pool_its_healthy_calls_back():
    spec = RunSpec(100, 300, "20ms*4,hang", "sync", threads=5, timeout_s=0.05, max_seconds=8)
    result = run_upstreams(spec)
    # Counts, not the rate: every healthy call answered and nothing left queued is what "the pool got
    # its threads back" means; how fast, a busy machine decides.
    assert result.failures() == {"timeout": 60}
    assert result.succeeded == 240 and result.unfinished == 0


def test_refusals_and_resets_fail_fast_in_both_models():
    with open_upstreams("20ms*3,refuse,reset") as upstreams:
        for model in ("sync", "async"):
            result = run_service(RunSpec(200, 400, "20ms*3,refuse,reset", model, threads=5), upstreams)
            assert result.failures() == {"refused": 80, "reset": 80}, model
            assert result.succeeded == 240


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_the_async_service_times_out_and_fails_fast_on_either_loop(loop: str) -> None:
    spec = RunSpec(100, 300, "20ms*2,refuse,reset,hang", "async", loop=loop, timeout_s=0.2, max_seconds=8)
    result = run_upstreams(spec)
    assert result.failures() == {"refused": 60, "reset": 60, "timeout": 60}
    assert result.succeeded == 120 and result.unfinished == 0  # counts: no rate outside the solo stage


@pytest.mark.solo  # a rate against the schedule: needs the cores to itself
def test_the_trio_service_holds_the_rate_past_the_bandwidth_law():
    with open_upstreams("50ms*2") as upstreams:
        result = run_service(RunSpec(200, 600, "50ms*2", "async", loop="trio", max_seconds=5), upstreams)
    assert result.avg_rate >= 0.9 * 200
    assert result.succeeded == 600


@pytest.mark.solo  # measures CPU time or timing: needs the cores to itself
@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_an_upstream_limit_turns_the_black_holes_share_away_and_nothing_else(loop: str) -> None:
    # 25 req/s and 20 ms calls: every healthy call ends before the next request arrives, so only
    # the black hole's calls pile up, and the counts below are exact.
    with open_upstreams("20ms*4,hang") as upstreams:
        per_upstream = run_service(RunSpec(25, 75, "20ms*4,hang", "async", loop=loop, limit=3), upstreams)
        service_wide = run_service(RunSpec(25, 75, "20ms*4,hang", "async", loop=loop, limit=3, limit_scope="service"), upstreams)
    # The black hole gets 15 requests: 3 are admitted and hang (late), 12 are rejected at once.
    assert per_upstream.failures() == {"late": 3, "rejected": 12}
    assert per_upstream.succeeded == 60
    assert per_upstream.memory_timeline().in_flight.max() <= 3 + 1
    # One limit for the whole service: after the black hole's third request (request 14) its hung
    # calls hold every slot, and the healthy requests are turned away with its own.
    assert service_wide.failures()["late"] == 3
    assert service_wide.succeeded <= 15


@pytest.mark.parametrize("loop", ["asyncio", "trio"])
def test_async_without_a_limit_keeps_every_hung_call_open(loop: str) -> None:
    result = run_upstreams(RunSpec(200, 400, "20ms*4,hang", "async", loop=loop))
    memory = result.memory_timeline()
    assert result.failures() == {"late": 80}
    assert memory.in_flight.max() >= 70  # every call to the black hole, still waiting at the end
    assert memory.fds.max() >= memory.in_flight.max()  # each one holds a socket


def test_a_parked_pool_has_its_threads_and_reserves_a_stack_for_each():
    env = procs.ONE_MALLOC_ARENA  # or each thread that allocates may reserve 64 MiB for its own
    with open_parked_service("sync", threads=1, env=env) as one, open_parked_service("sync", threads=101, stack_kb=1024, env=env) as many:
        a, b = procfs.status(one.pid), procfs.status(many.pid)
    assert b.threads - a.threads == 100
    per_thread_virtual_kb = (b.vm_size_kb - a.vm_size_kb) / 100
    per_thread_resident_kb = (b.vm_rss_kb - a.vm_rss_kb) / 100
    assert 900 < per_thread_virtual_kb < 1300  # the 1 MiB asked for (and a guard page)
    assert per_thread_resident_kb < 100  # only the pages touched


def test_cli_prints_the_source_figures_as_json():
    argv = [
        "python", "-m", "iolab", "upstreams", "--rate", "200", "--num-req", "400",
        "--latency", "20ms*4,refuse", "--json", "sync", "--threads", "5",
    ]
    argv[0] = __import__("sys").executable
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True).stdout
    summary = json.loads(out)
    assert {"avg_rate", "stddev_rate", "overhead_ms", "succeeded", "failed", "seconds"} <= summary.keys()
    assert {"p50", "p90", "p99", "p100"} <= summary["overhead_ms"].keys()
    assert (summary["succeeded"], summary["failed"]) == (320, 80)


def test_cli_refuses_a_bad_spec_with_the_grammar():
    argv = [__import__("sys").executable, "-m", "iolab", "upstreams", "--rate", "100", "--num-req", "10", "--latency", "20xs", "async"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert "neither a latency nor a fault" in done.stderr


def test_the_run_stops_at_its_time_limit():
    start = time.monotonic()
    result = run_upstreams(RunSpec(100, 200, "20ms,hang", "sync", threads=2, max_seconds=2))
    assert time.monotonic() - start < 15
    # It cannot stop before its limit; a busy machine may notice the limit late, but not by the two
    # minutes (the default limit) the hung calls would otherwise hold it.
    assert 2 - 1e-6 <= result.seconds < 4
    assert result.unfinished > 0


def test_off_linux_the_service_samples_its_memory_and_descriptors_through_psutil(monkeypatch) -> None:
    rss_kb, descriptors = Monitor(time.perf_counter()).memory_and_descriptors()  # from /proc
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    monitor = Monitor(time.perf_counter())
    monitor.poll(monitor.next_sample, 0)
    [(_, rss_kb_there, descriptors_there)] = monitor.samples
    assert monitor.elsewhere is not None and abs(rss_kb_there - rss_kb) < 0.1 * rss_kb
    assert abs(descriptors_there - descriptors) <= 2  # listing /proc/self/fd opens one more
