import os
import threading
import time

import pytest

from iolab.kit import procfs
from iolab.kit.procs import open_fork


def test_status_of_this_process_counts_its_threads():
    stop = threading.Event()
    threads = [threading.Thread(target=stop.wait) for _ in range(3)]
    for t in threads:
        t.start()
    try:
        me = procfs.status(os.getpid())
        assert me.threads >= 4
        assert me.state in "RS"
        assert me.vm_size_kb > me.vm_rss_kb > 0
        assert me.vm_pte_kb > 0
    finally:
        stop.set()
        for t in threads:
            t.join()


@pytest.mark.solo  # measures CPU time or timing: needs the cores to itself
def test_a_child_blocked_in_read_sleeps_and_a_busy_child_runs():
    r, w = os.pipe()

    def spin():
        while True:
            pass

    try:
        with open_fork(os.read, r, 1) as blocked, open_fork(spin) as busy:
            assert procfs.wait_for_state(blocked.pid, "S").state_name == "sleeping"
            assert procfs.wait_for_state(busy.pid, "R").state_name == "running"
            time.sleep(0.3)
            assert procfs.cpu_seconds(busy.pid) > 0.1
            assert procfs.cpu_seconds(blocked.pid) < 0.05
    finally:
        os.close(r)
        os.close(w)


def test_an_exited_unreaped_child_is_a_zombie_without_memory():
    with open_fork(lambda: 0) as child:
        zombie = procfs.wait_for_state(child.pid, "Z")
        assert zombie.vm_rss_kb == 0
        child.wait(timeout=5)
    assert not procfs.exists(child.pid)


def test_memory_rollup_splits_private_and_shared():
    rollup = procfs.memory_rollup(os.getpid())
    assert rollup.rss_kb >= rollup.private_kb > 0
    assert rollup.pss_kb <= rollup.rss_kb


def test_peak_resident_memory_stays_above_what_was_freed():
    size = 64 * 2**20
    block = bytearray(size)
    block[:: 4096] = b"x" * len(range(0, size, 4096))  # touch every page: now it is resident
    holding = procfs.status(os.getpid())
    del block  # a block this large is its own mapping: freeing it returns the pages at once
    after = procfs.status(os.getpid())
    # The kernel folds per-thread RSS counts into these lines lazily: allow a few hundred pages of lag.
    assert after.vm_hwm_kb >= holding.vm_rss_kb - 2048
    assert after.vm_rss_kb < after.vm_hwm_kb - 32 * 1024


def test_meminfo_reads_a_machine_wide_figure_and_names_a_missing_one():
    assert procfs.meminfo_kb("MemTotal") > procfs.meminfo_kb("MemAvailable") > 0
    with pytest.raises(KeyError, match="NoSuchLine"):
        procfs.meminfo_kb("NoSuchLine")


def _spin_then_sleep(cpu_s: float) -> None:
    end = time.process_time() + cpu_s
    while time.process_time() < end:
        pass
    time.sleep(60)  # ended by the with block


@pytest.mark.solo  # measures CPU time
def test_tree_cpu_adds_a_childs_cpu_to_its_parents_own():
    with open_fork(_spin_then_sleep, 0.3) as child:
        procfs.wait_for_state(child.pid, "S", timeout=20)  # asleep: its 0.3 s are spent
        own, tree = procfs.cpu_seconds(), procfs.tree_cpu_seconds(os.getpid())
        assert procfs.cpu_seconds(child.pid) >= 0.29
        assert tree - own >= 0.29 - 0.02  # /proc counts in 10 ms ticks


@pytest.mark.solo  # measures CPU time
def test_this_process_cpu_seconds_grows_with_work_and_not_with_sleep():
    t0 = procfs.cpu_seconds()
    time.sleep(0.05)
    slept = procfs.cpu_seconds() - t0
    sum(range(10_000_000))
    worked = procfs.cpu_seconds() - t0 - slept
    assert slept < 0.02 < worked
