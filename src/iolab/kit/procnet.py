"""What the kernel says about TCP sockets, read from ``/proc/net``: states, queues and drop counters.

``/proc/net/tcp`` lists every IPv4 TCP socket of this network namespace that is listening or part
of a connection (a socket that is only bound is in neither table and is not listed). ``ss -tan``
prints the same sockets. For a listening socket the receive-queue column is the *accept queue*:
connections the kernel has completed (handshake done) that no ``accept()`` has taken yet.
``/proc/net/netstat`` and ``/proc/net/softnet_stat`` count the connection attempts and packets the
kernel dropped (``nstat -az 'TcpExt*'`` prints the former). Its counters come in pairs of lines, one of
names and one of values, each starting with its group (``TcpExt:``, ``IpExt:``, ...); they count since
boot, for the whole network namespace, so a difference over a short run is ours as long as nothing else
in the namespace did the same meanwhile. The two this course reads most: ``ListenOverflows``, a packet
that found a listener's accept queue full (a SYN, or the ACK that ends a handshake), and
``ListenDrops``, every packet a listener dropped, overflows included.
"""

from __future__ import annotations

import contextlib
import socket
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from iolab.kit import platforms

# include/net/tcp_states.h: the state column is the enum value in hex.
TCP_STATES = {
    0x01: "ESTABLISHED",
    0x02: "SYN_SENT",
    0x03: "SYN_RECV",
    0x04: "FIN_WAIT1",
    0x05: "FIN_WAIT2",
    0x06: "TIME_WAIT",
    0x07: "CLOSE",
    0x08: "CLOSE_WAIT",
    0x09: "LAST_ACK",
    0x0A: "LISTEN",
    0x0B: "CLOSING",
    0x0C: "NEW_SYN_RECV",
}


@dataclass(frozen=True)
class TcpSocket:
    """One line of ``/proc/net/tcp``."""

    local: tuple[str, int]
    remote: tuple[str, int]
    state: str
    send_queue: int  # bytes not yet acknowledged by the peer
    recv_queue: int  # bytes not yet read; for LISTEN: connections waiting for accept()
    retransmits: int  # unanswered retransmissions (e.g. SYNs sent again)
    inode: int


def _address(field: str) -> tuple[str, int]:
    # "0100007F:1F90": the IPv4 address as the kernel's 32-bit word in host byte order, then the port.
    ip_hex, port_hex = field.split(":")
    return socket.inet_ntoa(struct.pack("=I", int(ip_hex, 16))), int(port_hex, 16)


def parse(text: str, port: int | None = None) -> list[TcpSocket]:
    """The sockets in the text of ``/proc/net/tcp``; with ``port``, only lines that mention it are parsed."""
    lines = text.splitlines()[1:]
    if port is not None:
        # A busy machine lists tens of thousands of TIME_WAIT sockets: skip most lines with a cheap
        # text search for ":PORT " (four hex digits) before parsing any.
        needle = f":{port:04X} "
        lines = [line for line in lines if needle in line]
    sockets = []
    for line in lines:
        f = line.split()
        if len(f) < 10:
            continue
        send_q, recv_q = (int(x, 16) for x in f[4].split(":"))
        sockets.append(
            TcpSocket(
                local=_address(f[1]),
                remote=_address(f[2]),
                state=TCP_STATES.get(int(f[3], 16), f[3]),
                send_queue=send_q,
                recv_queue=recv_q,
                retransmits=int(f[6], 16),
                inode=int(f[9]),
            )
        )
    return sockets


def read_sockets(port: int | None = None) -> list[TcpSocket]:
    """The IPv4 TCP sockets of this namespace; with ``port``, those whose local or remote port it is."""
    platforms.require("procnet")  # off Linux: FacilityMissing, whose message is the cell's note
    sockets = parse(Path("/proc/net/tcp").read_text(), port)
    if port is None:
        return sockets
    return [s for s in sockets if port in (s.local[1], s.remote[1])]


def table(port: int, names: dict[int, str] | None = None) -> pd.DataFrame:
    """The sockets on ``port`` as a table; ``names`` labels sockets by their local port."""
    names = names or {}
    rows = [
        {
            "socket": names.get(s.local[1], ""),
            "local": f"{s.local[0]}:{s.local[1]}",
            "remote": f"{s.remote[0]}:{s.remote[1]}",
            "state": s.state,
            "recv_q": s.recv_queue,
            "send_q": s.send_queue,
        }
        for s in read_sockets(port)
    ]
    return pd.DataFrame(rows, columns=["socket", "local", "remote", "state", "recv_q", "send_q"])


def accept_queue(port: int) -> int:
    """Connections waiting for accept() on the socket listening on ``port`` (0 if none listens)."""
    return sum(s.recv_queue for s in read_sockets(port) if s.state == "LISTEN" and s.local[1] == port)


def count_states(port: int | None = None) -> dict[str, int]:
    """How many sockets (on ``port``, or all) are in each state."""
    counts: dict[str, int] = {}
    for s in read_sockets(port):
        counts[s.state] = counts.get(s.state, 0) + 1
    return counts


NETSTAT = Path("/proc/net/netstat")
LISTEN_COUNTERS = ("ListenOverflows", "ListenDrops")


def parse_netstat(text: str, group: str = "TcpExt") -> dict[str, int]:
    """The counters of ``group`` in the text of ``/proc/net/netstat``, by name ({} if the group is absent)."""
    lines = text.splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        label, *keys = names.split()
        if label == f"{group}:":
            return dict(zip(keys, (int(v) for v in values.split()[1:])))
    return {}


def tcpext() -> dict[str, int]:
    """This namespace's TcpExt counters now, by name (``ListenOverflows``, ``ListenDrops``, ...)."""
    platforms.require("procnet")
    return parse_netstat(NETSTAT.read_text())


def difference(before: dict[str, int], after: dict[str, int], names: tuple[str, ...] = ()) -> dict[str, int]:
    """How much each counter (or each of ``names``) rose from ``before`` to ``after``; a counter missing counts as 0."""
    return {name: after.get(name, 0) - before.get(name, 0) for name in (names or after)}


@contextlib.contextmanager
def changes(*names: str) -> Iterator[dict[str, int]]:
    """A dict that, when the ``with`` block ends, holds how much each TcpExt counter (or each of ``names``) rose in it."""
    delta: dict[str, int] = {}
    before = tcpext()
    try:
        yield delta
    finally:
        delta.update(difference(before, tcpext(), names))


def backlog_drops() -> int:
    """Packets dropped so far because a CPU's input queue was full (``/proc/net/softnet_stat``, column 2).

    Loopback packets wait in that queue too (net.core.netdev_max_backlog, 1000 by default): when
    other programs flood loopback, a SYN can be lost there, and the client waits for a retry.
    """
    lines = Path("/proc/net/softnet_stat").read_text().splitlines()
    return sum(int(line.split()[1], 16) for line in lines)
