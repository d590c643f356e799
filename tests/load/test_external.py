"""``iolab.load.external``: wrk's and ab's reports parsed to the same figures; missing tools named."""

from __future__ import annotations

import pytest

from iolab.load import external

WRK = """\
Running 2s test @ http://127.0.0.1:41000/
  1 threads and 50 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   250.00us  100.00us   3.10ms   91.00%
    Req/Sec   104.80k     3.00k  110.00k    70.00%
  Latency Distribution
     50%  238.00us
     75%  300.00us
     90%  400.00us
     99%    1.25ms
  208640 requests in 2.00s, 17.51MB read
  Socket errors: connect 0, read 2, write 0, timeout 3
  Non-2xx or 3xx responses: 4
Requests/sec: 104238.38
Transfer/sec:      8.76MB
"""

AB = """\
Server Software:        nginx
Document Path:          /static/sprite.png
Document Length:        13263 bytes

Concurrency Level:      50
Time taken for tests:   1.000 seconds
Complete requests:      60195
Failed requests:        7
Keep-Alive requests:    59600
Requests per second:    60194.22 [#/sec] (mean)
Time per request:       0.831 [ms] (mean)

Percentage of the requests served within a certain time (ms)
  50%      1
  66%      1
  99%      2
 100%     12 (longest request)
"""


def test_wrk_report_gives_rate_counts_errors_and_percentiles_in_ms() -> None:
    r = external.parse_wrk(WRK, connections=50)
    assert (r.requests, r.rps, r.seconds) == (208640, 104238.38, 2.0)
    assert r.failed == 2 + 3 + 4  # socket errors plus non-2xx answers
    assert r.p50_ms == pytest.approx(0.238) and r.p99_ms == pytest.approx(1.25)


def test_ab_report_gives_the_same_figures() -> None:
    r = external.parse_ab(AB, connections=50)
    assert (r.requests, r.failed, r.rps, r.seconds) == (60195, 7, 60194.22, 1.0)
    assert (r.p50_ms, r.p99_ms) == (1.0, 2.0)
    assert "output" not in r.row() and r.row()["tool"] == "ab"


def test_something_else_is_not_mistaken_for_a_report() -> None:
    with pytest.raises(ValueError, match="not a wrk report"):
        external.parse_wrk("Segmentation fault", 1)
    with pytest.raises(ValueError, match="not an ab report"):
        external.parse_ab("socket: Too many open files (24)", 1)


def test_a_missing_tool_is_named_with_its_package(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert not external.have("wrk")
    with pytest.raises(external.ToolMissing, match="apt install apache2-utils"):
        external.run_ab("http://127.0.0.1:1/", 1, 1)
    with pytest.raises(external.ToolMissing, match="nginx-light"):
        with external.open_nginx():
            pass


@pytest.mark.skipif(not external.have("nginx"), reason="nginx is not installed")
def test_nginx_serves_the_tiny_body_and_the_static_file_then_is_gone() -> None:
    import urllib.request

    from iolab.kit import guard

    with external.open_nginx() as base:
        assert urllib.request.urlopen(base + "/").read() == b"hello, world\n"
        assert len(urllib.request.urlopen(base + "/static/sprite.png").read()) == 13_263
    assert not guard.running_descendants()
