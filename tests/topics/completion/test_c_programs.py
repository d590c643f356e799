"""Chapter 13's servers in C: built once per source, rebuilt when it changes, left out in words without a compiler."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from iolab.kit import platforms
from iolab.topics.completion import c_programs, experiments, server_load, support
from iolab.topics.completion.server_process import SERVERS, ServerSpec
from iolab.topics.completion.tiny_http import OK

no_compiler = pytest.mark.skipif(c_programs.missing() is not None, reason=str(c_programs.missing()))
PROGRAMS = [server.name for server in SERVERS.values() if server.program]


@no_compiler
def test_a_program_is_built_once_and_again_when_its_source_changes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sources = tmp_path / "c"
    shutil.copytree(c_programs.SOURCES, sources)
    monkeypatch.setattr(c_programs, "SOURCES", sources)
    first = c_programs.binary("epoll")
    built_at = first.stat().st_mtime_ns
    assert c_programs.binary("epoll") == first and first.stat().st_mtime_ns == built_at
    (sources / "epoll.c").write_text((sources / "epoll.c").read_text() + "\n/* changed */\n")
    second = c_programs.binary("epoll")
    assert second != first and second.exists()


@no_compiler
def test_a_source_the_compiler_refuses_is_an_error_quoting_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    sources = tmp_path / "c"
    shutil.copytree(c_programs.SOURCES, sources)
    monkeypatch.setattr(c_programs, "SOURCES", sources)
    (sources / "epoll.c").write_text("int main(void) { return undeclared; }\n")
    with pytest.raises(c_programs.BuildFailed, match="(?s)could not build epoll.c.*undeclared"):
        c_programs.binary("epoll")
    assert not list((tmp_path / "cache").rglob("epoll-*"))


def test_without_a_compiler_the_c_servers_are_left_out_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    assert "no C compiler" in str(c_programs.missing())
    assert not set(PROGRAMS) & set(experiments.available_servers())
    assert "epoll" in experiments.available_servers()
    with pytest.raises(c_programs.BuildFailed, match="no C compiler"):
        server_load.measure(PROGRAMS[0], connections=1, seconds=0.1)


def test_off_linux_the_c_servers_are_left_out_with_the_platforms_note(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(platforms.FAKE_ENV, "darwin")
    assert "macOS" in str(c_programs.missing())
    assert not set(PROGRAMS) & set(experiments.available_servers())
    with pytest.raises(c_programs.BuildFailed, match="macOS"):
        c_programs.binary("epoll")


def test_the_chapters_runs_leave_the_c_servers_to_their_own_comparison() -> None:
    assert PROGRAMS and not set(PROGRAMS) & set(experiments.python_servers())


@no_compiler
@pytest.mark.parametrize("server", [s for s in PROGRAMS if s in experiments.available_servers()])
def test_a_c_server_answers_pipelined_requests_in_order_and_counts_its_calls(server: str) -> None:
    with server_load.open_tiny_server(ServerSpec(server)) as serving:
        with socket.create_connection(("127.0.0.1", serving.port), timeout=5) as sock:
            sock.sendall(b"GET / HTTP/1.1\r\n\r\n" * 3 + b"GET / HTTP/1.1\r\nHost:")
            received = b""
            while len(received) < 3 * len(OK):
                received += sock.recv(4096)
            sock.sendall(b" a\r\n\r\n")
            while len(received) < 4 * len(OK):
                received += sock.recv(4096)
        assert received == 4 * OK
        counts = server_load._counts(serving.child)
    assert counts["requests"] == 4 and counts["connections"] == 1
    # The CPU time is the C program's from its own start: the Python start-up before the exec (imports,
    # a tenth of a second or more) is not in it.
    assert counts["calls"] > counts["waits"] > 0 and 0 <= counts["cpu_s"] < 0.05


def test_without_io_uring_the_c_ring_server_is_refused_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(support.FORCE_ENV, "1")
    assert "uring (C)" not in experiments.available_servers()
    with pytest.raises(support.Unavailable, match=support.FORCE_ENV):
        server_load.measure("uring (C)", connections=1, seconds=0.1)
