"""One of chapter 13's servers in a process of its own: ``python -m iolab.topics.completion.server_process SPEC_JSON``.

The spec names the server (``{"server": "uring", "sqpoll": false}``). The process prints the kit's
"listening on" line, serves until SIGTERM or SIGINT, then sends what it counted (requests,
connections, its own system calls where it can count them, CPU seconds) as the kit's child
channel's ``RESULT`` line (:mod:`iolab.kit.channel`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

from iolab.kit import channel, sockets
from iolab.kit.machine import raise_open_files_limit
from iolab.kit.procfs import cpu_seconds
from iolab.topics.completion.tiny_http import Counts

SERVERS = ("epoll", "uvloop", "uring")


@dataclass(frozen=True)
class ServerSpec(channel.Spec):
    """Which server to run, and how."""

    ENTRY: ClassVar[str] = "iolab.topics.completion.server_process"

    server: str
    sqpoll: bool = False  # uring only: a kernel thread takes the submissions (IORING_SETUP_SQPOLL)
    port: int = 0

    def __post_init__(self) -> None:
        if self.server not in SERVERS:
            raise ValueError(f"unknown server {self.server!r}: the servers are {', '.join(SERVERS)}")
        if self.sqpoll and self.server != "uring":
            raise ValueError("sqpoll applies to the uring server only")


def run(spec: ServerSpec) -> dict[str, object]:
    """Serve ``spec`` in this process until SIGTERM or SIGINT; what it counted."""
    counts = Counts()
    raise_open_files_limit()  # 1,000 connections need more than a shell's default 1,024 descriptors at times
    start_cpu = cpu_seconds()
    with sockets.open_listener(spec.port) as listener, sockets.stopped_by_signals():
        sockets.announce(listener)
        if spec.server == "epoll":
            from iolab.topics.completion import epoll_server

            epoll_server.serve(listener, counts)
        elif spec.server == "uvloop":
            from iolab.topics.completion import uvloop_server

            uvloop_server.serve(listener, counts)
        else:
            from iolab.topics.completion import uring_server

            uring_server.serve(listener, counts, sqpoll=spec.sqpoll)
    return dataclasses.asdict(counts) | {"cpu_s": cpu_seconds() - start_cpu}


if __name__ == "__main__":
    channel.child_main(ServerSpec, run)
