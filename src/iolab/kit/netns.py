"""Run code or programs inside a named network namespace (chapter 12's netlab makes them).

A namespace named NAME is the file ``/var/run/netns/NAME`` that ``ip netns add NAME`` bind-mounts.
A program runs inside it through ``ip netns exec NAME ...`` (:func:`exec_argv`); a thread of this
process moves into it with ``setns(2)`` (:func:`entered`). The kit's servers, load generator and
hostile clients take a namespace's name and use one of these two; :mod:`iolab.netlab.namespaces`
creates and deletes the namespaces.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

NETNS_DIR = "/var/run/netns"
CLONE_NEWNET = 0x40000000  # from <sched.h>: setns() into a network namespace
T = TypeVar("T")

_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    # os.setns arrives in Python 3.12; the course runs on 3.11.
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextlib.contextmanager
def entered(name: str) -> Iterator[None]:
    """Move the calling thread into the namespace ``name`` for the block, then back.

    Only this thread moves (the network namespace is per thread), and only what it creates inside
    the block belongs to ``name``: a socket keeps the namespace it was created in for its whole life,
    so a socket made here can be used from anywhere afterwards.
    """
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        try:
            target = os.open(os.path.join(NETNS_DIR, name), os.O_RDONLY)
        except FileNotFoundError:
            raise FileNotFoundError(f"no network namespace {name!r} (see `ip netns list`)") from None
        try:
            _setns(target)
        finally:
            os.close(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(home)


def call_in(name: str, fn: Callable[..., T], *args: object) -> T:
    """``fn(*args)`` run by this thread inside the namespace ``name``."""
    with entered(name):
        return fn(*args)


def exec_argv(name: str | None, argv: Sequence[str]) -> list[str]:
    """The command line that runs ``argv`` inside ``name`` (``argv`` itself when ``name`` is None)."""
    return list(argv) if name is None else ["ip", "netns", "exec", name, *argv]
