"""Python threads: a thread per sleeper, as source 003's Ruby 2.3 program had.

``python -m iolab.topics.c10k.threads MODE COUNT SECONDS [FIFO]`` (see ``protocol``). Each sleeper is a
thread with a small stack; when the machine refuses one more, the program prints FAILED with its
own readings and leaves at once, so the runner can name the limit it met.

The threads are started with ``_thread``, the module under ``threading``, for one reason:
``threading.Thread.start()`` waits, with no time limit, for the new thread to say it runs. Near a
memory limit the kernel can create the thread and the thread then fail to allocate its first Python
objects and die silently: ``start()`` would wait forever. Here the wait has a limit.
"""

from __future__ import annotations

import _thread
import functools
import os
import socket
import sys
import threading
import time
from collections.abc import Callable

from iolab.topics.c10k import collector, protocol

# A sleeper's stack: 64 KiB instead of the default 8 MiB (ulimit -s). The body is one blocking call,
# a few frames deep; CPython keeps its Python frames on the heap, not on this stack.
STACK_BYTES = 64 * 1024
# How long a new thread may take to run its first line. Ordinarily microseconds; the limit only
# matters when the thread died on its way (see the module docstring).
FIRST_RUN_LIMIT_S = 10.0


class ThreadDied(RuntimeError):
    """The kernel created a thread that never ran its first line of Python."""


def start_thread(body: Callable[[], object]) -> None:
    """Run ``body`` in a new OS thread once it has shown it runs; ThreadDied if it never does."""
    running = _thread.allocate_lock()
    running.acquire()

    def bootstrap() -> None:
        running.release()
        body()

    _thread.start_new_thread(bootstrap, ())  # RuntimeError "can't start new thread" if refused
    if not running.acquire(timeout=FIRST_RUN_LIMIT_S):
        raise ThreadDied(f"a new thread did not run within {FIRST_RUN_LIMIT_S:.0f} s: it died starting")


def main(argv: list[str]) -> int:
    args = protocol.parse_args(argv)
    clock = collector.start(args.gc)
    threading.stack_size(STACK_BYTES)
    # Load the thread-exit machinery (glibc dlopens libgcc_s at the first thread exit) while there
    # is room for its mappings: at the map-count limit, the first sleeper to finish would abort.
    warm = threading.Thread(target=int)
    warm.start()
    warm.join()
    finished: list[bool] = []  # list.append is atomic: no lock for the sleepers to queue on
    all_finished = threading.Event()
    fifo = protocol.open_fifo(args.fifo) if args.mode == "pipe" else -1
    keep: list[socket.socket] = []

    def sleeper() -> None:
        time.sleep(args.seconds)
        finished.append(True)
        if len(finished) == args.count:
            all_finished.set()

    def start_one() -> None:
        if args.mode == "sleep":
            start_thread(sleeper)
        elif args.mode == "pipe":
            start_thread(functools.partial(os.read, fifo, 1))  # many threads may block in read() on one pipe
        else:
            start_thread(functools.partial(protocol.silent_socket(keep).recv, 1))

    protocol.start_all(args.count, start_one)
    if args.mode == "sleep":
        # As source 003's Ruby program waits for every thread (ts.each(&:join)), with a time limit.
        if args.count:
            all_finished.wait(args.seconds + 60 + args.count / 1000)
        protocol.done(len(finished), clock.readings())
    else:
        time.sleep(args.seconds)
        protocol.done(0, clock.readings())
    os._exit(0)  # blocked readers never return: skip joining them


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
