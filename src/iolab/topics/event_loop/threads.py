"""Client version 1: a thread per connection, blocking in ``recv``; one lock around the shared counts.

The lock is the one source 004 found it needed: ``TopWords.add`` reads and rewrites the counts and the
top list, and a thread switch in the middle (the interpreter switches every 5 ms, and at any blocking
call) would let another thread work on a half-updated top list.
"""

from __future__ import annotations

import socket
import threading
import time

from iolab.kit.sockets import HOST, RECV_BYTES
from iolab.topics.event_loop.counting import CONNECTING, HELLO, TopWords, WordStream


def _open(port: int, gate: threading.Semaphore, timeout: float) -> tuple[socket.socket, bytes]:
    with gate:  # see counting.CONNECTING
        sock = socket.create_connection((HOST, port), timeout=timeout)
        try:
            sock.sendall(HELLO)
            return sock, sock.recv(RECV_BYTES)  # the first word: the server has accepted us
        except BaseException:
            sock.close()
            raise


def _read_connection(port: int, top: TopWords, lock: threading.Lock, gate: threading.Semaphore,
                     connected_at: list[float], timeout: float, errors: list[BaseException]) -> None:
    try:
        sock, data = _open(port, gate, timeout)
        connected_at.append(time.perf_counter())
        stream = WordStream()
        with sock:
            while data:
                words = stream.feed(data)
                with lock:
                    for word in words:
                        top.add(word)
                data = sock.recv(RECV_BYTES)
    except Exception as error:  # reported by count_words, in the main thread
        errors.append(error)


def count_words(port: int, connections: int, top: TopWords, connected_at: list[float], timeout: float,
                stack_kib: int | None = None) -> None:
    """Read every connection to the end in its own thread, counting into ``top``."""
    lock, gate = threading.Lock(), threading.Semaphore(CONNECTING)
    errors: list[BaseException] = []
    previous = threading.stack_size((stack_kib or 0) * 1024)  # 0: the default (8 MiB, ulimit -s)
    threads = []
    try:
        for _ in range(connections):
            thread = threading.Thread(target=_read_connection, args=(port, top, lock, gate, connected_at, timeout, errors),
                                      daemon=True)  # daemon: an error below must not wait for the others
            try:
                thread.start()
            except RuntimeError as error:
                stack = f"{stack_kib} KiB" if stack_kib else "the default size (ulimit -s, usually 8 MiB)"
                raise RuntimeError(
                    f"started {len(threads)} of {connections} threads, then: {error}. Each thread reserves a stack "
                    f"of {stack} of address space and counts against the thread limits (ulimit -u, "
                    "/proc/sys/kernel/threads-max, vm.max_map_count); try a smaller stack (--stack-kib 256)"
                ) from error
            threads.append(thread)
    finally:
        threading.stack_size(previous)
    deadline = time.monotonic() + timeout
    for thread in threads:
        thread.join(max(0.0, deadline - time.monotonic()))
    if errors:
        raise errors[0]
    if any(thread.is_alive() for thread in threads):
        raise TimeoutError(f"the threads did not finish within {timeout:g} s")
