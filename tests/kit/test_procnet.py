import contextlib
import socket

from iolab.kit import procnet, sockets
from iolab.topics.sockets import listen_backlog

SAMPLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     0        0 12345 1 0 100 0 0 10 0
   1: 0100007F:D431 0100007F:1F90 02 00000001:00000000 01:000000C8 00000002     0        0 0 2 0 100 0 0 10 -1
"""


def test_parse_reads_addresses_states_queues_and_retransmits():
    listener, client = procnet.parse(SAMPLE)
    assert listener.local == ("127.0.0.1", 8080) and listener.state == "LISTEN" and listener.recv_queue == 3
    assert client.remote == ("127.0.0.1", 8080) and client.state == "SYN_SENT"
    assert client.send_queue == 1 and client.retransmits == 2


def test_parse_with_a_port_keeps_only_that_ports_sockets():
    assert [s.local[1] for s in procnet.parse(SAMPLE, port=8080)] == [8080, 54321]
    assert procnet.parse(SAMPLE, port=0xD431)[0].state == "SYN_SENT"
    assert procnet.parse(SAMPLE, port=9999) == []


def test_a_listening_socket_and_its_accept_queue_are_seen_live():
    with sockets.open_listener(0, 8) as listener:
        port = listener.getsockname()[1]
        assert procnet.accept_queue(port) == 0
        with socket.create_connection(("127.0.0.1", port)), socket.create_connection(("127.0.0.1", port)):
            assert procnet.accept_queue(port) == 2
            assert procnet.count_states(port)["ESTABLISHED"] == 4  # two clients, two server ends
            listener.accept()[0].close()
            assert procnet.accept_queue(port) == 1


def test_backlog_drops_is_a_counter():
    first = procnet.backlog_drops()
    assert 0 <= first <= procnet.backlog_drops()


# --- /proc/net/netstat ---------------------------------------------------------------------------

NETSTAT_SAMPLE = """\
TcpExt: SyncookiesSent ListenOverflows ListenDrops
TcpExt: 0 12 15
IpExt: InNoRoutes InOctets
IpExt: 0 690803874
"""


def test_parse_reads_one_group_by_name():
    assert procnet.parse_netstat(NETSTAT_SAMPLE) == {"SyncookiesSent": 0, "ListenOverflows": 12, "ListenDrops": 15}
    assert procnet.parse_netstat(NETSTAT_SAMPLE, "IpExt") == {"InNoRoutes": 0, "InOctets": 690803874}
    assert procnet.parse_netstat(NETSTAT_SAMPLE, "MPTcpExt") == {}


def test_the_real_file_has_the_listen_counters():
    counters = procnet.tcpext()
    assert set(procnet.LISTEN_COUNTERS) <= set(counters)
    assert all(isinstance(v, int) and v >= 0 for v in counters.values())


def test_difference_counts_what_rose_and_a_missing_counter_as_zero():
    before, after = {"ListenOverflows": 3, "ListenDrops": 4}, {"ListenOverflows": 5, "ListenDrops": 4, "New": 2}
    assert procnet.difference(before, after) == {"ListenOverflows": 2, "ListenDrops": 0, "New": 2}
    assert procnet.difference(before, after, ("ListenOverflows",)) == {"ListenOverflows": 2}


def test_changes_sees_syns_dropped_by_a_full_accept_queue():
    # A listener with backlog 1 that never accepts holds 2 connections; every later SYN is dropped.
    with listen_backlog.open_listener(1) as listener, contextlib.ExitStack() as stack:
        port = listener.getsockname()[1]
        with procnet.changes(*procnet.LISTEN_COUNTERS) as delta:
            clients = [stack.enter_context(listen_backlog.start_connect(port)) for _ in range(10)]
            connected = [listen_backlog.wait_connected(sock, 0.2) for sock in clients]
    assert connected[:2] == [True, True] and not any(connected[2:])
    # Counted per packet and namespace-wide: at least one per refused client, possibly more.
    assert delta["ListenOverflows"] >= 8 and delta["ListenDrops"] >= 8


def test_changes_is_filled_even_when_the_block_fails():
    try:
        with procnet.changes("ListenOverflows") as delta:
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert set(delta) == {"ListenOverflows"} and delta["ListenOverflows"] >= 0

