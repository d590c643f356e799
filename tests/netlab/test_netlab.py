"""The kit's own server, load generator and hostile clients, each on its side of a netlab link (needs root)."""

from __future__ import annotations

import subprocess

import pytest

from iolab.kit import sockets
from iolab.kit.procs import python_argv
from iolab.load import LoadSpec, hostile, run_load
from iolab.netlab import available, open_netlab
from iolab.servers import open_server

needs_lab = pytest.mark.skipif(available() is not None, reason=available() or "")


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.10", "10.78.0.1", "::1", "localhost"])
def test_a_server_listens_only_on_the_loopback_or_in_the_lab_range(host: str) -> None:
    with pytest.raises(ValueError, match="127.0.0.1"):
        sockets.check_host(host)
    run = subprocess.run(python_argv("-m", "iolab", "serve", "asyncio", "--host", host),
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2 and "127.0.0.1" in run.stderr


def test_the_lab_range_outside_a_lab_says_where_to_run_the_server() -> None:
    assert sockets.check_host("10.77.0.1") == "10.77.0.1"
    with pytest.raises(OSError, match="server namespace"):
        sockets.open_listener(host="10.77.0.1")


@needs_lab
def test_server_load_and_attack_across_the_link() -> None:
    with open_netlab(delay_ms=5) as lab:
        with open_server("asyncio", host=lab.server_ip, namespace=lab.server_ns) as server:
            assert server.url.startswith(f"http://{lab.server_ip}:")
            result = run_load(LoadSpec(server.url + "/", connections=2, duration_s=1.0, workers=1,
                                       namespace=lab.client_ns))
            assert result.requests > 10 and result.error_count == 0
            assert result.percentiles()["p50"] >= 9.0  # a round trip of 2 x 5 ms, at least
            with hostile.idle(server.url, count=3, seconds=5, namespace=lab.client_ns) as attack:
                report = attack.report()
            assert report.connected == 3 and report.failed == 0
    with pytest.raises(FileNotFoundError, match="no network namespace"):
        hostile.idle("10.77.0.1:80", count=1, seconds=2, namespace="iolab-no-such-namespace").start()
