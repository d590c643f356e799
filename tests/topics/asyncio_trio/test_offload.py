"""iolab.topics.asyncio_trio.offload: where a CPU-bound job runs decides whether the loop stays responsive."""

from __future__ import annotations

import json
import subprocess

import pytest

from iolab.kit import platforms, procs
from iolab.topics.asyncio_trio import offload

# CPU seconds and loop lag of 40 ms jobs: beside another test worker the figures are the machine's, not the strategy's.
pytestmark = pytest.mark.solo

JOB_MS = 40
JOBS = 6


@pytest.fixture(scope="module")
def batches():
    with offload.open_pool() as pool:
        return {name: offload.measure(name, JOB_MS, JOBS, pool) for name in offload.STRATEGIES}


@pytest.mark.parametrize("name", ["asyncio inline", "trio inline"])
def test_inline_jobs_stall_the_loop_for_the_whole_batch(batches, name):
    row = batches[name].summary()
    # Tasks that never await run back to back: the ticker waits for all of them, so for most of the batch's
    # own duration, measured in the same run (a job's length follows a per-process calibration).
    assert row["lag_max_ms"] > row["seconds"] * 1000 * 0.6, row
    assert row["stalled_pct"] > 50


def test_a_process_pool_keeps_the_loop_responsive(batches):
    pool = batches["process pool"].summary()
    inline = batches["asyncio inline"].summary()
    assert pool["lag_max_ms"] < inline["lag_max_ms"] / 2
    assert pool["wakeups"] > inline["wakeups"]


@pytest.mark.parametrize("name", ["asyncio inline", "asyncio.to_thread", "trio.to_thread"])
def test_one_gil_means_at_most_one_core_in_threads_or_inline(batches, name):
    assert batches[name].summary()["cores_used"] < 1.15  # clock-tick rounding on a short batch


def test_the_process_pool_counts_its_workers_cpu(batches):
    pool = batches["process pool"]
    # The jobs ran in the workers, not here: without their CPU the batch would look nearly free.
    assert pool.cpu_s > 0.5 * JOBS * JOB_MS / 1000


def test_every_strategy_finishes_every_job(batches):
    for batch in batches.values():
        assert batch.jobs == JOBS and batch.seconds > 0
        assert batch.summary()["jobs_per_s"] == pytest.approx(JOBS / batch.seconds)


def test_on_a_faked_macos_the_pool_and_the_notebook_count_their_cpu_from_psutil(monkeypatch):
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    with offload.open_pool(2) as pool:
        batch = offload.measure("process pool", JOB_MS, JOBS, pool)
    assert batch.cpu_s > 0.5 * JOBS * JOB_MS / 1000 and 0 <= batch.own_cpu_s < batch.cpu_s


def test_unknown_strategy_and_missing_pool_are_explained():
    with pytest.raises(ValueError, match="strategies are"):
        offload.measure("gpu", 1, 1)
    with pytest.raises(ValueError, match="open_pool"):
        offload.measure("process pool", 1, 1)


def test_compare_returns_a_summary_row_per_run_and_a_row_per_wakeup():
    summary, wakeups = offload.compare(["asyncio inline", "process pool"], 5, 2, repeats=2)
    assert len(summary) == 4
    assert set(wakeups.strategy) == {"asyncio inline", "process pool"}
    assert (wakeups.lag_ms >= 0).all()


def test_cli_prints_one_json_document():
    argv = procs.python_argv("-m", "iolab", "looplag", "--strategy", "asyncio inline", "trio.to_thread",
                             "--job-ms", "5", "--jobs", "3", "--json")
    out = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=True).stdout
    rows = json.loads(out)
    assert [r["strategy"] for r in rows] == ["asyncio inline", "trio.to_thread"]
    assert all(r["jobs_per_s"] > 0 for r in rows)


def test_the_cli_lists_exactly_the_strategies_offload_knows():
    from iolab.commands import asyncio_trio

    assert list(asyncio_trio.STRATEGIES) == list(offload.STRATEGIES)
