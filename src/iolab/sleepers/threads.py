"""Python threads: one OS thread per sleeper, as source 003's Ruby 2.3 program had.

``python -m iolab.sleepers.threads MODE COUNT SECONDS [FIFO]`` (see ``protocol``). Each sleeper is a
``threading.Thread`` with a small stack; when the machine refuses one more, the program prints
FAILED with its own readings and leaves at once, so the runner can name the limit it met.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
import threading
import time

from iolab.sleepers import protocol

# A sleeper's stack: 64 KiB instead of the default 8 MiB (ulimit -s). The body is one blocking call,
# a few frames deep; CPython keeps its Python frames on the heap, not on this stack.
STACK_BYTES = 64 * 1024


def main(argv: list[str]) -> int:
    args = protocol.parse_args(argv)
    threading.stack_size(STACK_BYTES)
    # Load the thread-exit machinery (glibc dlopens libgcc_s at the first thread exit) while there
    # is room for its mappings: at the map-count limit, the first sleeper to finish would abort.
    warm = threading.Thread(target=int)
    warm.start()
    warm.join()
    finished: list[bool] = []  # list.append is atomic: no lock for the sleepers to queue on
    fifo = protocol.open_fifo(args.fifo) if args.mode == "pipe" else -1
    keep: list[socket.socket] = []
    threads: list[threading.Thread] = []

    def sleeper() -> None:
        time.sleep(args.seconds)
        finished.append(True)

    def start_one() -> None:
        if args.mode == "sleep":
            body = sleeper
        elif args.mode == "pipe":
            body = functools.partial(os.read, fifo, 1)  # many threads may block in read() on one pipe
        else:
            body = functools.partial(protocol.silent_socket(keep).recv, 1)
        thread = threading.Thread(target=body, daemon=True)
        thread.start()
        threads.append(thread)

    protocol.start_all(args.count, start_one)
    if args.mode == "sleep":
        deadline = time.monotonic() + args.seconds + 60 + args.count / 1000
        for thread in threads:  # as source 003's Ruby program: ts.each(&:join)
            thread.join(max(0.0, deadline - time.monotonic()))
        protocol.done(len(finished))
    else:
        time.sleep(args.seconds)
        protocol.done(0)
    os._exit(0)  # blocked readers never return: skip joining them


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
