"""iolab.topics.databases.postgres: a throwaway PostgreSQL that starts, answers, and leaves nothing behind."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import sys
import tempfile
import threading
import time

import psutil
import psycopg
import pytest

from iolab.kit import procs
from iolab.kit.guard import running_descendants
from iolab.topics.databases import experiments
from iolab.topics.databases.postgres import (DATABASE_URL_ENV, STARTED_WHEN_READY, close_lab_postgres, lab_postgres,
                                             open_postgres, title)


def _gone(pid: int, timeout: float = 20.0) -> bool:
    """True once ``pid`` no longer runs (a zombie or a reused pid of another program counts as gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE or "postgres" not in proc.name():
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def _select_one(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("select 1").fetchone()[0]


@pytest.fixture(autouse=True)
def _no_database_url(monkeypatch):
    monkeypatch.delenv(DATABASE_URL_ENV, raising=False)


def test_server_answers_and_is_gone_with_its_backends_and_data_directory_after_the_block():
    with open_postgres() as db:
        assert _select_one(db.url) == 1
        assert db.data_dir is not None and (db.data_dir / "PG_VERSION").exists()
        with psycopg.connect(db.url) as conn:
            conn.execute("select 1")
            backends = [p.pid for p in db.backends()]
            assert len(backends) == 1
        pid, data_dir = db.pid, db.data_dir
        helpers = [p.pid for p in db.processes()]
    assert _gone(pid)
    assert all(_gone(p) for p in helpers + backends)
    assert not data_dir.exists()



def test_the_lab_server_is_started_once_shared_and_gone_when_closed():
    try:
        db = lab_postgres()
        assert lab_postgres() is db, "a second call returns the server the first one started"
        assert _select_one(db.url) == 1
        pid, data_dir = db.pid, db.data_dir
    finally:
        close_lab_postgres()
    assert _gone(pid) and not data_dir.exists()
    close_lab_postgres()  # closing again does nothing
    try:
        assert lab_postgres().pid != pid, "after closing, the next call starts a new server"
    finally:
        close_lab_postgres()

def test_the_server_runs_all_its_helpers_when_the_block_starts():
    # The walwriter and the logical replication launcher start just after "ready to accept
    # connections" is logged; a block that began before them saw them appear as new processes.
    with open_postgres() as db:
        helpers = {p.pid: title(p) for p in db.processes()}
        for name in STARTED_WHEN_READY:
            assert any(t.startswith(f"postgres: {name}") for t in helpers.values()), f"no {name} in {helpers}"
        time.sleep(0.5)
        assert {p.pid for p in db.processes()} == set(helpers), "a helper process started after the block began"


@pytest.mark.parametrize("error", [RuntimeError, KeyboardInterrupt])
def test_server_is_stopped_and_removed_when_the_block_fails(error):
    with pytest.raises(error):
        with open_postgres() as db:
            conn = psycopg.connect(db.url)  # left open on purpose: the shutdown must close it
            pid, data_dir = db.pid, db.data_dir
            raise error("stop here")
    conn.close()
    assert _gone(pid)
    assert not data_dir.exists()


def test_server_listens_on_tcp_loopback_when_asked():
    with open_postgres(tcp=True) as db:
        assert "host=127.0.0.1" in db.url
        assert _select_one(db.url) == 1


def test_database_url_is_used_instead_of_starting_a_server(monkeypatch):
    with open_postgres() as real:
        monkeypatch.setenv(DATABASE_URL_ENV, real.url)
        before = {p.pid for p in psutil.Process().children()}
        with open_postgres() as db:
            assert db.url == real.url and db.external and db.pid is None
            assert _select_one(db.url) == 1
            started = {p.pid for p in psutil.Process().children()} - before  # a new postmaster would be one
        assert not started, "open_postgres started processes although IOLAB_DATABASE_URL was set"
        assert _select_one(real.url) == 1  # and leaving its block did not stop that server
        real.wait_backends(0)


def test_a_backend_process_is_forked_per_connection_and_exits_with_it():
    with open_postgres() as db:
        census = experiments.backend_census(db, counts=(0, 1, 3))
        assert census["backends"].tolist() == [0, 1, 3, 0]
        assert all(p.ppid() == db.pid for p in db.processes())


@pytest.fixture
def private_tempdir(monkeypatch):
    """A temporary directory of this test's own for open_postgres' data directories: under
    ``pytest -n``, other workers create and remove theirs in the shared one meanwhile."""
    path = tempfile.mkdtemp(prefix="iolab-t-")  # short: the server's socket path must fit 107 bytes
    os.chmod(path, 0o711)  # as root, the server runs as another user, who must reach its data directory
    monkeypatch.setattr(tempfile, "tempdir", path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("delay_s", [0.3, 1.5])
def test_an_interrupt_while_the_server_starts_leaves_no_process_and_no_directory(delay_s, private_tempdir):
    pattern = os.path.join(private_tempdir, "iolab-pg-*")
    before = set(glob.glob(pattern))
    assert not before
    # An xdist worker ignores SIGINT: Python's own handler again, else the Ctrl-C never arrives and the
    # test waited out its 60 s and passed without testing anything.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    timer = threading.Timer(delay_s, os.kill, (os.getpid(), signal.SIGINT))  # a Ctrl-C in a notebook cell
    timer.start()
    interrupted = False
    try:
        with open_postgres():
            time.sleep(60)  # interrupted here at the latest
    except KeyboardInterrupt:
        interrupted = True
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert interrupted, "the Ctrl-C did not arrive"
    assert set(glob.glob(pattern)) == before
    assert not running_descendants(reap=True)


def _open_and_report(write_fd: int) -> None:
    with open_postgres() as db:
        os.write(write_fd, f"{db.pid} {db.data_dir}\n".encode())
        time.sleep(60)  # killed before this ends


def test_server_shuts_itself_down_when_its_parent_is_killed():
    read_fd, write_fd = os.pipe()
    with procs.open_fork(_open_and_report, write_fd) as child:
        os.close(write_fd)
        line = b""
        while not line.endswith(b"\n"):
            line += procs.read_exactly(read_fd, 1, timeout=60)
        os.close(read_fd)
        pid_text, data_dir = line.decode().split()
        os.kill(child.pid, signal.SIGKILL)  # no finally, no atexit: only the kernel's PDEATHSIG is left
        child.wait(10)
    pid = int(pid_text)
    try:
        assert _gone(pid), "the postmaster survived its parent"
    finally:
        if not _gone(pid, timeout=0.1):
            os.kill(pid, signal.SIGKILL)
        shutil.rmtree(data_dir, ignore_errors=True)  # the killed parent could not remove it


def test_a_folder_below_a_private_one_is_not_reachable_by_the_server_user(tmp_path):
    from iolab.topics.databases.postgres_install import _reachable_by_others

    private = tmp_path / "private"
    (private / "venv").mkdir(parents=True)
    private.chmod(0o700)
    try:
        assert not _reachable_by_others(private / "venv")  # as in a `mktemp -d` clone: initdb could not be run
    finally:
        private.chmod(0o755)


@pytest.mark.parametrize("system, signal_asked", [("linux", signal.SIGINT), ("darwin", 0)])
def test_the_launcher_ties_a_server_to_its_parent_on_linux_only(monkeypatch, system, signal_asked):
    from iolab.kit import platforms
    from iolab.topics.databases.postgres_install import launcher

    monkeypatch.setenv(platforms.FAKE_ENV, system)  # darwin: the path macOS takes, without prctl
    asked = "import ctypes; s = ctypes.c_int(); ctypes.CDLL(None).prctl(2, ctypes.byref(s)); print(s.value)"  # PR_GET_PDEATHSIG
    with procs.open_process([*launcher(-1, -1), sys.executable, "-c", asked]) as child:
        assert child.wait_for_line(r"^\d+$", timeout=10).string == str(int(signal_asked))
