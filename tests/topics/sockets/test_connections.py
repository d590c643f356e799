import pytest

from iolab.kit import platforms
from iolab.servers import open_server
from iolab.topics.sockets import connections


@pytest.fixture(scope="module")
def server():
    with open_server("threaded") as s:
        yield s


def test_a_request_by_hand_gets_a_whole_response_and_a_close(server):
    raw = connections.exchange(server.port, connections.request("/"))
    head, _, body = raw.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 OK\r\n")
    assert b"Connection: close" in head
    assert int(head.split(b"Content-Length: ")[1].split(b"\r\n")[0]) == len(body)


def test_a_malformed_request_by_hand_gets_a_4xx(server):
    raw = connections.exchange(server.port, b"GET / HTTP/1.1\r\n\r\n")  # no Host header
    assert raw.startswith(b"HTTP/1.1 400 ")


def test_the_server_answers_only_after_the_last_byte_of_the_head(server):
    data = connections.request("/")
    df = connections.dribble(server.port, data, pause_s=0.005)
    assert len(df) == len(data)
    assert not df.answered.iloc[:-1].any()
    assert df.answered.iloc[-1]


def test_a_new_connection_costs_more_than_a_round_trip_on_an_open_one():
    df = connections.setup_costs(rounds=200, repeats=3)
    cost = df.groupby("what").us_each.median()
    assert cost["new connection (connect, accept, close)"] > 1.5 * cost["round trip on an open connection"]


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_keepalive_serves_more_and_leaves_no_time_wait(server):
    df = connections.keepalive_costs(server.url + "/", connections=1, duration_s=1.0).set_index("keepalive")
    assert (df.errors == 0).all()
    assert df.rps[True] > df.rps[False]
    assert df.time_wait[False] > 10 * max(1, df.time_wait[True])


def test_on_a_faked_macos_keepalive_costs_counts_no_time_wait_it_cannot_see(server, monkeypatch):
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    df = connections.keepalive_costs(server.url + "/", connections=1, duration_s=0.2)
    assert df.time_wait.isna().all() and (df.rps > 0).all()
