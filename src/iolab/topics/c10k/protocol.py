"""What every sleepers program prints, in every language, and how the runner reads it back.

A program runs ``COUNT`` sleepers (or blocked readers) and speaks three kinds of line on stdout:

- ``READY <started>``: all of them have been started (the runner starts counting threads then);
- ``DONE <completed> [json]``: all have finished; the blocked readers never do, and a program that
  holds them until its time is up says ``DONE 0`` as it leaves. The Python programs add what their
  garbage collector cost (``collector``);
- ``FAILED <started> <json>``: starting one more failed; the JSON holds the error message and the
  program's own readings at that moment (threads, memory mappings, tasks on the machine).

The programs count finished sleepers instead of printing a line each, as source 003's did: 100,000
lines through a pipe would measure the terminal, not the runtime.

The Python programs (``threads``, ``asyncio``, ``trio``) share the command line parsed here:
``python -m iolab.topics.c10k.RUNTIME MODE COUNT SECONDS [FIFO] [--no-gc]``.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

# Imported now, not when needed: at the memory-map limit, loading a module's .so fails too.
from iolab.topics.c10k.limits import readings

# sleep: each sleeper sleeps SECONDS. pipe: each blocks in a read of a FIFO nobody writes to.
# socket: each blocks in a read of a socket whose peer never writes. In the blocked modes SECONDS
# is how long the program holds its readers before leaving by itself (the runner stops it sooner).
MODES = ("sleep", "pipe", "socket")
# Exit code of a program that could not start all its sleepers (it printed FAILED first).
EXIT_FAILED = 3

# See start_all: enough for the readings of /proc and the FAILED line.
REPORT_RESERVE_BYTES = 4 * 2**20
LINE = re.compile(r"^(READY|DONE|FAILED) (\d+)(?: (.*))?$")


@dataclass(frozen=True)
class Args:
    """A Python program's command line."""

    mode: str
    count: int
    seconds: float
    fifo: str | None = None
    gc: bool = True  # False: the cyclic garbage collector is switched off (--no-gc)


def parse_args(argv: list[str]) -> Args:
    """``MODE COUNT SECONDS [FIFO] [--no-gc]``; SystemExit with a usage line if malformed."""
    usage = f"usage: {os.path.basename(sys.argv[0])} {{{'|'.join(MODES)}}} COUNT SECONDS [FIFO] [--no-gc]"
    gc = "--no-gc" not in argv
    argv = [arg for arg in argv if arg != "--no-gc"]
    if len(argv) not in (3, 4) or argv[0] not in MODES:
        raise SystemExit(usage)
    try:
        args = Args(argv[0], int(argv[1]), float(argv[2]), argv[3] if len(argv) == 4 else None, gc)
    except ValueError:
        raise SystemExit(usage) from None
    if args.count < 0 or args.seconds < 0:
        raise SystemExit(f"{usage}\nCOUNT and SECONDS must not be negative")
    if args.mode == "pipe" and not args.fifo:
        raise SystemExit(f"{usage}\npipe mode needs the FIFO to read from")
    return args


def ready(started: int) -> None:
    """Announce that ``started`` sleepers are running."""
    print(f"READY {started}", flush=True)


def done(completed: int, details: dict[str, Any] | None = None) -> None:
    """Announce that ``completed`` sleepers have finished, with ``details`` (JSON) if given."""
    print(f"DONE {completed}" + (f" {json.dumps(details)}" if details else ""), flush=True)


def failed(started: int, error: BaseException | str, freed_kb: int = 0) -> None:
    """Announce that the sleeper after ``started`` could not start, with this process's readings.

    ``freed_kb``: address space given back since the failure (start_all's reserve); it is added
    back, so the reading says how much was mapped when the start failed.
    """
    details = {"error": str(error) or type(error).__name__, **readings(os.getpid())}
    details["vm_size_kb"] += freed_kb
    print(f"FAILED {started} {json.dumps(details)}", flush=True)


def start_all(count: int, start_one: Callable[[], object]) -> int:
    """Call ``start_one`` ``count`` times and say READY; if one fails, say FAILED and exit at once.

    Exiting at once, without cleaning up: thousands of started threads or tasks cannot all be ended
    politely, and the readings printed are what the runner needs.
    """
    started = 0
    # Memory put aside to write the report with: at an address-space limit, reading /proc and
    # printing JSON would otherwise fail with MemoryError themselves. Untouched, it costs no RAM.
    reserve = bytearray(REPORT_RESERVE_BYTES)
    try:
        for _ in range(count):
            start_one()
            started += 1
    # RuntimeError: Python's "can't start new thread"; OSError: out of descriptors; MemoryError:
    # out of address space.
    except (RuntimeError, OSError, MemoryError) as exc:
        del reserve
        failed(started, exc, freed_kb=REPORT_RESERVE_BYTES // 1024)
        os._exit(EXIT_FAILED)
    ready(started)
    return started


def open_fifo(path: str) -> int:
    """The FIFO at ``path``, opened for reading *and* writing: it has a writer, so reads never see end-of-file."""
    return os.open(path, os.O_RDWR)


def silent_socket(keep: list[socket.socket]) -> socket.socket:
    """One end of a new socket pair; the other end stays open in ``keep`` and never sends."""
    mine, peer = socket.socketpair()
    keep += [mine, peer]
    return mine


@dataclass
class Report:
    """What a program said about itself, parsed from its output lines."""

    started: int | None = None
    completed: int | None = None
    done: dict[str, Any] | None = None  # the DONE details (the Python programs' collector readings)
    failed: dict[str, Any] | None = None  # the FAILED details; None if it did not print one
    other: list[str] = field(default_factory=list)  # anything else it printed (a crash report)


def parse_output(lines: list[str]) -> Report:
    """The report in a program's output; lines that are not protocol go to ``other``."""
    report = Report()
    for line in lines:
        match = LINE.match(line.strip())
        if not match:
            report.other.append(line)
        elif match[1] == "READY":
            report.started = int(match[2])
        elif match[1] == "DONE":
            report.completed = int(match[2])
            report.done = json.loads(match[3]) if match[3] else None
        else:
            report.started = int(match[2])
            report.failed = json.loads(match[3] or "{}")
    return report
