"""The sandboxes a submission runs in: what it can read, write, reach and leave behind."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

from cheats import DAEMON, DAEMON_SECONDS
from iolab.commands import main
from iolab.homework import sandbox

needs_bwrap = pytest.mark.skipif(sandbox.usable() is not None, reason=sandbox.usable() or "")


def _run(box, code: str) -> subprocess.CompletedProcess:
    return subprocess.run(box.wrap([sys.executable, "-c", code]), capture_output=True, text=True, timeout=60)


@needs_bwrap
def test_a_sandboxed_program_sees_the_kit_but_not_the_course_notebooks_nor_other_folders(tmp_path):
    (tmp_path / "scratch").mkdir()
    (tmp_path / "secret.txt").write_text("the key")
    done = _run(sandbox.Sandbox(tmp_path / "scratch"), f"""
import os, iolab, pathlib
print(pathlib.Path(iolab.__file__).exists())
print(pathlib.Path(iolab.__file__).resolve().parents[2].joinpath('notebooks').exists())
print(os.path.exists({str(tmp_path / 'secret.txt')!r}), os.path.exists('/etc/shadow'), os.getuid())
""")
    assert done.stdout.split() == ["True", "False", "False", "False", str(sandbox.INSIDE_UID)], done.stderr


@needs_bwrap
def test_a_sandboxed_program_writes_only_its_scratch_folder(tmp_path):
    (tmp_path / "scratch").mkdir()
    done = _run(sandbox.Sandbox(tmp_path / "scratch"), """
import pathlib, iolab
pathlib.Path('mine.txt').write_text('ok')
for target in (pathlib.Path(iolab.__file__), pathlib.Path('/usr/lib/planted')):
    try:
        target.write_text('x')
        print('wrote', target)
    except OSError:
        pass
""")
    assert done.stdout == "" and (tmp_path / "scratch" / "mine.txt").read_text() == "ok", done.stderr


@needs_bwrap
def test_a_sandboxed_program_has_a_loopback_of_its_own(tmp_path):
    (tmp_path / "scratch").mkdir()
    server = socket.create_server(("127.0.0.1", 0))
    with server:
        done = _run(sandbox.Sandbox(tmp_path / "scratch"), f"""
import socket
own = socket.create_server(("127.0.0.1", 0)); print("bound")
try:
    socket.create_connection(("127.0.0.1", {server.getsockname()[1]}), timeout=2); print("reached the host")
except OSError:
    print("refused")
""")
    assert done.stdout.split() == ["bound", "refused"], done.stderr


@needs_bwrap
def test_a_double_forked_daemon_ends_with_the_sandbox(tmp_path):
    (tmp_path / "scratch").mkdir()
    _run(sandbox.Sandbox(tmp_path / "scratch"), DAEMON)
    time.sleep(0.5)
    assert [p for p in psutil.process_iter(["cmdline"]) if p.info["cmdline"] == ["sleep", DAEMON_SECONDS]] == []


def test_grading_refuses_without_bwrap_and_says_what_to_install(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "bwrap", lambda: None)
    (tmp_path / "someone").mkdir()
    assert main(["homework", "grade", str(tmp_path)]) == 2
    out = capsys.readouterr().out
    assert "apt install bubblewrap" in out and "--no-sandbox" in out


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"), reason="needs root and setpriv")
def test_as_nobody_a_program_cannot_read_roots_files_and_writes_its_scratch(tmp_path):
    key = tmp_path / "root-only" / "key.txt"
    key.parent.mkdir(mode=0o700)
    key.write_text("42")
    (tmp_path / "scratch").mkdir()
    done = subprocess.run(sandbox.Unprivileged(tmp_path / "scratch", {"MARK": "m"}).wrap(
        ["sh", "-c", f"id -u; echo $MARK; cat {key} || echo denied; touch mine && echo wrote"]),
        capture_output=True, text=True, cwd=tmp_path / "scratch", timeout=60)
    assert done.stdout.split() == [str(sandbox.NOBODY), "m", "denied", "wrote"], done.stderr


@pytest.fixture
def open_folder():
    folder = Path(tempfile.mkdtemp(prefix="iolab-test-"))
    os.chmod(folder, 0o755)
    yield folder
    shutil.rmtree(folder)


@pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists("/usr/bin/setpriv"), reason="needs root and setpriv")
def test_without_bwrap_the_kernel_cannot_enter_the_checkers_folder_nor_signal_it(open_folder):
    # Below a folder every user may enter (pytest's own are root's only): only the sandbox keeps them apart.
    checker_folder, kernel_folder = open_folder / "check" / "scratch", open_folder / "kernel" / "scratch"
    checker_folder.mkdir(parents=True)
    kernel_folder.mkdir(parents=True)
    (checker_folder / "secret").write_text("hidden tests")
    checker = subprocess.Popen(sandbox.confine("nobody", checker_folder, role="checker").wrap(["sleep", "30"]),
                               cwd=checker_folder)
    try:
        probe = (f"id -u; cat {checker_folder}/secret || echo denied; ls {checker_folder.parent} || echo unlisted; "
                 f"kill -STOP {checker.pid} || echo unsignalled")
        done = subprocess.run(sandbox.confine("nobody", kernel_folder).wrap(["sh", "-c", probe]), cwd=kernel_folder,
                              capture_output=True, text=True, timeout=60)
    finally:
        checker.kill()
        checker.wait()
    assert done.stdout.split() == [str(sandbox.NOBODY), "denied", "unlisted", "unsignalled"], done.stdout + done.stderr
    assert sandbox.CHECKER_UID != sandbox.NOBODY and checker_folder.stat().st_uid == sandbox.CHECKER_UID
