"""The shoot-out runner: every runtime's sleepers, the blocked readers, the limits met, the CLI."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time

import pytest

from iolab.kit import platforms
from iolab.kit.machine import DescriptorLimit
from iolab.topics.c10k import RUNTIMES, blocked_reads, machine_limits, run, run_each, tables, threads

needs_go = pytest.mark.skipif(shutil.which("go") is None, reason="go is not installed")
needs_node = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")

# The most OS threads a runtime that multiplexes sleepers may use, whatever their number.
FEW_THREADS = 20


@pytest.mark.parametrize(
    "runtime", ["threads", "asyncio", "trio", pytest.param("go", marks=needs_go), pytest.param("node", marks=needs_node)]
)
def test_every_runtime_finishes_all_its_sleepers_after_the_sleep(runtime):
    result = run(runtime, 300, 0.5)
    assert result.status == "completed", result.error
    assert result.error is None
    assert result.started == result.completed == 300
    assert result.wall_s >= 0.5
    assert result.peak_rss_mb > 0
    if runtime == "threads":
        assert result.max_os_threads > 300  # one each, plus the main thread
    else:
        assert result.max_os_threads < FEW_THREADS


def test_a_runtime_whose_tool_is_missing_is_skipped_with_a_note(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no go, node or ruby on it
    result = run("go", 1000, 1)
    assert result.status == "skipped"
    assert "`go` is not installed" in result.error
    runs = run_each(["node", "asyncio"], 50, 0.1)
    summary, samples = tables(runs)
    assert list(summary.status) == ["skipped", "completed"]
    assert set(samples.runtime) == {"asyncio"}
    assert [r.runtime for r in runs] == ["node", "asyncio"] and runs[1].marks  # the runs themselves, marks and all


def test_off_linux_every_run_is_skipped_with_the_note_as_there_is_no_proc_to_watch_it(monkeypatch):
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    runs = run_each(["threads", "asyncio"], 50, 0.1)
    summary, samples = tables(runs)
    assert list(summary.status) == ["skipped", "skipped"] and samples.empty
    assert all(r.error == platforms.missing("procfs") for r in runs), runs[0].error
    blocked = blocked_reads([10], (("threads", "pipe"),))
    assert list(blocked.status) == ["skipped"] and blocked.error[0].startswith("needs Linux's /proc")


def test_threads_cost_a_thread_per_blocked_reader_and_event_loops_none():
    df = blocked_reads([5, 200], variants=(("threads", "pipe"), ("asyncio", "socket"), ("trio", "pipe")), settle_s=0.3)
    threads = df.set_index(["variant", "count"]).os_threads
    assert threads["threads · pipe", 200] >= 200
    assert threads["asyncio · socket", 200] == threads["asyncio · socket", 5] == 1
    assert threads["trio · pipe", 200] == 1
    assert set(df.status) == {"held"}


@needs_go
def test_go_blocked_in_read_takes_a_thread_each_but_not_on_sockets():
    df = blocked_reads([300], variants=(("go", "pipe"), ("go", "socket")), settle_s=0.3)
    threads = df.set_index("variant").os_threads
    assert threads["go · pipe"] >= 300
    assert threads["go · socket"] < FEW_THREADS


@needs_node
def test_node_pending_reads_stay_on_a_fixed_pool_of_threads():
    df = blocked_reads([5, 500], variants=(("node", "pipe"),), settle_s=0.3)
    assert df.os_threads.max() == df.os_threads.min() < FEW_THREADS


@needs_node
def test_node_reads_of_a_fed_pipe_all_return_on_a_fixed_pool_of_threads():
    fed = run("node", 5_000, 0, mode="fed")
    assert (fed.status, fed.started, fed.completed) == ("completed", 5_000, 5_000)
    assert fed.max_os_threads < FEW_THREADS


def test_threads_under_an_address_space_cap_fail_and_the_runner_names_ulimit_v():
    result = run("threads", 20_000, 60, mode="pipe", address_space_mb=300)
    assert result.status == "failed"
    assert result.error.startswith("ulimit -v"), result.error
    assert 0 < result.started < 20_000
    assert result.exit_code == 3


def test_a_thread_that_never_runs_is_reported_instead_of_waited_for(monkeypatch):
    # Near a memory limit the kernel may create a thread that dies before its first line of Python;
    # threading.Thread.start() would then wait forever. Simulate that thread: created, never run.
    monkeypatch.setattr(threads, "FIRST_RUN_LIMIT_S", 0.2)
    monkeypatch.setattr(threads._thread, "start_new_thread", lambda function, args: 0)
    started = time.monotonic()
    with pytest.raises(threads.ThreadDied, match="did not run"):
        threads.start_thread(lambda: None)
    assert time.monotonic() - started < 2


def test_a_started_thread_runs_its_body():
    ran = []
    threads.start_thread(lambda: ran.append(True))
    deadline = time.monotonic() + 5
    while not ran and time.monotonic() < deadline:
        time.sleep(0.01)
    assert ran == [True]


def test_threads_stop_at_the_first_machine_limit_and_it_is_named():
    limits = machine_limits()
    count = min(100_000, limits.pid_max, limits.threads_max)
    result = run("threads", count, 120, mode="pipe")
    if result.status == "held":
        pytest.skip(f"this machine started all {count:,} threads")
    assert result.status == "failed"
    assert result.error.split(":")[0] in {"vm.max_map_count", "kernel.pid_max", "kernel.threads-max", "ulimit -u",
                                          "cgroup pids.max", "memory"}


def test_a_program_passing_the_memory_ceiling_is_stopped_and_memory_is_named():
    result = run("asyncio", 200_000, 30, memory_ceiling_mb=40)
    assert result.status == "failed"
    assert result.error.startswith("memory:"), result.error
    assert result.wall_s < 30


def test_a_program_outliving_its_time_limit_is_stopped():
    result = run("asyncio", 10, 60, timeout_s=1.5)
    assert result.status == "failed"
    assert result.error.startswith("time:")
    assert result.wall_s < 10


def test_too_many_socket_readers_for_ulimit_n_are_refused_before_starting():
    limit = machine_limits().open_files
    # The programs keep the soft limit they inherit: it is the one named, with the number to raise it to.
    with pytest.raises(DescriptorLimit, match=rf"its limit \(ulimit -n\) allows {limit:,}\. Raise it with `ulimit -n \d+`"):
        run("asyncio", limit, 1, mode="socket")


def test_the_python_programs_report_their_collector_time_and_can_run_without_it():
    # 20,000 tasks that all stay alive: the collector runs many times over them and frees nothing.
    with_gc = run("asyncio", 20_000, 0.2)
    without = run("asyncio", 20_000, 0.2, gc=False)
    assert with_gc.status == without.status == "completed"
    assert with_gc.gc and with_gc.gc_s > 0
    assert not without.gc and without.gc_s == 0
    with pytest.raises(ValueError, match="Python programs"):
        run("go", 10, 0.1, gc=False)


def test_unknown_runtime_and_mode_are_refused():
    with pytest.raises(ValueError, match="unknown runtime"):
        run("cobol", 1, 1)
    with pytest.raises(ValueError, match="modes"):
        run("node", 1, 1, mode="socket")
    assert "socket" not in RUNTIMES["node"].modes


def test_cli_prints_one_json_object_with_the_documented_keys():
    out = subprocess.run(
        [sys.executable, "-m", "iolab", "sleepers", "--runtime", "asyncio", "--count", "100", "--seconds", "0.2", "--json"],
        capture_output=True, text=True, timeout=60, check=True,
    ).stdout
    result = json.loads(out)
    assert {"runtime", "count", "completed", "wall_s", "peak_rss_mb", "max_os_threads", "error"} <= result.keys()
    assert result["runtime"] == "asyncio" and result["completed"] == 100 and result["error"] is None


def test_cli_rejects_a_negative_count():
    done = subprocess.run(
        [sys.executable, "-m", "iolab", "sleepers", "--runtime", "threads", "--count", "-5"],
        capture_output=True, text=True, timeout=60,
    )
    assert done.returncode == 2 and "negative" in done.stderr


@needs_go
def test_go_past_its_thread_ceiling_fails_and_the_runner_names_go_s_own_limit():
    pids = machine_limits().cgroup_pids
    if pids is not None and pids.max - pids.current < 10_600:  # podman's default pids.max is 2,048
        pytest.skip(f"this cgroup allows {pids.max - pids.current:,} more tasks (pids.max): Go's 10,000 is out of reach")
    result = run("go", 10_500, 60, mode="pipe", settle_s=0.5)
    assert result.status == "failed"
    assert result.error.startswith("Go's own limit: 10,000"), result.error
    assert result.max_os_threads <= 10_000


def test_blocked_readers_that_need_too_many_descriptors_get_a_refused_row():
    n = machine_limits().open_files  # two descriptors a socket reader: twice too many
    df = blocked_reads([n], variants=(("asyncio", "socket"),))
    assert list(df.status) == ["refused"] and "ulimit -n" in df.error[0]


def test_blocked_readers_whose_program_leaves_at_its_time_count_as_held():
    result = run("asyncio", 10, 0.3, mode="socket", settle_s=10)  # it leaves long before it settles
    assert result.status == "held" and result.error is None
    assert result.exit_code == 0 and result.started == 10


def test_the_sampler_sees_a_process_threads_and_their_kernel_stacks_from_outside():
    from iolab.kit.procs import open_process, python_argv
    from iolab.topics.c10k import sampler

    script = "import threading, time; e = threading.Event(); [threading.Thread(target=e.wait, daemon=True).start() for _ in range(50)]; print('up', flush=True); time.sleep(30)"
    with open_process(python_argv("-c", script)) as proc:
        proc.wait_for_line("^up", timeout=30)
        with sampler.open_watch(proc.pid, interval_s=0.02) as watch:
            time.sleep(0.3)  # a dozen readings, the memory map read in some of them
    reading = watch.latest
    assert reading["os_threads"] == 51
    assert reading["kernel_mb"] >= 51 * watch.kernel_stack_kb / 1024
    assert reading["rss_mb"] > 1 and watch.peak("maps") > 51 * 2
    assert [s["t_s"] for s in watch.samples] == sorted(s["t_s"] for s in watch.samples)
