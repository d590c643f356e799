"""Start, watch and stop processes so that none outlives the code that started it.

Two context managers, one for each way a notebook makes a process:

- ``open_process(argv)`` runs a program in a process group of its own;
- ``open_fork(fn, *args)`` forks this interpreter; the child runs ``fn`` and leaves with ``os._exit``.

Leaving the ``with`` block, normally, on an error or on KeyboardInterrupt, sends the whole process
group SIGTERM, then SIGKILL after a grace period, and reaps the child, so it never lingers as a
zombie. Killing the *group* matters: a server's workers are its children, and killing only the
parent would orphan them, still holding the listening port.
"""

from __future__ import annotations

import collections
import contextlib
import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

# How long a kit program may take to say it is ready: Python's start-up and imports on a busy two-core machine.
START_SECONDS = 30.0
# How long a process gets between SIGTERM and SIGKILL: enough for a server to close its
# sockets and reap its own workers, short enough that an interrupted cell returns promptly.
GRACE_SECONDS = 3.0
# How many lines of a child's output are kept for error messages.
KEPT_LINES = 50
# How long the output of a process that has exited may take to reach the reading thread.
EXIT_DRAIN_S = 2.0
# The environment of a child whose address space is measured: one malloc arena (as in source 001).
# By default glibc reserves 64 MiB of address space for each arena a new thread mallocs in, up to 8
# per core, which would swamp the threads' stacks and make the figure depend on the number of cores.
ONE_MALLOC_ARENA = {"MALLOC_ARENA_MAX": "1"}


class ProcessTimeout(TimeoutError):
    """A process did not do what was awaited within its time limit."""


class ProcessFailed(RuntimeError):
    """A process exited while it was still awaited."""


def _signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to a process group; False if the group is already gone."""
    try:
        os.killpg(pgid, sig)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:  # the group id was reused by someone else's processes
        return False


def _exit_code(status: int) -> int:
    """waitpid's status as a shell would show it: the exit code, or -signal."""
    return os.waitstatus_to_exitcode(status)


def _wait_pid(pid: int, timeout: float | None) -> int | None:
    """Reap ``pid`` within ``timeout`` seconds; its exit code, or None if it is still running."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            done, status = os.waitpid(pid, 0 if deadline is None else os.WNOHANG)
        except ChildProcessError:  # reaped elsewhere (e.g. by a SIGCHLD handler)
            return 0
        if done:
            return _exit_code(status)
        if time.monotonic() >= deadline:
            return None
        time.sleep(delay)
        delay = min(delay * 2, 0.05)


def _stop_group(pid: int, reap: Callable[[float | None], int | None], grace: float) -> int:
    """SIGTERM the group led by ``pid``, SIGKILL it after ``grace`` s; the leader's exit code."""
    _signal_group(pid, signal.SIGTERM)
    code = reap(grace)
    # SIGKILL the group even when the leader left in time: its own children may not have.
    _signal_group(pid, signal.SIGKILL)
    if code is None:
        code = reap(None)
    return code


# --- programs -------------------------------------------------------------------------------------


class ManagedProcess:
    """A running program started by :func:`open_process`; its output is collected as it comes."""

    def __init__(self, popen: subprocess.Popen[str], argv: Sequence[str]) -> None:
        self.popen = popen
        self.argv = list(argv)
        self.pid = popen.pid
        self.lines: collections.deque[str] = collections.deque(maxlen=KEPT_LINES)
        self._unread: collections.deque[str] = collections.deque()
        self._new_line = threading.Condition()
        self._eof = False
        if popen.stdout is not None:
            # A child that writes to a pipe nobody reads blocks once the pipe is full (64 KiB on
            # Linux), so a thread reads it for as long as the child lives.
            threading.Thread(target=self._drain, name=f"drain-{self.pid}", daemon=True).start()
        else:
            self._eof = True

    def _drain(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            with self._new_line:
                self.lines.append(line.rstrip("\n"))
                self._unread.append(line.rstrip("\n"))
                self._new_line.notify_all()
        with self._new_line:
            self._eof = True
            self._new_line.notify_all()

    def wait_for_line(self, pattern: str, timeout: float = 10.0) -> re.Match[str]:
        """Wait for an output line matching the regular expression ``pattern``; its match."""
        regex = re.compile(pattern)
        deadline = time.monotonic() + timeout
        exited_at = None
        with self._new_line:
            while True:
                while self._unread:
                    match = regex.search(self._unread.popleft())
                    if match:
                        return match
                if exited_at is None and self.popen.poll() is not None:
                    exited_at = time.monotonic()
                # A process that has exited may have left its last lines in the pipe, still on their
                # way to _drain: wait for the end of its output, briefly (a child it left behind may
                # hold the pipe open).
                if self._eof or (exited_at is not None and time.monotonic() - exited_at > EXIT_DRAIN_S):
                    raise ProcessFailed(
                        f"{self.describe()} exited with code {self.popen.wait()} before printing "
                        f"a line matching {pattern!r}; its last output:\n{self.tail()}"
                    )
                left = deadline - time.monotonic()
                if left <= 0:
                    raise ProcessTimeout(
                        f"{self.describe()} printed no line matching {pattern!r} within "
                        f"{timeout:g} s; its last output:\n{self.tail()}"
                    )
                self._new_line.wait(left if exited_at is None else min(left, EXIT_DRAIN_S))

    def tail(self, n: int = 10) -> str:
        """The last ``n`` lines the process printed."""
        return "\n".join(list(self.lines)[-n:]) or "(nothing)"

    def describe(self) -> str:
        """The command line, shortened, with the pid."""
        command = " ".join(self.argv)
        return f"process {self.pid} ({command[:80]}{'...' if len(command) > 80 else ''})"

    def poll(self) -> int | None:
        """The exit code, or None while it runs."""
        return self.popen.poll()

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the process to exit; its exit code (ProcessTimeout if it does not)."""
        try:
            return self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            raise ProcessTimeout(f"{self.describe()} still running after {timeout:g} s") from None

    def stop(self, grace: float = GRACE_SECONDS) -> int:
        """End the process and its whole group; its exit code (negative: the signal)."""

        def reap(timeout: float | None) -> int | None:
            try:
                return self.popen.wait(timeout)
            except subprocess.TimeoutExpired:
                return None

        return _stop_group(self.pid, reap, grace)


@contextlib.contextmanager
def open_process(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    capture: bool = True,
    grace: float = GRACE_SECONDS,
    pass_fds: Sequence[int] = (),
) -> Iterator[ManagedProcess]:
    """Run ``argv`` in a new process group; leaving the block ends the group and reaps it.

    With ``capture`` the child's stdout and stderr are read line by line (see
    :meth:`ManagedProcess.wait_for_line`); without it they go to this process's own. ``pass_fds``
    are descriptors the child inherits (a control pipe), as in :class:`subprocess.Popen`.
    """
    popen = subprocess.Popen(
        list(argv),
        env=None if env is None else {**os.environ, **env},
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE if capture else None,
        stderr=subprocess.STDOUT if capture else None,
        text=True,
        bufsize=1,
        start_new_session=True,  # its own session and group: killpg reaches all it starts
        pass_fds=tuple(pass_fds),
    )
    process = ManagedProcess(popen, argv)
    try:
        yield process
    finally:
        process.stop(grace)


def python_argv(*args: str) -> list[str]:
    """The command line that runs this interpreter with ``args`` (``-u``: output unbuffered)."""
    return [sys.executable, "-u", *args]


# --- forked children ------------------------------------------------------------------------------


@dataclass
class Forked:
    """A child made by :func:`open_fork`."""

    pid: int
    fork_seconds: float = 0.0  # how long fork() itself took, in the parent
    exit_code: int | None = None

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to exit and reap it; its exit code (ProcessTimeout if it does not)."""
        if self.exit_code is None:
            self.exit_code = _wait_pid(self.pid, timeout)
            if self.exit_code is None:
                raise ProcessTimeout(f"forked child {self.pid} still running after {timeout:g} s")
        return self.exit_code

    def stop(self, grace: float = GRACE_SECONDS) -> int:
        """End the child and its group if still running; its exit code."""
        if self.exit_code is None:
            self.exit_code = _stop_group(self.pid, lambda t: _wait_pid(self.pid, t), grace)
        else:
            _signal_group(self.pid, signal.SIGKILL)  # whatever the child itself left behind
        return self.exit_code


def run_child(fn: Callable[..., object], *args: object) -> None:
    """The child's side of a fork: run ``fn`` and leave with ``os._exit``, whatever happens.

    ``os._exit`` and not ``sys.exit``: the child holds a copy of the parent's whole state, and a
    normal exit would run the parent's atexit handlers and flush the parent's buffered output a
    second time. A Jupyter kernel's child must never return into the kernel's own loop.
    """
    code = 1
    try:
        result = fn(*args)
        code = result if isinstance(result, int) else 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        os._exit(code)


def start_fork(fn: Callable[..., object], *args: object, new_group: bool) -> int:
    """Fork; the child runs ``fn(*args)`` and exits (see :func:`run_child`); the child's pid.

    With ``new_group`` the child leads a process group of its own, so that killing the group ends
    whatever the child starts too. Without it the child stays in this process's group, as a
    server's workers do, so that a signal to the server's group reaches them.
    """
    sys.stdout.flush()  # or the child's copy of unflushed output would be printed twice
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        if new_group:
            os.setpgid(0, 0)
        # A signal ends the child plainly, instead of running the parent's handlers in the copy.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        run_child(fn, *args)
    if new_group:
        # Both sides set the group, so that a kill right after fork cannot miss the child.
        with contextlib.suppress(OSError):
            os.setpgid(pid, pid)
    return pid


@contextlib.contextmanager
def open_fork(fn: Callable[..., object], *args: object, grace: float = GRACE_SECONDS) -> Iterator[Forked]:
    """Fork; the child runs ``fn(*args)`` (its int result is the exit code) and exits.

    The parent gets a :class:`Forked`. Leaving the block ends the child (and anything it started)
    if it still runs, and reaps it.
    """
    start = time.perf_counter()
    pid = start_fork(fn, *args, new_group=True)
    child = Forked(pid, fork_seconds=time.perf_counter() - start)
    try:
        yield child
    finally:
        child.stop(grace)


def read_exactly(fd: int, n: int, timeout: float = 10.0) -> bytes:
    """Read ``n`` bytes from a pipe, looping over short reads; ProcessTimeout if they do not come."""
    data = bytearray()
    deadline = time.monotonic() + timeout
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while len(data) < n:
            left = deadline - time.monotonic()
            if left <= 0 or not sel.select(left):
                raise ProcessTimeout(f"got {len(data)} of {n} bytes from fd {fd} within {timeout:g} s")
            chunk = os.read(fd, n - len(data))
            if not chunk:
                raise ProcessFailed(f"fd {fd} closed after {len(data)} of {n} bytes")
            data += chunk
    return bytes(data)
