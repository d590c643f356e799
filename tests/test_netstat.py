import contextlib

from iolab import netstat, tcpstates

SAMPLE = """\
TcpExt: SyncookiesSent ListenOverflows ListenDrops
TcpExt: 0 12 15
IpExt: InNoRoutes InOctets
IpExt: 0 690803874
"""


def test_parse_reads_one_group_by_name():
    assert netstat.parse(SAMPLE) == {"SyncookiesSent": 0, "ListenOverflows": 12, "ListenDrops": 15}
    assert netstat.parse(SAMPLE, "IpExt") == {"InNoRoutes": 0, "InOctets": 690803874}
    assert netstat.parse(SAMPLE, "MPTcpExt") == {}


def test_the_real_file_has_the_listen_counters():
    counters = netstat.tcpext()
    assert set(netstat.LISTEN_COUNTERS) <= set(counters)
    assert all(isinstance(v, int) and v >= 0 for v in counters.values())


def test_difference_counts_what_rose_and_a_missing_counter_as_zero():
    before, after = {"ListenOverflows": 3, "ListenDrops": 4}, {"ListenOverflows": 5, "ListenDrops": 4, "New": 2}
    assert netstat.difference(before, after) == {"ListenOverflows": 2, "ListenDrops": 0, "New": 2}
    assert netstat.difference(before, after, ("ListenOverflows",)) == {"ListenOverflows": 2}


def test_changes_sees_syns_dropped_by_a_full_accept_queue():
    # A listener with backlog 1 that never accepts holds 2 connections; every later SYN is dropped.
    with tcpstates.open_listener(1) as listener, contextlib.ExitStack() as stack:
        port = listener.getsockname()[1]
        with netstat.changes(*netstat.LISTEN_COUNTERS) as delta:
            clients = [stack.enter_context(tcpstates.start_connect(port)) for _ in range(10)]
            connected = [tcpstates.wait_connected(sock, 0.2) for sock in clients]
    assert connected[:2] == [True, True] and not any(connected[2:])
    # Counted per packet and namespace-wide: at least one per refused client, possibly more.
    assert delta["ListenOverflows"] >= 8 and delta["ListenDrops"] >= 8


def test_changes_is_filled_even_when_the_block_fails():
    try:
        with netstat.changes("ListenOverflows") as delta:
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert set(delta) == {"ListenOverflows"} and delta["ListenOverflows"] >= 0

