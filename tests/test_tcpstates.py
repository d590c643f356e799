import socket

import pytest

from iolab.topics.sockets import tcpstates

SAMPLE = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1F90 00000000:0000 0A 00000000:00000003 00:00000000 00000000     0        0 12345 1 0 100 0 0 10 0
   1: 0100007F:D431 0100007F:1F90 02 00000001:00000000 01:000000C8 00000002     0        0 0 2 0 100 0 0 10 -1
"""


def test_parse_reads_addresses_states_queues_and_retransmits():
    listener, client = tcpstates.parse(SAMPLE)
    assert listener.local == ("127.0.0.1", 8080) and listener.state == "LISTEN" and listener.recv_queue == 3
    assert client.remote == ("127.0.0.1", 8080) and client.state == "SYN_SENT"
    assert client.send_queue == 1 and client.retransmits == 2


def test_a_listening_socket_and_its_accept_queue_are_seen_live():
    with tcpstates.open_listener(8) as listener:
        port = listener.getsockname()[1]
        assert tcpstates.accept_queue(port) == 0
        with socket.create_connection(("127.0.0.1", port)), socket.create_connection(("127.0.0.1", port)):
            assert tcpstates.accept_queue(port) == 2
            assert tcpstates.count_states(port)["ESTABLISHED"] == 4  # two clients, two server ends
            listener.accept()[0].close()
            assert tcpstates.accept_queue(port) == 1


def test_walk_through_shows_the_textbook_states_in_order():
    df = tcpstates.walk_through()
    states = df.groupby("step", sort=False).state.apply(set)
    steps = list(states.index)
    assert states.iloc[0] == {""}  # a socket only bound is not listed
    assert states.iloc[1] == {"LISTEN"}
    connected = df[df.step == steps[2]]
    assert set(connected.state) == {"LISTEN", "ESTABLISHED"}
    assert connected[connected.state == "LISTEN"].recv_q.item() == 1  # completed, not yet accepted
    assert df[df.step == steps[4]].recv_q.max() == 5  # b"hello" waiting in the server's buffer
    # The closer's side is FIN_WAIT1 until the peer's ACK is processed, then FIN_WAIT2.
    assert "CLOSE_WAIT" in states.iloc[6] and states.iloc[6] & {"FIN_WAIT1", "FIN_WAIT2"}
    assert "TIME_WAIT" in states.iloc[7]


def test_a_full_backlog_queues_backlog_plus_one_and_leaves_the_rest_in_syn_sent():
    df = tcpstates.fill_backlog(backlog=2, clients=5, timeout=0.15)
    assert list(df.connected) == [True, True, True, False, False]
    assert list(df.state) == ["ESTABLISHED"] * 3 + ["SYN_SENT"] * 2
    assert df.accept_queue.max() == 3
    assert df.connect_ms.iloc[:3].max() < 100 < df.connect_ms.iloc[3:].min()
    assert df.overflows.iloc[-1] >= 2


def test_syn_send_times_follow_the_kernels_retry_rule():
    assert tcpstates.syn_send_times(retries=4, linear=0) == [0, 1, 3, 7, 15]
    assert tcpstates.syn_send_times(retries=6, linear=4) == [0, 1, 2, 3, 4, 6, 10]


def test_a_client_that_met_a_full_queue_connects_at_the_next_syn_retry():
    row = tcpstates.connect_after_overflow(backlog=1, free_after_s=0.1)
    # Not at once: at a retry, 1 s after the first SYN (a later one if a busy machine dropped that one).
    assert row["connect_s"] > 0.9
    assert min(abs(row["connect_s"] - t) for t in tcpstates.syn_send_times()) < 0.4


def test_backlog_drops_is_a_counter():
    first = tcpstates.backlog_drops()
    assert 0 <= first <= tcpstates.backlog_drops()


def test_fill_backlog_is_bounded():
    with pytest.raises(ValueError, match="200"):
        tcpstates.fill_backlog(1, 1000)


def test_parse_with_a_port_keeps_only_that_ports_sockets():
    assert [s.local[1] for s in tcpstates.parse(SAMPLE, port=8080)] == [8080, 54321]
    assert tcpstates.parse(SAMPLE, port=0xD431)[0].state == "SYN_SENT"
    assert tcpstates.parse(SAMPLE, port=9999) == []
