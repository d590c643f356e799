import pytest

from iolab.kit import procnet
from iolab.topics.sockets import accept_overflow


def test_late_handshake_acks_meet_a_full_queue_after_connect_has_returned():
    with procnet.changes(*procnet.LISTEN_COUNTERS) as delta:
        df = accept_overflow.ack_dropped(backlog=4, late=3, free_after_s=0.2)
    # Every late client is connected at once, as far as it can tell...
    assert (df.client_state == "ESTABLISHED").all()
    assert df.connect_ms.max() < 100
    # ...but only one took the queue's last place; the server holds the others half-open.
    assert sorted(df.server_state) == ["ESTABLISHED", "SYN_RECV", "SYN_RECV"]
    assert delta["ListenOverflows"] >= 2
    # A dropped client's first bytes wait for a retransmission after the queue has room.
    queued = df[df.server_state == "ESTABLISHED"].first_bytes_s.item()
    dropped = df[df.server_state == "SYN_RECV"].first_bytes_s
    assert (dropped > queued).all()


def test_more_late_clients_than_the_backlog_is_refused():
    with pytest.raises(ValueError, match="between 1 and the backlog"):
        accept_overflow.ack_dropped(backlog=2, late=3)
