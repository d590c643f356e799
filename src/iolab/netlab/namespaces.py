"""Network namespaces: create, list and delete them (running code inside one is :mod:`iolab.kit.netns`).

A network namespace is a separate copy of the kernel's network stack: its own interfaces, addresses,
routes, ports and ``/proc/net``. ``ip netns add NAME`` makes one and keeps it alive by bind-mounting
it at ``/var/run/netns/NAME``; ``ip netns exec NAME CMD`` runs a command inside it.

The lab's namespaces are named ``iolab-<pid>-<n>-<role>``, ``pid`` being the process that created
them: that is how :func:`leftovers` tells a namespace in use from one a dead run left behind.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import time

from iolab.kit.netns import NETNS_DIR, call_in, entered, exec_argv

__all__ = ["NETNS_DIR", "call_in", "create", "delete", "entered", "exec_argv", "leftovers", "cleanup_leftovers",
           "list_namespaces", "name_for", "pids"]

PREFIX = "iolab"
_NAME = re.compile(rf"^{PREFIX}-(\d+)-")


def name_for(role: str, n: int, pid: int | None = None) -> str:
    """The name of a lab's namespace: ``iolab-<pid>-<n>-<role>``."""
    return f"{PREFIX}-{os.getpid() if pid is None else pid}-{n}-{role}"


def creator(name: str) -> int | None:
    """The pid of the process that created the lab namespace ``name``; None for other namespaces."""
    match = _NAME.match(name)
    return int(match.group(1)) if match else None


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (a zombie counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def ip(*args: str, check: bool = True) -> str:
    """Run ``ip ARGS`` (iproute2); its output. CalledProcessError, with ip's message, if it fails."""
    done = subprocess.run(["ip", *args], capture_output=True, text=True)
    if check and done.returncode:
        raise subprocess.CalledProcessError(done.returncode, ["ip", *args], done.stdout, done.stderr)
    return done.stdout


def list_namespaces(lab_only: bool = True) -> list[str]:
    """The named network namespaces (``ip netns list``); by default only the lab's."""
    names = [line.split()[0] for line in ip("netns", "list").splitlines() if line.strip()]
    return sorted(n for n in names if creator(n) is not None or not lab_only)


def create(name: str) -> None:
    """Create the namespace ``name`` with its loopback interface up (a new namespace's ``lo`` is down)."""
    ip("netns", "add", name)
    ip("-n", name, "link", "set", "lo", "up")


def pids(name: str) -> list[int]:
    """The processes whose network namespace is ``name``."""
    return [int(p) for p in ip("netns", "pids", name, check=False).split()]


def delete(name: str, grace: float = 1.0) -> None:
    """Kill every process inside ``name``, then remove it; nothing happens if it does not exist.

    The processes go first: a namespace lives on, unnamed and out of ``ip netns list``'s sight, as
    long as a process is inside, so deleting only its name would leave a server running in it.
    """
    if not os.path.exists(os.path.join(NETNS_DIR, name)):
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        inside = [p for p in pids(name) if p != os.getpid()]
        for pid in inside:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while inside and time.monotonic() < deadline:
            inside = [p for p in inside if alive(p)]
            time.sleep(0.01)
    ip("netns", "delete", name, check=False)


def leftovers() -> list[str]:
    """The lab namespaces whose creating process is dead."""
    return [n for n in list_namespaces() if not alive(creator(n) or 0)]


def cleanup_leftovers() -> list[str]:
    """Delete the namespaces (and what runs in them) of lab runs whose creator is dead; their names."""
    gone = leftovers()
    for name in gone:
        delete(name)
    return gone


