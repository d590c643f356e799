"""Fork N worker processes, wait for them, and end them all on SIGTERM or SIGINT.

The parent serves nothing: it forks, waits until every worker says it is ready (an asyncio worker
with ``--offload`` first starts its process pool), announces the port, then waits for the workers.
Workers stay in the parent's process group, so that ``procs.open_process`` (and Ctrl-C in a
terminal) reaches them too, and they leave through ``os._exit`` (``procs.run_child``) so that none
runs the parent's clean-up a second time.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import socket
import time
from collections.abc import Callable, Sequence

from iolab.kit import procs, sockets

# How long workers get to leave after SIGTERM before SIGKILL: they hold no state worth saving.
GRACE_SECONDS = 2.0


def _end(pids: set[int]) -> None:
    # A worker may be gone already: reaped by the os.wait() that the stopping signal interrupted.
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE_SECONDS
    while pids and time.monotonic() < deadline:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return  # none left to reap
        if pid:
            pids.discard(pid)
        else:
            time.sleep(0.01)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, ChildProcessError):
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)


# A job is what a worker runs: it serves until stopped, and calls its argument once it is ready.
Job = Callable[[Callable[[], None]], object]


def _say_ready(fd: int) -> None:
    os.write(fd, b".")
    os.close(fd)


def _run_job(job: Job, ready_r: int, ready_w: int) -> object:
    os.close(ready_r)
    return job(functools.partial(_say_ready, ready_w))


def _wait_until_ready(ready_r: int, count: int) -> None:
    # One byte per ready worker. EOF first means a worker died before it was ready: the wait
    # for the workers that follows reports it.
    received = 0
    while received < count:
        chunk = os.read(ready_r, count - received)
        if not chunk:
            return
        received += len(chunk)


def serve_workers(jobs: Sequence[Job], listeners: Sequence[socket.socket]) -> int:
    """Fork a worker per job, announce the port of ``listeners`` once all are ready, wait until stopped; the exit code.

    "Ready" is the job's call of its argument, so the "listening on" line means every worker's
    processes exist and serve. A worker that dies on its own is reported, not replaced: the course
    wants to see it.
    """
    pids: set[int] = set()
    with sockets.stopped_by_signals():
        try:
            ready_r, ready_w = os.pipe()
            try:
                # The worker's serving loop installs its own handlers; until then, and after, a signal
                # ends it plainly instead of raising the parent's Stop in the parent's copied frames.
                for job in jobs:
                    pids.add(procs.start_fork(_run_job, job, ready_r, ready_w, new_group=False))
            finally:
                os.close(ready_w)  # the workers hold the write end now: EOF when all are gone
            try:
                _wait_until_ready(ready_r, len(jobs))
            finally:
                os.close(ready_r)
            sockets.announce(listeners[0])
            # The parent serves nothing. Its copies would keep a dead worker's socket open, and
            # the kernel would go on queueing connections there that nobody accepts.
            for listener in listeners:
                listener.close()
            while pids:
                pid, status = os.wait()
                pids.discard(pid)
                print(f"worker {pid} exited with code {os.waitstatus_to_exitcode(status)}", flush=True)
            return 1
        finally:
            # Reached on Stop (SIGTERM, SIGINT) and on any error: no worker outlives the parent.
            _end(pids)
    return 0
