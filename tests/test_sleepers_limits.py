"""Naming the limit a run met, from the machine's own settings; the launcher's limits."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from iolab.kit.procs import open_process, python_argv
from iolab.topics.c10k import launch, limits

MACHINE = limits.MachineLimits(
    max_map_count=65_530, threads_max=192_730, pid_max=32_768, nproc=1_000, nproc_applies=True,
    address_space_mb=None, open_files=20_000, mem_available_mb=20_000, memory_limit_mb=None,
    tasks_now=200, kernel_stack_kb=16,
)


def reading(**changes):
    base = {"threads": 100, "maps": 500, "vm_size_kb": 100_000, "vm_rss_kb": 50_000, "system_tasks": 300}
    return base | changes


def test_machine_limits_are_read_from_proc():
    read = limits.machine_limits()
    assert read.max_map_count == int(Path("/proc/sys/vm/max_map_count").read_text())
    assert read.pid_max == int(Path("/proc/sys/kernel/pid_max").read_text())
    assert read.threads_max == int(Path("/proc/sys/kernel/threads-max").read_text())
    assert read.tasks_now > 1
    assert 4 <= read.kernel_stack_kb <= 64  # one kernel stack: 16 KiB on x86-64


def test_a_full_memory_map_is_named_vm_max_map_count_with_the_cost_per_thread():
    named = limits.name_limit(reading(threads=21_825, maps=65_531), MACHINE, started=21_824)
    assert named.startswith("vm.max_map_count")
    assert "3.0 per thread" in named and "21,825" in named


def test_running_out_of_process_ids_is_named_pid_max():
    named = limits.name_limit(reading(threads=30_000, system_tasks=32_400), dataclasses.replace(MACHINE, nproc=None))
    assert named.startswith("kernel.pid_max")


def test_ulimit_u_is_named_only_where_it_applies():
    tasks = reading(system_tasks=1_000)
    assert limits.name_limit(tasks, MACHINE).startswith("ulimit -u")
    assert limits.name_limit(tasks, dataclasses.replace(MACHINE, nproc_applies=False)) is None  # root is exempt


def test_go_and_descriptor_limits_are_read_from_the_output():
    go = limits.name_limit(None, MACHINE, output="runtime: program exceeds 10000-thread limit\nfatal error: thread exhaustion")
    assert go.startswith("Go's own limit: 10,000")
    assert limits.name_limit(None, MACHINE, output="OSError: [Errno 24] Too many open files").startswith("ulimit -n")


def test_a_failure_far_from_every_limit_is_not_named():
    assert limits.name_limit(reading(), MACHINE) is None


def test_the_predicted_limits_are_sorted_and_the_map_count_binds_at_three_mappings_a_thread():
    costs = limits.ThreadCosts(maps=3.0, rss_kb=15.0, base_maps=200)
    predicted = limits.predict_thread_limits(MACHINE, costs)
    names = [name for name, _, _ in predicted]
    counts = [n for _, n, _ in predicted]
    assert counts == sorted(counts)
    assert names[0] == "ulimit -u"  # 1,000 for this user beats everything else
    root = limits.predict_thread_limits(dataclasses.replace(MACHINE, nproc_applies=False), costs)
    assert root[0][0] == "vm.max_map_count" and root[0][1] == (65_530 - 200) // 3


def test_thread_costs_are_the_slopes_of_maps_and_memory_over_threads():
    samples = [{"os_threads": n, "maps": 150 + 3 * n, "rss_mb": 20 + n * 16 / 1024} for n in (1, 1000, 2000, 4000)]
    samples.append({"os_threads": 3000, "maps": None, "rss_mb": 999})  # maps not read: left out
    costs = limits.fit_thread_costs(samples)
    assert costs.maps == pytest.approx(3.0)
    assert costs.base_maps == pytest.approx(150)
    assert costs.rss_kb == pytest.approx(16.0)


def test_the_launcher_puts_the_program_first_for_the_oom_killer_without_core_dumps():
    script = "import resource; print(open('/proc/self/oom_score_adj').read().strip(), resource.getrlimit(resource.RLIMIT_CORE)[0], resource.getrlimit(resource.RLIMIT_AS)[0])"
    with open_process(launch.launcher_argv(address_space_mb=1024) + python_argv("-c", script)) as proc:
        line = proc.wait_for_line(r"^-?\d+ ", timeout=30)
    oom, core, address_space = line.string.split()
    assert int(oom) == launch.OOM_FIRST
    assert int(core) == 0
    assert int(address_space) == 1024 * 2**20
