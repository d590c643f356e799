import pytest

from iolab.kit import machine
from iolab.topics.sockets import listen_backlog


@pytest.mark.solo  # connect times against a 100 ms bound
def test_a_full_backlog_queues_backlog_plus_one_and_leaves_the_rest_in_syn_sent():
    df = listen_backlog.fill_backlog(backlog=2, clients=5, timeout=0.15)
    assert list(df.connected) == [True, True, True, False, False]
    assert list(df.state) == ["ESTABLISHED"] * 3 + ["SYN_SENT"] * 2
    assert df.accept_queue.max() == 3
    assert df.connect_ms.iloc[:3].max() < 100 < df.connect_ms.iloc[3:].min()
    assert df.overflows.iloc[-1] >= 2


def test_fill_backlog_is_bounded():
    with pytest.raises(ValueError, match="200"):
        listen_backlog.fill_backlog(1, 1000)


def test_syn_send_times_follow_the_kernels_retry_rule():
    assert listen_backlog.syn_send_times(retries=4, linear=0) == [0, 1, 3, 7, 15]
    assert listen_backlog.syn_send_times(retries=6, linear=4) == [0, 1, 2, 3, 4, 6, 10]


def test_syn_send_times_default_to_this_kernels_settings():
    # One send and one retry per tcp_syn_retries; a kernel before 6.7 has no linear timeouts and doubles at once.
    sends = listen_backlog.syn_send_times()
    assert len(sends) == 1 + machine.sysctl("net.ipv4.tcp_syn_retries")[0]
    assert sends[:3] in ([0, 1, 2], [0, 1, 3])


@pytest.mark.solo  # connect time against the SYN retry times
def test_a_client_that_met_a_full_queue_connects_at_the_next_syn_retry():
    row = listen_backlog.connect_after_overflow(backlog=1, free_after_s=0.1)
    # Not at once: at a retry, 1 s after the first SYN (a later one if a busy machine dropped that one).
    assert row["connect_s"] > 0.9
    assert min(abs(row["connect_s"] - t) for t in listen_backlog.syn_send_times()) < 0.4
