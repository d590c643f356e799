import pytest

from iolab.kit import machine, platforms
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


def test_syn_send_times_double_from_the_first_retry_without_linear_timeouts():
    assert listen_backlog.syn_send_times(retries=4, linear=0) == [0, 1, 3, 7, 15]


def test_syn_send_times_match_the_kernel_documentations_example():
    # Documentation/networking/ip-sysctl.rst (Linux 6.5+), tcp_syn_linear_timeouts: "With an initial RTO of 1 and
    # tcp_syn_linear_timeouts = 4 we would expect SYN RTOs to be: 1, 1, 1, 1, 1, 2, 4, ..."; tcp_syn_retries:
    # the default 6 "corresponds to 67seconds (with tcp_syn_linear_timeouts = 4) till the last retransmission".
    sends = listen_backlog.syn_send_times(retries=6, linear=4)
    assert [later - earlier for earlier, later in zip(sends, sends[1:])][:7] == [1, 1, 1, 1, 1, 2, 4]
    assert sends[-1] == 67
    assert len(sends) == 1 + 6 + 4  # the linear retries come on top of tcp_syn_retries


def test_syn_send_times_default_to_this_kernels_settings():
    # One send, then tcp_syn_retries + tcp_syn_linear_timeouts retries; a kernel before 6.5 has no linear
    # timeouts and doubles at once.
    sends = listen_backlog.syn_send_times()
    linear = machine.sysctl("net.ipv4.tcp_syn_linear_timeouts", default=[0])[0]
    assert len(sends) == 1 + machine.sysctl("net.ipv4.tcp_syn_retries")[0] + linear
    assert sends[:3] in ([0, 1, 2], [0, 1, 3])


@pytest.mark.solo  # connect time against the SYN retry times
def test_a_client_that_met_a_full_queue_connects_at_the_next_syn_retry():
    row = listen_backlog.connect_after_overflow(backlog=1, free_after_s=0.1)
    # Not at once: at a retry, 1 s after the first SYN (a later one if a busy machine dropped that one).
    assert row["connect_s"] > 0.9
    assert min(abs(row["connect_s"] - t) for t in listen_backlog.syn_send_times()) < 0.4


def test_on_a_faked_macos_fill_backlog_counts_the_clients_without_proc_net(monkeypatch):
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    df = listen_backlog.fill_backlog(backlog=0, clients=3, timeout=0.15)
    assert df.connected.tolist() == [True, False, False]  # Linux's backlog + 1, measured without /proc/net
    assert set(df.state) == {"?"} and df.accept_queue.isna().all() and df.overflows.isna().all()
