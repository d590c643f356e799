"""The link itself: a process that carries packets between the two namespaces' TUN devices, impaired.

A TUN device is a network interface whose other end is a file descriptor: every IP packet the kernel
routes out of the interface can be ``read()`` from the descriptor, and every packet ``write()``-n to
the descriptor arrives at the interface as if from a wire. The forwarder holds one TUN device in each
namespace and copies packets across, after asking :class:`~iolab.netlab.impair.Direction` when each
may leave (or whether it is lost). Packets wait in one FIFO queue per direction; ``select`` sleeps
until a packet arrives or the first queued one is due, whichever comes first.

A sleeping process wakes late: on the course's 2-core VM, ``select`` with a timeout of a few ms returned
some 200 us after it, so a "10 ms" round trip took 10.5-10.8 ms. The forwarder measures how late its own
timed wake-ups are (a moving average), aims that much early, and polls for the last ``SPIN_S``; it also
asks the kernel for no timer slack (``prctl(PR_SET_TIMERSLACK)``: by default a timer may fire up to 50 us
late, to save power). Measured by ``connect()``, a 10 ms round trip then took 10.15-10.4 ms.

It is also the lab's janitor: it runs until the lab closes its control pipe, or dies (the pipe then
reads end-of-file, and the forwarder's parent changes), or it receives SIGTERM; then it deletes both
namespaces and kills whatever still runs in them. Run as ``python -m iolab.netlab.forwarder SPEC_JSON``,
a :class:`ForwarderSpec` through :mod:`iolab.kit.channel`.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import dataclasses
import fcntl
import json
import os
import random
import select
import signal
import struct
import sys
import time
from dataclasses import dataclass
from typing import ClassVar

from iolab.kit import channel
from iolab.netlab import namespaces
from iolab.netlab.impair import Direction, Impairments

TUNSETIFF = 0x400454CA  # from <linux/if_tun.h>
IFF_TUN = 0x0001  # IP packets, no Ethernet header
IFF_NO_PI = 0x1000  # no 4-byte packet-information header before each packet
MAX_PACKET = 65536
# Packets read from one device per wake-up before looking at the clock again: enough to amortize
# select(), few enough that a packet due for release does not wait behind a burst.
BATCH = 32
# How often, at the least, it checks that its parent still lives (the pipe may be held open by a
# process the parent forked).
WATCH_S = 0.5
# The moving average of how late a timed wake-up is: weight of the newest, and the most it may reach
# (a wake-up delayed by a busy machine must not make every later packet leave far too early).
LATE_WEIGHT = 0.2
LATE_MAX_S = 0.001
# The last stretch before a packet is due is spent polling (select with a zero timeout), not asleep.
SPIN_S = 0.0001
PR_SET_TIMERSLACK = 29  # from <linux/prctl.h>


def open_tun(ns: str, device: str) -> int:
    """Create the TUN device ``device`` inside the namespace ``ns``; the descriptor of its packets.

    The device belongs to the namespace of the thread that creates it, and goes away when the
    descriptor is closed, so it cannot outlive the forwarder.
    """
    with namespaces.entered(ns):
        fd = os.open("/dev/net/tun", os.O_RDWR | os.O_NONBLOCK)
        fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", device.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def say(line: str) -> None:
    """One line to the lab; nobody may be reading any more (the lab died), which is fine."""
    with contextlib.suppress(OSError):
        os.write(1, (line + "\n").encode())


class Forwarder:
    """Copies packets between the server's and the client's TUN descriptors, through the impairments."""

    def __init__(self, server_fd: int, client_fd: int, impairments: Impairments, seed: int | None = None) -> None:
        # A random stream per direction, so that one direction's traffic does not change the other's drops.
        self.up = Direction(impairments, random.Random(None if seed is None else f"{seed}-up"))  # client -> server
        self.down = Direction(impairments, random.Random(None if seed is None else f"{seed}-down"))
        # For each descriptor packets come from: their direction, where they go, and the queue to it.
        self.routes: dict[int, tuple[Direction, int, collections.deque[tuple[float, bytes]]]] = {
            client_fd: (self.up, server_fd, collections.deque()),
            server_fd: (self.down, client_fd, collections.deque()),
        }
        self.late_s = 0.0  # how late select() wakes after its timeout, on average


    def set(self, **changes: object) -> Impairments:
        """Change the impairments of both directions; packets already queued keep their release time."""
        new = dataclasses.replace(self.up.impairments, **changes)
        self.up.impairments = self.down.impairments = new
        return new

    def stats(self) -> dict[str, dict[str, int]]:
        """The counters of each direction."""
        return {"up": dataclasses.asdict(self.up.counters), "down": dataclasses.asdict(self.down.counters)}

    def pump(self, timeout: float, control: int | None = None) -> bool:
        """Release what is due, wait at most ``timeout`` s for packets, queue them; False on control EOF."""
        now = time.monotonic()
        wake = now + timeout
        due: float | None = None  # when the first packet still queued is due
        for _, to, queue in self.routes.values():
            while queue and queue[0][0] <= now:
                # A full device queue (EAGAIN) or a device still down (EIO, while the lab starts) drops
                # the packet, as a wire would.
                with contextlib.suppress(OSError):
                    os.write(to, queue.popleft()[1])
            if queue:
                due = queue[0][0] if due is None else min(due, queue[0][0])
        if due is not None:
            # Wake early by how late wake-ups are, plus a margin; the last stretch is spent polling.
            wake = min(wake, due - self.late_s - SPIN_S)
        # select() and not epoll: its timeout is in microseconds, epoll's in milliseconds, and a link
        # that releases packets up to a millisecond late would add up to 2 ms to every round trip.
        watched = [*self.routes, *([] if control is None else [control])]
        for fd in self.sleep(watched, wake, timed=due is not None):
            if fd == control:
                return self.command(fd)
            direction, _, queue = self.routes[fd]
            for _ in range(BATCH):
                try:
                    packet = os.read(fd, MAX_PACKET)
                except BlockingIOError:
                    break
                release = direction.admit(time.monotonic(), len(packet))
                if release is not None:
                    queue.append((release, packet))
        return True

    def sleep(self, watched: list[int], wake: float, timed: bool) -> list[int]:
        """select() on ``watched`` until the monotonic time ``wake``; a ``timed`` wake-up (one a queued
        packet waits for) updates ``late_s``.

        The timeout is taken from the clock just before select(), not from the pump's start: writing a
        packet to a TUN device runs the kernel's network stack for it, which takes tens of us.
        """
        timeout = wake - time.monotonic()
        timeout = 0.0 if timed and timeout < SPIN_S else max(0.0, timeout)
        readable, _, _ = select.select(watched, [], [], timeout)
        if timed and not readable and timeout > 0:
            late = time.monotonic() - wake
            self.late_s = min(LATE_MAX_S, max(0.0, self.late_s + LATE_WEIGHT * (late - self.late_s)))
        return readable

    def calibrate(self, wakeups: int = 20, sleep_s: float = 0.002) -> None:
        """Learn ``late_s`` before the first packet: ``wakeups`` timed sleeps of ``sleep_s`` (some 40 ms)."""
        for _ in range(wakeups):
            self.sleep([], time.monotonic() + sleep_s - self.late_s, timed=True)

    def command(self, fd: int) -> bool:
        """Obey one line from the lab: ``set {json}`` or ``stats``; answer on stdout. False on EOF."""
        line = _read_line(fd)
        if not line:
            return False
        verb, _, arg = line.partition(" ")
        try:
            if verb == "set":
                say("set " + json.dumps(dataclasses.asdict(self.set(**json.loads(arg)))))
            elif verb == "stats":
                say("stats " + json.dumps(self.stats()))
            else:
                say(f"error unknown command {verb!r}")
        except (TypeError, ValueError) as exc:
            say(f"error {exc}")
        return True

    def run(self, control: int, parent: int) -> None:
        """Forward until the control pipe closes or the parent process ``parent`` is gone."""
        while self.pump(WATCH_S, control) and os.getppid() == parent:
            pass


def _read_line(fd: int) -> str:
    """One line from the blocking pipe ``fd`` (the lab writes whole lines); '' at end of file."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(fd, 1)
        if not chunk:
            return ""
        data += chunk
    return data.decode().strip()


@dataclass(frozen=True)
class ForwarderSpec(channel.Spec):
    """The link to run: its two namespaces, the read end of the lab's control pipe, the impairments."""

    ENTRY: ClassVar[str] = "iolab.netlab.forwarder"

    server_ns: str
    client_ns: str
    control_fd: int  # the read end of the lab's control pipe, inherited (open_child's pass_fds)
    device: str = "iolab0"  # the name of the TUN device in each namespace
    impairments: Impairments = Impairments()
    seed: int | None = None


def run(spec: ForwarderSpec) -> int:
    """Create the two TUN devices, say ``ready``, forward; on the way out, delete both namespaces."""
    parent = os.getppid()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(0))  # unwinds into the finally below
    fds: list[int] = []
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_TIMERSLACK, 1, 0, 0, 0)
    try:
        fds = [open_tun(spec.server_ns, spec.device), open_tun(spec.client_ns, spec.device)]
        forwarder = Forwarder(*fds, spec.impairments, spec.seed)
        forwarder.calibrate()
        say("ready")
        forwarder.run(spec.control_fd, parent)
    finally:
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)  # a second signal must not cut the cleanup short
        for fd in fds:
            os.close(fd)
        for ns in (spec.server_ns, spec.client_ns):
            namespaces.delete(ns)
    return 0


if __name__ == "__main__":
    channel.child_main(ForwarderSpec, run)
