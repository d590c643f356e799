"""The latency spec, the run settings and the figures computed from a run: pure, no processes."""

from __future__ import annotations

import numpy as np
import pytest

from iolab.kit import machine
from iolab.topics.upstreams import RunSpec, UpstreamsResult, format_spec, parse_spec
from iolab.topics.upstreams.experiments import law_rate
from iolab.topics.upstreams.result import rate_window
from iolab.topics.upstreams.spec import ANSWER, Endpoint, parse_duration


def test_source_spec_is_nine_fast_endpoints_and_one_slow():
    endpoints = parse_spec("20ms*9,30s")
    assert len(endpoints) == 10
    assert endpoints[:9] == (Endpoint(ANSWER, 0.02),) * 9
    assert endpoints[9] == Endpoint(ANSWER, 30.0)


@pytest.mark.parametrize(
    "text, seconds",
    [("20", 0.02), ("20ms", 0.02), ("1.5s", 1.5), ("300us", 0.0003), (" 60MS ", 0.06), (".5s", 0.5), ("0", 0.0)],
)
def test_durations_take_units_and_a_bare_number_is_milliseconds(text, seconds):
    assert parse_duration(text) == pytest.approx(seconds)


def test_faults_are_kinds_without_latency_and_take_counts():
    endpoints = parse_spec("20ms*2, refuse, reset*2, HANG")
    assert [e.kind for e in endpoints] == [ANSWER, ANSWER, "refuse", "reset", "reset", "hang"]
    assert endpoints[2].latency_s == 0.0


@pytest.mark.parametrize("text", ["20ms*9,30s", "20ms*8,refuse,hang", "300us,1.5s*2,reset", "60ms*10"])
def test_format_spec_folds_runs_back_into_the_same_spec(text):
    assert format_spec(parse_spec(text)) == text
    assert parse_spec(format_spec(parse_spec(text))) == parse_spec(text)


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "empty"),
        ("20ms*0", "at least 1"),
        ("20ms*x", "whole number"),
        ("20xs", "neither a latency nor a fault"),
        ("20ms,,30s", "empty item"),
        ("2h", "neither"),
        ("4000s", "hang"),
        ("1ms*1001", "1000 endpoints"),
    ],
)
def test_a_bad_spec_is_refused_with_what_is_wrong(text, says):
    with pytest.raises(ValueError, match=says):
        parse_spec(text)


@pytest.mark.parametrize(
    "kwargs, says",
    [
        ({"rate": 0}, "positive"),
        ({"num_req": 0}, "num_req"),
        ({"model": "fibers"}, "sync"),
        ({"threads": 0}, "threads"),
        ({"latency": "20ms*9,"}, "empty item"),
        ({"timeout_s": -1}, "timeout"),
        ({"model": "async", "limit": 0}, "limit"),
    ],
)
def test_run_settings_are_checked_before_anything_starts(kwargs, says):
    base = {"rate": 1000, "num_req": 100, "latency": "20ms*10", "model": "sync", "threads": 50}
    with pytest.raises(ValueError, match=says):
        RunSpec(**(base | kwargs))


def test_a_thread_pool_past_the_descriptor_limit_is_refused_with_the_limit_to_raise(monkeypatch):
    monkeypatch.setattr(machine, "open_files_limit", lambda: (1024, 20_000))
    # 5,000 threads x 10 upstreams: 50,000 connections, in the service process.
    with pytest.raises(machine.DescriptorLimit, match=r"allows 20,000\. Raise it with `ulimit -n 50064`.*at most 1,993 threads"):
        RunSpec(rate=1000, num_req=100, latency="20ms*10", model="sync", threads=5000)


def test_rate_window_leaves_out_the_partial_first_and_last_seconds():
    assert rate_window(np.array([980, 1000, 1000, 20])).tolist() == [1000, 1000]
    assert rate_window(np.array([0, 400, 0, 0, 450, 0])).tolist() == [0, 0]
    assert rate_window(np.array([0, 400, 0, 0, 450, 0]), cut=True).tolist() == [0, 0, 450]
    assert rate_window(np.array([5, 7])).tolist() == [5, 7]
    assert rate_window(np.array([0, 0])).tolist() == []


def synthetic(kinds, started, done, rate=10.0, latency="100ms*2", seconds=None) -> UpstreamsResult:
    settings = RunSpec(rate, len(kinds), latency).to_dict()
    seconds = seconds if seconds is not None else max(d for d in done if d is not None)
    record = {"seconds": seconds, "started": started, "done": done, "kind": kinds, "samples": [[0.0, 1024, 10]], "cpu_s": 0.1}
    return UpstreamsResult.from_record(settings, record)


def test_overhead_is_latency_minus_the_upstreams_own_and_counts_the_wait_for_a_thread():
    # Arrivals every 0.1 s; both endpoints answer in 100 ms. Request 1 waited 0.05 s for a thread.
    r = synthetic(["ok", "ok", "timeout"], [0.0, 0.15, 0.2], [0.101, 0.253, 0.7])
    assert r.overhead_ms == pytest.approx([1.0, 53.0])
    assert (r.succeeded, r.failed, r.unfinished) == (2, 1, 0)
    assert r.failures() == {"timeout": 1}
    assert r.overhead_percentiles()["p100"] == pytest.approx(53.0)


def test_a_late_call_still_hanging_counts_as_in_flight_and_as_failed():
    r = synthetic(["ok", "late", "unfinished"], [0.0, 0.1, None], [0.1, None, None], seconds=2.5)
    load = r.load_at(np.array([0.05, 0.5, 2.4]))
    assert load.in_flight.tolist() == [1, 1, 1]
    assert load.queued.tolist() == [0, 1, 1]  # request 2 arrived at 0.2 s and never got a thread
    assert (r.succeeded, r.failed, r.unfinished) == (1, 1, 1)
    assert r.timeline().failed.sum() == 1


def test_law_rate_is_threads_over_mean_call_time_times_the_share_that_succeeds():
    assert law_rate(RunSpec(1000, 1, "60ms*10", threads=50)) == pytest.approx(833.33, abs=0.01)
    assert law_rate(RunSpec(1000, 1, "20ms*10", threads=50)) == pytest.approx(1000)  # capped by arrivals
    assert law_rate(RunSpec(1000, 1, "20ms*9,30s", threads=50)) == pytest.approx(50 / 3.018 * 0.9)
    assert law_rate(RunSpec(1000, 1, "20ms*9,hang", threads=50, timeout_s=0.1)) == pytest.approx(900)
    assert law_rate(RunSpec(1000, 1, "20ms*9,hang", threads=50)) == 0.0
    assert law_rate(RunSpec(1000, 1, "60ms*10", threads=50), call_s=0.064) == pytest.approx(50 / 0.064)


def test_the_package_exports_what_it_documents():
    import iolab.topics.upstreams as upstreams

    for name in upstreams.__all__:
        assert getattr(upstreams, name) is not None
    with pytest.raises(AttributeError):
        upstreams.no_such_name  # noqa: B018
