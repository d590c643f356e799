"""``open_netlab()``: two namespaces, a server's and a client's, joined by an impaired link.

::

    with open_netlab(delay_ms=25, loss=0.01) as lab:
        server = lab.popen("server", [...])  # listens on lab.server_ip
        load = lab.popen("client", [...])    # reaches the server at lab.server_ip
        lab.set(delay_ms=100)                # change the link while it runs

Leaving the block, however it is left, stops the processes started with ``popen``, the forwarder, and
deletes both namespaces. If the process holding the lab dies without leaving the block (SIGKILL, a
crashed kernel), the forwarder notices and does the same; :func:`cleanup_leftovers` removes what a
run killed together with its forwarder left.
"""

from __future__ import annotations

import contextlib
import dataclasses
import itertools
import json
import os
import shutil
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from iolab.kit import channel, platforms
from iolab.kit.procs import ManagedProcess, open_process
from iolab.netlab import namespaces
from iolab.netlab.forwarder import ForwarderSpec
from iolab.netlab.impair import Impairments

SERVER_IP = "10.77.0.1"  # private addresses, only ever seen inside the lab's own two namespaces
CLIENT_IP = "10.77.0.2"
DEVICE = "iolab0"  # the TUN device's name, the same in both namespaces
MTU = 1500  # an Ethernet's: a bulk transfer is made of the packets it would be made of on a real network
READY_S = 10.0  # how long the forwarder may take to start
_labs = itertools.count()


CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21  # bits of the capability sets, from <linux/capability.h>
CONTAINER_HINT = ("in a container, start it with --user 0 --cap-add NET_ADMIN,SYS_ADMIN --device /dev/net/tun "
                  "(README: \"Which way should I run it?\")")


def in_container() -> bool:
    """True inside a podman or docker container (each leaves a marker file at its root)."""
    return os.path.exists("/run/.containerenv") or os.path.exists("/.dockerenv")


def _capabilities() -> int:
    """This process's effective capabilities, as the bit set /proc/self/status shows."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1], 16) for line in status if line.startswith("CapEff:"))


def available() -> str | None:
    """None if this machine can run a netlab; else what is missing, in words a notebook can print."""
    missing = None
    if (elsewhere := platforms.missing("netns")) is not None:  # macOS: no namespaces, root or not
        return elsewhere
    if os.geteuid() != 0:
        missing = "netlab needs root (to create network namespaces and TUN devices); run as root"
    elif shutil.which("ip") is None:
        missing = "netlab needs the `ip` command: install iproute2"
    elif not os.path.exists("/dev/net/tun"):
        missing = "netlab needs /dev/net/tun: load the tun module (modprobe tun)"
    elif ~_capabilities() & (1 << CAP_NET_ADMIN | 1 << CAP_SYS_ADMIN):
        missing = "netlab needs the NET_ADMIN and SYS_ADMIN capabilities (root without them cannot make namespaces)"
    if missing and in_container():
        return f"{missing}; {CONTAINER_HINT}"
    return missing


@dataclass
class NetLab:
    """A running lab: where the server and the client are, and how to start processes in either."""

    server_ns: str
    client_ns: str
    server_ip: str
    client_ip: str
    forwarder: ManagedProcess
    _control: int
    _processes: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def ns(self, which: str) -> str:
        """The namespace's name for ``"server"`` or ``"client"`` (a full name is returned as it is)."""
        return {"server": self.server_ns, "client": self.client_ns}.get(which, which)

    def popen(self, ns: str, argv: Sequence[str], **kw: Any) -> ManagedProcess:
        """Start ``argv`` inside ``ns`` (``"server"``, ``"client"`` or a name); stopped when the lab closes.

        ``kw`` goes to :func:`iolab.kit.procs.open_process` (``env``, ``cwd``, ``capture``, ``grace``).
        """
        return self._processes.enter_context(open_process(namespaces.exec_argv(self.ns(ns), argv), **kw))

    def socket(self, ns: str, kind: socket.SocketKind = socket.SOCK_STREAM) -> socket.socket:
        """A new IPv4 socket that belongs to ``ns``, usable from this process."""
        with namespaces.entered(self.ns(ns)):
            return socket.socket(socket.AF_INET, kind)

    def set(self, **changes: Any) -> Impairments:
        """Change the link's impairments (``delay_ms``, ``jitter_ms``, ``loss``, ``rate_mbit``, ``queue_packets``)."""
        bad = set(changes) - {f.name for f in dataclasses.fields(Impairments)}
        if bad:
            raise TypeError(f"unknown impairments: {sorted(bad)}")
        reply = self._ask("set " + json.dumps(changes), "set")
        return Impairments(**reply)

    def stats(self) -> dict[str, dict[str, int]]:
        """What the link did to the packets of each direction (``up``: client to server)."""
        return self._ask("stats", "stats")

    def _ask(self, line: str, answer: str) -> Any:
        os.write(self._control, (line + "\n").encode())
        match = self.forwarder.wait_for_line(rf"^({answer}|error) (.*)$", timeout=READY_S)
        if match.group(1) == "error":
            raise ValueError(f"the forwarder refused {line!r}: {match.group(2)}")
        return json.loads(match.group(2))


def _configure(ns: str, here: str, peer: str) -> None:
    """Address the namespace's TUN device point-to-point (``here`` <-> ``peer``) and bring it up."""
    namespaces.ip("-n", ns, "addr", "add", here, "peer", f"{peer}/32", "dev", DEVICE)
    # No IPv6 link-local address: the kernel would announce it with packets of its own across the link.
    namespaces.ip("-n", ns, "link", "set", DEVICE, "addrgenmode", "none")
    namespaces.ip("-n", ns, "link", "set", DEVICE, "mtu", str(MTU), "up")


@contextlib.contextmanager
def open_netlab(delay_ms: float = 0.0, jitter_ms: float = 0.0, loss: float = 0.0, rate_mbit: float | None = None,
                seed: int | None = None, queue_packets: int = 1000) -> Iterator[NetLab]:
    """A server namespace and a client namespace joined by a link with these impairments, per direction.

    ``delay_ms`` is one way: a round trip takes twice as long. ``loss`` is a probability per packet
    and direction. ``rate_mbit`` limits each direction to that rate, queueing up to ``queue_packets``.
    A ``seed`` makes the drops and the jitter the same from run to run.
    """
    missing = available()
    if missing:
        raise RuntimeError(missing)
    impairments = Impairments(delay_ms, jitter_ms, loss, rate_mbit, queue_packets)  # refuses nonsense early
    n = next(_labs)
    server_ns, client_ns = namespaces.name_for("server", n), namespaces.name_for("client", n)
    with contextlib.ExitStack() as stack:
        for ns in (server_ns, client_ns):
            stack.callback(namespaces.delete, ns)  # registered first, so it runs last
            namespaces.create(ns)
        control_read, control = os.pipe()
        spec = ForwarderSpec(server_ns, client_ns, control_read, DEVICE, impairments, seed)
        # In its own session (open_child's), so that a Ctrl-C in a terminal reaches only the lab, which
        # then closes in order: _finish first, then open_child's own stop, which finds it gone.
        forwarder = stack.enter_context(channel.open_child(spec, pass_fds=[control_read])).process
        os.close(control_read)
        stack.callback(_finish, forwarder, control)
        forwarder.wait_for_line("^ready", timeout=READY_S)
        _configure(server_ns, SERVER_IP, CLIENT_IP)
        _configure(client_ns, CLIENT_IP, SERVER_IP)
        lab = NetLab(server_ns, client_ns, SERVER_IP, CLIENT_IP, forwarder, control)
        with lab._processes:
            yield lab


def _finish(forwarder: ManagedProcess, control: int) -> None:
    """Close the control pipe, which tells the forwarder to clean up and exit; stop it if it does not."""
    os.close(control)
    with contextlib.suppress(Exception):
        forwarder.wait(timeout=5.0)
    forwarder.stop()


def cleanup_leftovers() -> list[str]:
    """Delete the namespaces, and what runs in them, of lab runs whose creating process is dead."""
    return namespaces.cleanup_leftovers()
