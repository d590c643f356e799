"""``python -m iolab networks rtt|far|tls``."""

from __future__ import annotations

import json
import os

import pytest

from iolab.commands import build_parser, main
from iolab.netlab import available, namespaces

needs_root = pytest.mark.skipif(available() is not None, reason=available() or "")


def test_networks_is_listed_under_chapter_12() -> None:
    epilog = build_parser().epilog or ""
    assert epilog.index("12 slow clients and real networks") < epilog.index("networks ")


@needs_root
@pytest.mark.solo  # it asserts the measured round trip within 10 % of the configured one: a timing
def test_rtt_prints_one_row_per_setting_and_leaves_no_lab(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["networks", "--json", "rtt", "--rtt-ms", "10", "20", "--samples", "3"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["configured_rtt_ms"] for r in rows] == [10, 20]
    assert all(abs(r["error_pct"]) < 10 for r in rows)
    assert not [n for n in namespaces.list_namespaces() if namespaces.creator(n) == os.getpid()]


@needs_root
def test_tls_shows_the_handshake_round_trips(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["networks", "--json", "tls", "--rtt-ms", "20", "--samples", "2"]) == 0
    phases = {r["kind"]: r for r in json.loads(capsys.readouterr().out)}
    assert phases["plain"]["handshake_ms"] < 1 < 19 < phases["TLS 1.3"]["handshake_ms"] < phases["TLS 1.2"]["handshake_ms"]
