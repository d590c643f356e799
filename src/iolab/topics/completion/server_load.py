"""Chapter 13's socket experiment: each tiny server under the course's load generator, its calls counted.

:func:`measure` starts one server (:mod:`~iolab.topics.completion.server_process`), runs a closed
loop of ``connections`` keep-alive clients against it for ``seconds``, and returns one row: the
rate and latency the clients saw, what the server counted (requests, its own system calls, its CPU
time), and, with ``traced=True``, every system call ``strace`` counted. The chapter's table of such
rows is :func:`iolab.topics.completion.experiments.server_calls`: every setting untraced (the rates,
in turns) and once traced (the counts).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iolab.kit import channel, placement
from iolab.kit.procs import START_SECONDS
from iolab.load import LoadSpec, run_load
from iolab.topics.completion import c_programs, support, syscall_counts
from iolab.topics.completion.server_process import SERVERS, ServerSpec

RESULT_SECONDS = 10.0  # a stopped server sends its counts at once; this only catches a hung one


@dataclass(frozen=True)
class Serving:
    """A tiny server started by :func:`open_tiny_server`: where it listens, and its process (to read its counts)."""

    spec: ServerSpec
    listening: channel.Listening
    child: channel.Child

    @property
    def port(self) -> int:
        """The port it listens on."""
        return self.listening.port

    @property
    def pid(self) -> int:
        """Its process id (what ``strace -p`` attaches to)."""
        return self.listening.pid

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:41234``."""
        return self.listening.url


@contextlib.contextmanager
def open_tiny_server(spec: ServerSpec) -> Iterator[Serving]:
    """Start the server ``spec`` names and wait until it listens; where, and its process. Leaving stops it."""
    with channel.open_child(spec) as child:
        yield Serving(spec, child.wait_listening(START_SECONDS), child)


def _counts(child: channel.Child) -> dict[str, Any]:
    """Stop the server and read what it counted."""
    child.process.stop()
    child.wait_progress(RESULT_SECONDS)
    assert child.result is not None, "the server stopped without sending its counts"
    return child.result


def _where(pid: int, halves: placement.Halves | None) -> dict[str, str]:
    """The CPUs the server's thread, its SQPOLL thread (if any) and the load were allowed ("1", "0,1")."""
    server = poller = ""
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            if task.name == str(pid):
                server = placement.listed(os.sched_getaffinity(pid))
            elif (task / "comm").read_text().startswith("iou-sqp"):
                poller = placement.listed(os.sched_getaffinity(int(task.name)))
    return {"server_cpus": server, "poller_cpus": poller, "load_cpus": placement.listed(halves.load) if halves else ""}


def measure(server: str, connections: int, seconds: float, *, sqpoll: bool = False,
            traced: bool = False, placed: bool = False) -> dict[str, Any]:
    """One run of ``connections`` clients for ``seconds`` against ``server``; one row (see the module).

    ``placed`` starts the server on one half of the cores and runs the load on the other
    (:mod:`iolab.kit.placement`), and the row says where each ran, the SQPOLL thread's CPUs included: left to
    the scheduler, that thread shared a core with the server in some runs and with the load in others, and
    the two placements gave opposite verdicts on the chapter's machine.
    """
    spec = ServerSpec(server, sqpoll=sqpoll)
    if SERVERS[server].uring:
        support.require("sockets")  # here, in words, rather than as a server that never listens
    if SERVERS[server].program:
        c_programs.binary(SERVERS[server].program)  # built here: no compiler is an error in words, not a dead child
    halves = placement.halves() if placed else None
    with contextlib.ExitStack() as serving_stack:
        with placement.on_cpus(halves.server if halves else None):  # the server, and its poller, inherit these
            serving = serving_stack.enter_context(open_tiny_server(spec))
        load = LoadSpec(f"{serving.url}/", connections=connections, duration_s=seconds)
        with contextlib.ExitStack() as stack, placement.on_cpus(halves.load if halves else None):
            counted = stack.enter_context(syscall_counts.open_syscall_count(serving.pid)) if traced else None
            result = run_load(load)
        where = _where(serving.pid, halves) if placed else {}
        counts = _counts(serving.child)
    requests = counts["requests"]
    row = {
        "server": server + (" (SQPOLL)" if sqpoll else ""),
        "connections": connections,
        "traced": traced,
        "rps": result.rps,
        "p50_ms": (result.percentiles() or {}).get("p50"),
        "p99_ms": (result.percentiles() or {}).get("p99"),
        "errors": result.error_count,
        "answered": result.requests,  # as the clients counted them, within the run
        "requests": requests,  # as the server counted them: also those still on their way at the end
        "server_cpu_s": counts["cpu_s"],
        "cpu_us_per_request": 1e6 * counts["cpu_s"] / requests if requests else float("nan"),
        "own_calls_per_request": counts["calls"] / requests if requests and counts["calls"] is not None else None,
    }
    row |= where
    if counted is not None:
        row |= {"syscalls": counted.total, "syscalls_per_request": counted.total / requests if requests else None,
                "top_syscalls": ", ".join(f"{name} {n}" for name, n in
                                          sorted(counted.calls.items(), key=lambda kv: -kv[1])[:4])}
    return row

