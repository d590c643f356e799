"""Chapter 13's socket experiment: each tiny server under the course's load generator, its calls counted.

:func:`measure` starts one server (:mod:`~iolab.topics.completion.server_process`), runs a closed
loop of ``connections`` keep-alive clients against it for ``seconds``, and returns one row: the
rate and latency the clients saw, what the server counted (requests, its own system calls, its CPU
time), and, with ``traced=True``, every system call ``strace`` counted. :func:`compare` makes the
chapter's table, each setting once untraced (the rates) and once traced (the counts).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from typing import Any

from iolab.kit import channel
from iolab.kit.procs import START_SECONDS
from iolab.kit.sockets import HOST
from iolab.load import LoadSpec, run_load
from iolab.topics.completion import support, syscall_counts
from iolab.topics.completion.server_process import ServerSpec

RESULT_SECONDS = 10.0  # a stopped server sends its counts at once; this only catches a hung one


@contextlib.contextmanager
def open_tiny_server(spec: ServerSpec) -> Iterator[tuple[int, channel.Child]]:
    """Start the server ``spec`` names and wait until it listens; its port and process. Leaving stops it."""
    with channel.open_child(spec) as child:
        yield child.wait_listening(START_SECONDS).port, child


def _counts(child: channel.Child) -> dict[str, Any]:
    """Stop the server and read what it counted."""
    child.process.stop()
    child.wait_progress(RESULT_SECONDS)
    assert child.result is not None, "the server stopped without sending its counts"
    return child.result


def measure(server: str, connections: int, seconds: float, *, sqpoll: bool = False,
            traced: bool = False) -> dict[str, Any]:
    """One run of ``connections`` clients for ``seconds`` against ``server``; one row (see the module)."""
    spec = ServerSpec(server, sqpoll=sqpoll)
    if server == "uring":
        support.require("sockets")  # here, in words, rather than as a server that never listens
    with open_tiny_server(spec) as (port, child):
        load = LoadSpec(f"http://{HOST}:{port}/", connections=connections, duration_s=seconds)
        with contextlib.ExitStack() as stack:
            counted = stack.enter_context(syscall_counts.open_syscall_count(child.pid)) if traced else None
            result = run_load(load)
        counts = _counts(child)
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
    if counted is not None:
        row |= {"syscalls": counted.total, "syscalls_per_request": counted.total / requests if requests else None,
                "top_syscalls": ", ".join(f"{name} {n}" for name, n in
                                          sorted(counted.calls.items(), key=lambda kv: -kv[1])[:4])}
    return row


def compare(servers: Iterable[str], connection_counts: Iterable[int], seconds: float, *,
            traced: bool = True, sqpoll: bool = False) -> list[dict[str, Any]]:
    """:func:`measure` each server at each connection count, untraced and (if ``traced``) traced."""
    rows = []
    for connections in connection_counts:
        for server in servers:
            rows.append(measure(server, connections, seconds, sqpoll=sqpoll and server == "uring"))
            if traced:
                rows.append(measure(server, connections, seconds, sqpoll=sqpoll and server == "uring", traced=True))
    return rows
