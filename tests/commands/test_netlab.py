"""``python -m iolab netlab up|status|down``."""

from __future__ import annotations

import json
import signal
import subprocess
import sys

import pytest

from iolab.commands import build_parser, main
from iolab.netlab import available, namespaces

needs_root = pytest.mark.skipif(available() is not None, reason=available() or "")


def test_netlab_is_listed_under_chapter_12() -> None:
    epilog = build_parser().epilog or ""
    assert epilog.index("12 slow clients and real networks") < epilog.index("netlab ")


def test_up_refuses_nonsense_settings(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["netlab", "up", "--loss", "2"])
    assert "loss" in capsys.readouterr().err


@needs_root
def test_up_keeps_a_lab_until_ctrl_c_and_status_lists_it(capsys: pytest.CaptureFixture[str]) -> None:
    up = subprocess.Popen([sys.executable, "-m", "iolab", "netlab", "up", "--delay-ms", "5"],
                          stdout=subprocess.PIPE, text=True)
    try:
        lines = [up.stdout.readline() for _ in range(6)]
        assert lines[-1].startswith("Ctrl-C"), lines
        server_ns = lines[0].split()[2].rstrip(",")
        assert main(["netlab", "status", "--json"]) == 0
        rows = {r["namespace"]: r for r in json.loads(capsys.readouterr().out)}
        assert rows[server_ns]["creator"] == up.pid and rows[server_ns]["creator_alive"]
        up.send_signal(signal.SIGINT)
        # Generous: alone it takes 0.1 s, but deleting namespaces waits for the kernel, which is slow
        # while other tests create and delete theirs (a CI run once took over 10 s here).
        assert up.wait(30) == 0
        assert "lab removed" in up.stdout.read()
        assert server_ns not in namespaces.list_namespaces()
    finally:
        up.kill()
        up.wait()
        up.stdout.close()


@needs_root
def test_ctrl_c_ends_the_lab_even_when_started_with_sigint_ignored() -> None:
    # A background job of a script (and some test runners' children) starts with SIGINT ignored;
    # Python keeps it ignored unless told otherwise, and the lab would then outlive Ctrl-C.
    up = subprocess.Popen([sys.executable, "-m", "iolab", "netlab", "up"], stdout=subprocess.PIPE, text=True,
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
    try:
        lines = [up.stdout.readline() for _ in range(6)]
        assert lines[-1].startswith("Ctrl-C"), lines
        up.send_signal(signal.SIGINT)
        assert up.wait(30) == 0
        assert "lab removed" in up.stdout.read()
    finally:
        up.kill()
        up.wait()
        up.stdout.close()


@needs_root
def test_down_removes_only_the_labs_of_dead_creators(capsys: pytest.CaptureFixture[str]) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    left = namespaces.name_for("client", 0, pid=dead.pid)
    namespaces.create(left)
    try:
        assert main(["netlab", "down"]) == 0
        assert f"removed {left}" in capsys.readouterr().out
        assert left not in namespaces.list_namespaces()
    finally:
        namespaces.delete(left)
