"""The kernel's TCP counters, from ``/proc/net/netstat``: what ``nstat -az 'TcpExt*'`` prints.

``/proc/net/netstat`` holds its counters in pairs of lines, one of names and one of values, each
starting with its group (``TcpExt:``, ``IpExt:``, ...). They count since boot, for the whole network
namespace: every program's connections, not only ours. A difference over a short run is ours as
long as nothing else in the namespace did the same meanwhile.

The two this course reads most: ``ListenOverflows``, a packet that found a listener's accept queue
full (a SYN, or the ACK that ends a handshake), and ``ListenDrops``, every packet a listener dropped,
overflows included.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

NETSTAT = Path("/proc/net/netstat")
LISTEN_COUNTERS = ("ListenOverflows", "ListenDrops")


def parse(text: str, group: str = "TcpExt") -> dict[str, int]:
    """The counters of ``group`` in the text of ``/proc/net/netstat``, by name ({} if the group is absent)."""
    lines = text.splitlines()
    for names, values in zip(lines[::2], lines[1::2]):
        label, *keys = names.split()
        if label == f"{group}:":
            return dict(zip(keys, (int(v) for v in values.split()[1:])))
    return {}


def tcpext() -> dict[str, int]:
    """This namespace's TcpExt counters now, by name (``ListenOverflows``, ``ListenDrops``, ...)."""
    return parse(NETSTAT.read_text())


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
