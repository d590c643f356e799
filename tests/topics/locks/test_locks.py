"""Chapter 8: shared counters, the race, the slow stream, and the Go program (orderings, not machine numbers)."""

import io
import json
import sys
import time

import pandas as pd
import pytest

from iolab.commands import main
from iolab.kit import machine
from iolab.topics.locks import counters, golocks, harness, process_counter, races, slowstream


def _median(runs: pd.DataFrame, strategy: str) -> float:
    return runs[runs.strategy == strategy].ns_per_op.median()


def test_every_counter_strategy_counts_every_increment():
    runs = counters.counter_costs([1, 3], ops=3_000, repeats=1)
    assert set(runs.strategy) == {"batched", "lock", "queue"}
    assert list(runs.groupby("strategy").threads.apply(sorted).iloc[0]) == [1, 3]
    assert runs.correct.all()
    assert (runs.ops == 3_000).all()  # 3,000 split over 1 and over 3 threads


@pytest.mark.solo  # compares ns per operation: needs the cores to itself
def test_a_lock_per_increment_costs_more_than_batching():
    runs = counters.counter_costs([2], ops=100_000, repeats=3, strategies=["batched", "lock"])
    assert _median(runs, "batched") * 2 < _median(runs, "lock")


def test_per_op_table_has_a_column_per_thread_count():
    runs = counters.counter_costs([1, 2], ops=2_000, repeats=1)
    table = counters.per_op_table(runs)
    assert list(table.columns) == ["1 thread (ns)", "2 threads (ns)"]
    assert len(table) == 3


def test_unlocked_call_loses_updates_and_the_lock_prevents_it():
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-4)  # many chances for a thread to let go of the GIL inside f()
    try:
        race = races.lost_updates(threads=4, increments=100_000, repeats=3)
    finally:
        sys.setswitchinterval(before)
    most_lost = race.groupby("code").lost.max()  # a machine busy elsewhere can hide the race in one run
    assert most_lost["x += f()"] > 0
    assert most_lost["with lock: x += f()"] == 0
    assert (race.expected == 400_000).all()


def test_run_threads_calls_off_the_start_when_a_thread_cannot_start(monkeypatch):
    import threading

    started = []

    def refuse(self):
        if started:
            raise RuntimeError("can't start new thread")
        started.append(self)
        original(self)

    original = threading.Thread.start
    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError, match="can't start"):
        harness.run_threads(lambda: None, 3)
    started[0].join(5)
    assert not started[0].is_alive()  # released from the barrier, not left waiting 120 s


def test_an_error_in_a_thread_is_raised_by_run_threads():
    def fail(n):
        raise ValueError(f"thread failed after {n}")

    with pytest.raises(ValueError, match="thread failed after 7"):
        harness.run_threads(fail, 3, 7)


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
@pytest.mark.skipif(machine.cores() < 2, reason="a race between processes needs two cores")
def test_value_without_its_lock_loses_updates_across_processes():
    runs = process_counter.value_costs([2], ops=200_000, repeats=2).groupby("strategy")
    assert runs.lost.max()["no lock"] > 0
    assert runs.lost.max()["lock"] == 0 and runs.lost.max()["batched"] == 0
    assert runs.ns_per_op.median()["batched"] < runs.ns_per_op.median()["lock"]


# --- the slow stream ------------------------------------------------------------------------------


@pytest.mark.parametrize("design", list(slowstream.DESIGNS))
def test_every_design_writes_every_event_once(design, tmp_path):
    with slowstream.open_durable_file(tmp_path) as stream:
        tally = slowstream.WorkerTotals()
        slowstream.DESIGNS[design](stream, 3, 20, tally)
        path = next(tmp_path.glob("iolab-stream-*/events.log"))
        events = [json.loads(line) for line in path.read_text().splitlines()]
    assert sorted((e["worker"], e["seq"]) for e in events) == [(w, s) for w in range(3) for s in range(20)]
    assert tally.working_s > 0 and tally.handoff_s <= tally.working_s
    assert not list(tmp_path.iterdir()), "the temporary folder is removed"


class _FullDisk:
    syncs = 0

    def write(self, data: bytes) -> None:
        raise OSError(28, "No space left on device")


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
@pytest.mark.parametrize("design", list(slowstream.DESIGNS))
def test_a_failing_stream_fails_the_run_promptly(design):
    began = time.monotonic()
    with pytest.raises(OSError, match="No space left"):
        slowstream.DESIGNS[design](_FullDisk(), 3, 20, slowstream.WorkerTotals())
    assert time.monotonic() - began < 10, "the owner must not wait for workers that are gone"


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_coarse_lock_makes_workers_wait_and_a_queue_does_not():
    runs = slowstream.stream_experiment([4], events=15).set_index("design")
    assert runs.lock_wait_pct["coarse lock"] > 20
    assert runs.lock_wait_pct["queue to owner"] == 0
    assert runs.handoff_per_s["queue to owner"] > 3 * runs.handoff_per_s["coarse lock"]
    assert runs.syncs["coarse lock"] == runs.syncs["queue to owner"] == 60
    assert 1 <= runs.syncs["queue + group commit"] < 60
    assert runs.max_backlog["coarse lock"] == 0 and runs.max_backlog["queue to owner"] >= 1


def test_fsync_us_is_the_median_time_of_a_write_that_waits_for_the_device(monkeypatch, tmp_path):
    synced = []

    def slow_device(fd: int) -> None:  # a disk that takes 3 ms to confirm each write
        synced.append(fd)
        time.sleep(0.003)

    monkeypatch.setattr(slowstream.os, "fsync", slow_device)
    # A lower bound only: the device's wait is in every timed write, however busy the machine.
    assert slowstream.fsync_us(tmp_path, writes=5) >= 3000
    assert len(synced) == 5, "one fsync per write"
    assert list(tmp_path.iterdir()) == [], "the stream's temporary folder is removed"


# --- Go -------------------------------------------------------------------------------------------


def test_without_go_the_runner_says_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(golocks, "GO_FALLBACK_DIR", str(tmp_path))
    assert golocks.find_go() is None
    with pytest.raises(golocks.GoMissing, match="not installed.*go.dev"):
        golocks.counter_costs([1], ops=1_000)
    with pytest.raises(golocks.GoMissing):
        golocks.counter_costs([1], ops=1_000, go=str(tmp_path / "go"))


def test_go_env_keeps_caches_out_of_the_repository(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    env = golocks.go_env()
    assert env["GOCACHE"].startswith(str(tmp_path)) and env["GOPATH"].startswith(str(tmp_path))
    assert env["GOTOOLCHAIN"] == "local"


needs_go = pytest.mark.skipif(golocks.find_go() is None, reason="the go tool is not installed")


@pytest.mark.solo  # orders ns per operation: needs the cores to itself
@needs_go
def test_go_program_counts_and_orders_batched_atomic_mutex():
    runs = golocks.counter_costs([1, 2], ops=2_000_000, repeats=3)
    assert runs.correct.all()
    assert set(runs.strategy) == set(golocks.STRATEGIES) and set(runs.threads) == {1, 2}
    assert _median(runs, "batched") < _median(runs, "atomic") < _median(runs, "mutex") * 1.5


@needs_go
def test_a_go_build_error_is_reported_with_the_compiler_output(monkeypatch):
    monkeypatch.setattr(golocks, "GO_SOURCE", "package main\nfunc main() { undefinedThing() }\n")
    with pytest.raises(RuntimeError, match="go build failed(.|\n)*undefined"):
        golocks.counter_costs([1], ops=1_000)


# --- command line ---------------------------------------------------------------------------------


def test_cli_prints_one_json_document(capsys):
    assert main(["locks", "--threads", "1", "2", "--ops", "2000", "--repeats", "1", "--no-go", "--json"]) == 0
    rows = pd.read_json(io.StringIO(capsys.readouterr().out))
    assert set(rows.strategy) == {"batched", "lock", "queue"} and set(rows.threads) == {1, 2}
    assert (rows.ns_per_op > 0).all()


def test_cli_rejects_a_zero_thread_count(capsys):
    with pytest.raises(SystemExit) as exit_info:
        main(["locks", "--threads", "0", "--no-go"])
    assert exit_info.value.code == 2
    assert "thread counts must be >= 1" in capsys.readouterr().err


def test_lost_updates_runs_only_the_ways_asked_and_refuses_one_it_does_not_know():
    race = races.lost_updates(threads=2, increments=1_000, repeats=2, ways=["x += 1", "x += f()"])
    assert list(race.code.unique()) == ["x += 1", "x += f()"] and len(race) == 4
    with pytest.raises(KeyError):
        races.lost_updates(threads=2, increments=1_000, repeats=1, ways=["x += 2"])
