"""The runtimes of the shoot-out: one table (``RUNTIMES``) that the runner, the CLI and the notebook read.

A runtime is a way to run many sleepers at once; what differs is who waits for them. Python threads
(and Ruby's) give each sleeper an OS thread the kernel puts to sleep; asyncio and trio keep each as a
task in one thread's event loop; Go multiplexes goroutines over a few OS threads; Node.js keeps
callbacks on one thread and hands file reads to a small pool. Go, Node.js and Ruby are optional: a
runtime whose tool is not on the PATH says so, and is skipped.
"""

from __future__ import annotations

import functools
import shutil
from collections.abc import Callable
from dataclasses import dataclass

from iolab.procs import python_argv
from iolab.sleepers import programs


def _python_program(name: str, tool: str | None) -> list[str]:
    return python_argv("-m", f"iolab.sleepers.{name}")


@dataclass(frozen=True)
class Runtime:
    """A runtime: its name, the modes its program knows, and the tool it needs on the PATH."""

    name: str
    waits: str  # in words: where a sleeper waits
    modes: tuple[str, ...]
    program: Callable[[str | None], list[str]]  # the tool's path -> the command line up to the arguments
    tool: str | None = None  # the executable it needs (None: this Python)
    # Descriptors a blocked reader holds, per mode (checked against ulimit -n before starting).
    fds_per_reader: tuple[tuple[str, int], ...] = (("pipe", 1), ("socket", 2))
    env: tuple[tuple[str, str], ...] = ()  # environment the program always runs with

    def missing(self) -> str | None:
        """Why this runtime cannot run here (its tool is not installed), or None."""
        if self.tool and shutil.which(self.tool) is None:
            return f"`{self.tool}` is not installed (not on the PATH): the {self.name} runs are skipped"
        return None

    def descriptors(self, mode: str, count: int) -> int:
        """How many descriptors ``count`` readers of ``mode`` hold."""
        return dict(self.fds_per_reader).get(mode, 0) * count

    @property
    def is_python(self) -> bool:
        """True for the kit's own programs, run by this Python (they know ``--no-gc``)."""
        return self.tool is None

    def check(self, mode: str, gc: bool = True) -> None:
        """ValueError if this runtime's program cannot run in ``mode``, or without a collector (``gc=False``)."""
        if mode not in self.modes:
            raise ValueError(f"the {self.name} program knows modes {', '.join(self.modes)}, not {mode!r}")
        if not gc and not self.is_python:
            raise ValueError(f"switching the garbage collector off is for the Python programs, not {self.name}")

    def argv(self, mode: str, count: int, seconds: float, fifo: str, gc: bool = True) -> list[str]:
        """The command line of this runtime's program (builds the Go program the first time).

        ``gc=False`` switches CPython's cyclic garbage collector off: the Python programs only.
        """
        self.check(mode, gc)
        if reason := self.missing():
            raise RuntimeError(reason)
        tool = shutil.which(self.tool) if self.tool else None
        return [*self.program(tool), mode, str(count), f"{seconds:g}", fifo, *(() if gc else ("--no-gc",))]


RUNTIMES: dict[str, Runtime] = {
    runtime.name: runtime
    for runtime in (
        Runtime("threads", "in the kernel: one OS thread each", ("sleep", "pipe", "socket"),
                functools.partial(_python_program, "threads"), fds_per_reader=(("pipe", 0), ("socket", 2))),
        Runtime("asyncio", "in one event loop: a timer or an epoll entry each", ("sleep", "pipe", "socket"),
                functools.partial(_python_program, "asyncio")),
        Runtime("trio", "in one event loop: a timer or an epoll entry each", ("sleep", "pipe", "socket"),
                functools.partial(_python_program, "trio")),
        Runtime("go", "in Go's scheduler (sleep, sockets) or in the kernel (read(2))", ("sleep", "pipe", "socket"),
                programs.go_argv, tool="go", fds_per_reader=(("pipe", 0), ("socket", 2)),
                # A fatal error says what it is in two lines, without a stack for every goroutine.
                env=(("GOTRACEBACK", "none"),)),
        Runtime("node", "in libuv's loop (timers) or its thread pool (file reads)", ("sleep", "pipe", "fed"),
                programs.node_argv, tool="node", fds_per_reader=(("pipe", 0),)),
        Runtime("ruby", "in the kernel: one OS thread each", ("sleep",), programs.ruby_argv, tool="ruby"),
    )
}
