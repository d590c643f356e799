"""trio: a task per sleeper, each waiting on the event loop.

``python -m iolab.topics.c10k.trio MODE COUNT SECONDS [FIFO]`` (see ``protocol``). The same program as
``asyncio.py`` with trio's names: a nursery for the task group, ``trio.sleep``, ``FdStream`` and
trio sockets.
"""

from __future__ import annotations

import os
import socket
import sys

import trio

from iolab.topics.c10k import collector, protocol


async def read_pipe(fd: int) -> None:
    """Wait for one byte from a pipe that never gets one."""
    await trio.lowlevel.FdStream(fd).receive_some(1)


async def read_socket(mine: socket.socket) -> None:
    """Wait for one byte from a socket whose peer never sends."""
    await trio.socket.from_stdlib_socket(mine).recv(1)


async def run(args: protocol.Args) -> None:
    clock = collector.start(args.gc)
    completed = 0

    async def sleeper() -> None:
        nonlocal completed
        await trio.sleep(args.seconds)
        completed += 1

    fifo = protocol.open_fifo(args.fifo) if args.mode == "pipe" else -1
    keep: list[socket.socket] = []
    with trio.move_on_after(args.seconds + 60 + args.count / 1000):
        async with trio.open_nursery() as nursery:

            def start_one() -> None:
                if args.mode == "sleep":
                    nursery.start_soon(sleeper)
                elif args.mode == "pipe":
                    nursery.start_soon(read_pipe, os.dup(fifo))  # a descriptor per reader, as per connection
                else:
                    nursery.start_soon(read_socket, protocol.silent_socket(keep))

            protocol.start_all(args.count, start_one)
            if args.mode != "sleep":
                await trio.sleep(args.seconds)
                protocol.done(0, clock.readings())
                os._exit(0)  # the readers never finish: leave without cancelling thousands of them
    protocol.done(completed, clock.readings())


def main(argv: list[str]) -> int:
    trio.run(run, protocol.parse_args(argv))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
