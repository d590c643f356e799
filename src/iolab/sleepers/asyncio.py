"""asyncio: one OS thread, a task per sleeper, each waiting on the event loop.

``python -m iolab.sleepers.asyncio MODE COUNT SECONDS [FIFO]`` (see ``protocol``). A sleeping task
is a timer in the loop's heap; a task blocked on a read is a descriptor in its epoll set. Neither
costs a thread: the one thread sleeps in ``epoll_wait`` until the next timer or readable descriptor.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys

from iolab.sleepers import protocol


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
    completed = 0

    async def sleeper() -> None:
        nonlocal completed
        await asyncio.sleep(args.seconds)
        completed += 1

    fifo = protocol.open_fifo(args.fifo) if args.mode == "pipe" else -1
    keep: list[socket.socket] = []
    # A list and gather(), not a TaskGroup: the group's bookkeeping per task made 100,000 sleepers
    # 0.7 s slower here, and no sleeper can fail. The list also keeps the tasks alive: the loop
    # itself holds only weak references to them.
    tasks: list[asyncio.Task[None]] = []

    def start_one() -> None:
        if args.mode == "sleep":
            tasks.append(asyncio.create_task(sleeper()))
        elif args.mode == "pipe":
            tasks.append(asyncio.create_task(read_pipe(os.dup(fifo))))  # a descriptor per reader, as per connection
        else:
            tasks.append(asyncio.create_task(read_socket(protocol.silent_socket(keep))))

    protocol.start_all(args.count, start_one)
    if args.mode != "sleep":
        await asyncio.sleep(args.seconds)
        protocol.done(0)
        os._exit(0)  # the readers never finish: leave without cancelling thousands of them
    try:
        async with asyncio.timeout(args.seconds + 60 + args.count / 1000):
            await asyncio.gather(*tasks)
    except TimeoutError:
        pass
    protocol.done(completed)


def main(argv: list[str]) -> int:
    asyncio.run(run(protocol.parse_args(argv)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
