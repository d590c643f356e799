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
    cgroup_pids=None, tasks_now=200, kernel_stack_kb=16,
)
PIDS = limits.CgroupPids(max=4_096, current=100, path="/sys/fs/cgroup/box/pids.max")


def reading(**changes):
    base = {"threads": 100, "maps": 500, "vm_size_kb": 100_000, "vm_rss_kb": 50_000, "system_tasks": 300}
    return base | changes


def test_machine_limits_are_read_from_proc():
    read = limits.machine_limits()
    assert read.max_map_count == int(Path("/proc/sys/vm/max_map_count").read_text())
    assert read.pid_max == int(Path("/proc/sys/kernel/pid_max").read_text())
    assert read.threads_max == int(Path("/proc/sys/kernel/threads-max").read_text())
    assert read.tasks_now > 1
    assert read.cgroup_pids == limits.cgroup_pids()  # None on a machine whose groups set no pids.max
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


def test_a_full_cgroup_is_named_pids_max_with_its_file():
    full = reading(threads=3_990, cgroup_tasks=4_096)
    named = limits.name_limit(full, dataclasses.replace(MACHINE, nproc=None, cgroup_pids=PIDS))
    assert named.startswith("cgroup pids.max: 4,096 of 4,096") and PIDS.path in named
    assert limits.name_limit(full, dataclasses.replace(MACHINE, nproc=None)) is None  # no group limit: not this one


def test_the_cgroup_task_limit_counts_the_room_left_in_threads():
    costs = limits.ThreadCosts(maps=3.0, rss_kb=15.0, base_maps=200)
    predicted = limits.predict_thread_limits(dataclasses.replace(MACHINE, nproc_applies=False, cgroup_pids=PIDS), costs)
    assert predicted[0] == ("cgroup pids.max", 4_096 - 100, PIDS.path)


def cgroup_tree(tmp_path, lines, files):
    """A fake /proc/self/cgroup and /sys/fs/cgroup: ``files`` maps paths under the root to their text."""
    tmp_path.mkdir(exist_ok=True)
    (tmp_path / "self-cgroup").write_text("\n".join(lines) + "\n")
    for name, text in files.items():
        (tmp_path / "root" / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / "root" / name).write_text(text + "\n")
    return {"proc_cgroup": tmp_path / "self-cgroup", "root": tmp_path / "root"}


def test_pids_max_is_read_from_this_process_cgroup_v2_and_the_ancestor_with_least_room_binds(tmp_path):
    where = cgroup_tree(tmp_path, ["0::/box/job"], {
        "box/pids.max": "500", "box/pids.current": "450",           # the parent: 50 left
        "box/job/pids.max": "1000", "box/job/pids.current": "20",   # the process's own group: 980 left
        "other/pids.max": "10", "other/pids.current": "0",          # not this process's group
    })
    pids = limits.cgroup_pids(**where)
    assert (pids.max, pids.current) == (500, 450)
    assert pids.path == str(tmp_path / "root" / "box" / "pids.max")


def test_pids_max_reads_max_as_no_limit_and_a_root_group_has_none(tmp_path):
    assert limits.cgroup_pids(**cgroup_tree(tmp_path / "a", ["0::/box"], {"box/pids.max": "max", "box/pids.current": "7"})) is None
    assert limits.cgroup_pids(**cgroup_tree(tmp_path / "b", ["0::/"], {"cgroup.procs": ""})) is None


def test_pids_max_is_found_in_the_v1_pids_hierarchy_beside_v2(tmp_path):
    where = cgroup_tree(tmp_path, ["4:memory:/m", "8:pids:/box", "0::/"], {
        "pids/box/pids.max": "4096", "pids/box/pids.current": "12", "unified/cgroup.procs": "",
    })
    assert limits.cgroup_pids(**where) == limits.CgroupPids(4096, 12, str(tmp_path / "root" / "pids" / "box" / "pids.max"))


def test_the_memory_limit_is_the_lowest_of_the_group_and_its_ancestors(tmp_path):
    v1 = cgroup_tree(tmp_path / "v1", ["4:memory:/box/job"], {
        "memory/memory.limit_in_bytes": str(2**63 - 4096),  # v1's "no limit"
        "memory/box/memory.limit_in_bytes": str(512 * 2**20), "memory/box/job/memory.limit_in_bytes": str(2**30),
    })
    assert limits.cgroup_memory_limit_mb(**v1) == 512
    v2 = cgroup_tree(tmp_path / "v2", ["0::/box"], {"box/memory.max": "max"})
    assert limits.cgroup_memory_limit_mb(**v2) is None


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
