"""``python -m iolab attack slowloris|idle|slowread HOST:PORT``."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from iolab import servers
from iolab.commands import build_parser, main
from iolab.kit import machine


@pytest.fixture(scope="module")
def timed() -> Iterator[servers.Server]:
    with servers.open_server("trio", header_timeout=0.2, keepalive_timeout=0.2) as server:
        yield server


def test_attack_is_listed_with_the_tools() -> None:
    epilog = build_parser().epilog or ""
    assert epilog.index("tools:") < epilog.index("attack ") < epilog.index("1  processes")


def test_slowloris_reports_408s_in_json(timed: servers.Server, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attack", "slowloris", "--count", "5", "--seconds", "1.5", "--byte-every-ms", "20", "--json",
                 f"127.0.0.1:{timed.port}"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert (report["connected"], report["closed_by_server"], report["answered_408"]) == (5, 5, 5)


@pytest.mark.parametrize("kind", ["idle", "slowread"])
def test_the_summary_names_what_was_held_and_closed(
    kind: str, timed: servers.Server, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["attack", kind, "--count", "3", "--seconds", "1", timed.url]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{kind}: 3 of 3 connected") and "closed by server:" in out


def test_a_low_descriptor_limit_is_an_error_that_says_what_to_raise(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(machine, "open_files_limit", lambda: (100, 100))
    with pytest.raises(SystemExit):
        main(["attack", "idle", "--count", "500", "--seconds", "1", "127.0.0.1:1"])
    assert "ulimit -n" in capsys.readouterr().err


def test_nonsense_settings_are_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["attack", "slowloris", "--seconds", "0", "127.0.0.1:1"])
    assert "seconds" in capsys.readouterr().err
