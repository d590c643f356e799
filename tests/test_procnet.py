import socket

from iolab.kit import procnet, sockets

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
