"""asyncio: a task per sleeper, each waiting on the event loop.

``python -m iolab.topics.c10k.asyncio MODE COUNT SECONDS [FIFO]`` (see ``protocol``). A sleeping task
is a timer in the loop's heap; a task blocked on a read is a descriptor in its epoll set. The loop
sleeps in ``epoll_wait`` until the next timer or readable descriptor.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import sys

from iolab.topics.c10k import collector, phases, protocol


async def read_pipe(fd: int) -> None:
    """Wait for one byte from a pipe that never gets one."""
    reader = asyncio.StreamReader()
    loop = asyncio.get_running_loop()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd, "rb", buffering=0))
    await reader.read(1)


async def read_socket(mine: socket.socket) -> None:
    """Wait for one byte from a socket whose peer never sends."""
    mine.setblocking(False)
    await asyncio.get_running_loop().sock_recv(mine, 1)


async def run(args: protocol.Args) -> None:
    clock = collector.start(args.gc)
    marks = phases.Marks(clock)  # the steps of the last sleeper's path, for phases.breakdown
    completed = 0
    all_finished = asyncio.Event()

    async def sleeper() -> None:
        nonlocal completed
        await asyncio.sleep(args.seconds)
        completed += 1
        if completed == args.count:
            all_finished.set()

    fifo = protocol.open_fifo(args.fifo) if args.mode == "pipe" else -1
    keep: list[socket.socket] = []
    # A list of tasks and one event set by the last sleeper, not a TaskGroup or gather(): their
    # bookkeeping per task (a done-callback each, a list of results) made 100,000 sleepers 0.2 s
    # (gather) to 0.7 s (TaskGroup) slower here, and no sleeper can fail. The list keeps the tasks
    # alive: the loop itself holds only weak references to them.
    tasks: list[asyncio.Task[None]] = []

    def start_one() -> None:
        if args.mode == "sleep":
            tasks.append(asyncio.create_task(sleeper()))
        elif args.mode == "pipe":
            tasks.append(asyncio.create_task(read_pipe(os.dup(fifo))))  # a descriptor per reader, as per connection
        else:
            tasks.append(asyncio.create_task(read_socket(protocol.silent_socket(keep))))

    protocol.start_all(args.count, start_one)
    marks.note("created")
    if args.mode != "sleep":
        await asyncio.sleep(args.seconds)
        protocol.done(0, clock.readings())
        os._exit(0)  # the readers never finish: leave without cancelling thousands of them
    if args.count:
        # Each new task's first step is queued behind the others; this task's next step is queued
        # behind them all. When it runs, every sleeper has set its timer.
        await asyncio.sleep(0)
        marks.note("timers_set")
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(args.seconds + 60 + args.count / 1000):
                await all_finished.wait()
        marks.note("woken")
    protocol.done(completed, clock.readings() | marks.details())


def main(argv: list[str]) -> int:
    asyncio.run(run(protocol.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
