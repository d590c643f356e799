"""One of chapter 13's servers in a process of its own: ``python -m iolab.topics.completion.server_process SPEC_JSON``.

The spec names the server (``{"server": "uring", "sqpoll": false}``), one of :data:`SERVERS`, the
chapter's table of them (read as :data:`iolab.servers.MODELS` is). The process prints the kit's
"listening on" line, serves until SIGTERM or SIGINT, then sends what it counted (requests,
connections, its own system calls where it can count them, CPU seconds) as the kit's child
channel's ``RESULT`` line (:mod:`iolab.kit.channel`).
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import socket
from dataclasses import dataclass
from typing import ClassVar, NoReturn

from iolab.kit import channel, sockets
from iolab.kit.machine import raise_open_files_limit
from iolab.kit.procfs import cpu_seconds
from iolab.topics.completion import c_programs
from iolab.topics.completion.tiny_http import Counts


@dataclass(frozen=True)
class TinyServer:
    """One of the chapter's servers: its name, how it waits, the module whose ``serve`` runs it, what it takes."""

    name: str
    waits: str
    module: str  # imported only to run it: uvloop and the io_uring binding load with their server alone
    sqpoll: bool = False  # whether the sqpoll setting applies (its ``serve`` takes ``sqpoll=``)
    uring: bool = False  # whether it needs io_uring for sockets (``support.unavailable("sockets")``)
    epoll: bool = False  # whether it waits in epoll, which only Linux has (``platforms.missing("epoll")``)
    program: str = ""  # a C program (:mod:`~iolab.topics.completion.c_programs`) that replaces the process, if any

    def serve(self, listener: socket.socket, counts: Counts, sqpoll: bool = False) -> None:
        """Run this server on ``listener`` until SIGTERM or SIGINT, counting in ``counts``."""
        settings = {"sqpoll": sqpoll} if self.sqpoll else {}
        importlib.import_module(self.module).serve(listener, counts, **settings)


SERVERS: dict[str, TinyServer] = {
    server.name: server
    for server in (
        TinyServer("epoll", "readiness, in Python: epoll_wait, then a recv and a send per request",
                   "iolab.topics.completion.epoll_server", epoll=True),
        TinyServer("uvloop", "readiness, in C: libuv's loop, an asyncio Protocol per connection",
                   "iolab.topics.completion.uvloop_server"),
        TinyServer("uring", "completions: one io_uring_enter per turn hands over the sends and takes what came",
                   "iolab.topics.completion.uring_server", sqpoll=True, uring=True),
        TinyServer("epoll (C)", "readiness, in C: epoll_server's loop without Python", "", epoll=True, program="epoll"),
        TinyServer("uring (C)", "completions, in C: uring_server's loop without Python, buffers given back through a ring",
                   "", uring=True, program="uring"),
    )
}


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
        if self.sqpoll and not SERVERS[self.server].sqpoll:
            takers = ", ".join(name for name, server in SERVERS.items() if server.sqpoll)
            raise ValueError(f"sqpoll applies to the {takers} server only")


def run(spec: ServerSpec) -> dict[str, object]:
    """Serve ``spec`` in this process until SIGTERM or SIGINT; what it counted."""
    counts = Counts()
    raise_open_files_limit()  # 1,000 connections need more than a shell's default 1,024 descriptors at times
    if program := SERVERS[spec.server].program:
        _become(program, spec.port)
    start_cpu = cpu_seconds()
    with sockets.open_listener(spec.port) as listener, sockets.stopped_by_signals():
        sockets.announce(listener)
        SERVERS[spec.server].serve(listener, counts, spec.sqpoll)
    return dataclasses.asdict(counts) | {"cpu_s": cpu_seconds() - start_cpu}


def _become(program: str, port: int) -> NoReturn:
    """Replace this process with the C program, handing it the listening socket.

    The same process, not a child: the pid the parent announces, signals, traces and reads CPU time
    of is the C program's, and the program counts its CPU from its own start and prints the same
    ``RESULT`` line (its counts, ``cpu_s``) that :func:`run` would have.
    """
    path = c_programs.binary(program)
    listener = sockets.open_listener(port)
    os.set_inheritable(listener.fileno(), True)
    os.execv(path, [str(path), str(listener.fileno())])


if __name__ == "__main__":
    channel.child_main(ServerSpec, run)
