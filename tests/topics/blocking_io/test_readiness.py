import os
import resource

import pytest

from iolab.kit import machine, platforms, procfs
from iolab.topics.blocking_io import readiness


def test_idle_pipes_keep_read_ends_low_for_select_and_are_closed_after():
    with readiness.open_idle_pipes(20) as (reads, writes):
        assert len(reads) == len(writes) == 20
        assert max(reads) < readiness.FD_SETSIZE <= min(writes)
        fds = reads + writes
    for fd in fds:
        with pytest.raises(OSError):
            os.fstat(fd)


def test_idle_pipes_refuse_more_than_the_hard_limit_allows_with_the_fix_in_the_message():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on descriptors here")
    with pytest.raises(machine.DescriptorLimit, match=rf"allows {hard:,}\. Raise it with `ulimit -n \d+`"):
        with readiness.open_idle_pipes(hard):
            pass


@pytest.mark.parametrize("selector", list(readiness.SELECTORS))
def test_wait_cost_sees_exactly_the_ready_pipe(selector):
    with readiness.open_idle_pipes(5) as (reads, writes):
        costs = readiness.wait_cost(selector, reads, writes[-1], repeats=2, budget_s=0.01)
        assert len(costs) == 2 and all(c > 0 for c in costs)
        os.set_blocking(reads[-1], False)
        with pytest.raises(BlockingIOError):  # the byte that made it ready was read back
            os.read(reads[-1], 1)


def test_select_refuses_descriptors_past_fd_setsize():
    with readiness.open_idle_pipes(1) as (reads, writes):
        with pytest.raises(ValueError, match="FD_SETSIZE"):
            readiness.wait_cost("select", [writes[0]], writes[0])


# Solo, for two reasons: it compares costs in time; and its 2,000 pipes take 32,000 pages, past
# fs.pipe-user-pages-soft (16,384) for their user. Past it, a sandboxed kernel of the same user (the honest
# stage grades beside the shared stage) gets 8 KiB pipes and F_SETPIPE_SZ refused with EPERM: notebook 02's
# honest ex-02-bigger-pipe would lose its points.
@pytest.mark.solo
def test_poll_cost_grows_with_watched_pipes_and_epoll_cost_does_not():
    df = readiness.sweep([10, 2000], ["poll", "epoll"], repeats=3, budget_s=0.02)
    cost = df.groupby(["selector", "watched"]).us_per_wait.min()
    assert cost["poll", 2000] > 5 * cost["poll", 10]
    assert cost["epoll", 2000] < 5 * cost["epoll", 10]  # flat, give or take a busy machine's noise
    assert cost["epoll", 2000] < cost["poll", 2000] / 5


def test_sweep_skips_select_where_it_cannot_watch():
    df = readiness.sweep([5, 1500], ["select"], repeats=1, budget_s=0.005)
    assert set(df.watched) == {5}


def test_sweep_names_unknown_selectors():
    with pytest.raises(ValueError, match="kqueue"):
        readiness.sweep([1], ["kqueue"])


def test_spinning_burns_a_core_while_blocking_burns_almost_nothing():
    df = readiness.waiting_costs(["spin on non-blocking read()", "block in read()"], seconds=0.6, wakeups=4)
    cpu = df.set_index("strategy").cpu_s_per_s
    # Loose bounds: on a loaded machine the spinner gets only a share of a core.
    assert cpu["spin on non-blocking read()"] > max(0.05, 10 * cpu["block in read()"])
    assert cpu["block in read()"] < 0.05
    calls = df.set_index("strategy").calls_per_s
    assert calls["block in read()"] < 10 < 1000 < calls["spin on non-blocking read()"]


def test_waiting_costs_per_wakeup_gives_every_message_its_delay_beside_its_run():
    df = readiness.waiting_costs(["block in read()"], seconds=0.3, wakeups=3, repeats=2, per_wakeup=True)
    assert len(df) == 6 and list(df.wakeup) == [0, 1, 2, 0, 1, 2]
    assert (df.wake_us > 0).all()
    for _, run in df.groupby("repeat"):  # each run's median is the median of its own messages
        assert run.wake_p50_us.nunique() == 1 and run.wake_p50_us.iloc[0] == run.wake_us.median()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="needs two CPUs")
def test_the_waiter_and_the_sender_each_run_on_a_half_of_the_cores_and_the_caller_gets_its_cpus_back():
    before = os.sched_getaffinity(0)

    def receive(*args):  # in the child, as it starts waiting: where it may run
        os.write(report_w, repr(sorted(os.sched_getaffinity(0))).encode())
        return real(*args)

    real, (report_r, report_w) = readiness._receive, os.pipe()
    try:
        readiness._receive = receive
        row = readiness.cpu_while_waiting("block in read()", seconds=0.2, wakeups=2)
        child_cpus = [os.read(report_r, 100)]  # before the next child writes to the same pipe
        unplaced = readiness.cpu_while_waiting("block in read()", seconds=0.2, wakeups=2, placed=False)
        child_cpus.append(os.read(report_r, 100))
    finally:
        readiness._receive = real
        os.close(report_r), os.close(report_w)
    waiter, sender = ({int(c) for c in str(row[k]).split(",")} for k in ("waiter_cpus", "sender_cpus"))
    assert waiter and sender and not waiter & sender and waiter | sender == before
    assert child_cpus[0] == repr(sorted(waiter)).encode()  # the child ran where the row says
    assert child_cpus[1] == repr(sorted(before)).encode() and unplaced["waiter_cpus"] == unplaced["sender_cpus"] == ""
    assert os.sched_getaffinity(0) == before


def test_unknown_strategy_is_refused():
    with pytest.raises(ValueError, match="strategy"):
        readiness.cpu_while_waiting("hope")


def test_affordable_drops_counts_past_the_hard_limit():
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard limit on descriptors here")
    assert readiness.affordable([1, 10, hard]) == [1, 10]


def test_on_a_faked_macos_the_sweep_has_no_epoll_and_a_childs_cpu_comes_from_psutil(monkeypatch):
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    assert readiness.measurable() == ["select", "poll"]  # and kqueue on a real Mac
    assert set(readiness.sweep([1, 2], repeats=1, budget_s=0.001).selector) == {"select", "poll"}
    with pytest.raises(platforms.FacilityMissing):
        procfs.cpu_seconds(os.getpid())
    assert readiness._cpu_seconds(os.getpid()) > 0
