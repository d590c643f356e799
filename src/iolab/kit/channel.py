"""A child process's channel to its parent: a JSON spec in, progress and one JSON result out.

The parent starts ``python -m MODULE SPEC_JSON`` with :func:`open_child`; the child reads its spec
from ``argv[1]`` and prints, on its standard output:

- ``READY``, if it should start on a signal (:func:`send_ready`); it then waits for
  :data:`START_SIGNAL`, which the parent sends to all its children at once (:meth:`Child.start`),
  so that N children start together rather than one Python start-up apart;
- ``TICK n1 n2 ...`` from time to time: whole numbers for a progress bar (:func:`send_progress`);
- ``RESULT {json}`` once, at the end (:func:`send_result`).

Standard output rather than a pipe of its own, as pyperf hands its workers (``pass_fds``): a kit
program's output is already read line by line by :class:`~iolab.kit.procs.ManagedProcess`, which
keeps the last lines, so a child that dies before its result becomes an error quoting what it
printed last, traceback included, in the order it printed it. One stream also needs no descriptor
handed down through whatever wraps the child (``ip netns exec``), and a line outside the protocol
(a warning) is skipped, not misread. The price: a child must print no line of its own that starts
with ``TICK `` or ``RESULT ``, and the kit's programs print nothing else there.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
from collections.abc import Iterator
from typing import Any

from iolab.kit import netns
from iolab.kit.procs import START_SECONDS, ManagedProcess, open_process, python_argv

READY = "READY"
# SIGUSR1 is free: Python gives it no meaning, and neither do uvloop, trio or the shells.
START_SIGNAL = signal.SIGUSR1
REPORT_PATTERN = r"^(TICK|RESULT) (.*)$"


# --- the child's side ----------------------------------------------------------------------------


def send_ready() -> None:
    """Tell the parent this child is set up and waits for :data:`START_SIGNAL`."""
    print(READY, flush=True)


def send_progress(*numbers: int) -> None:
    """One ``TICK`` line: the numbers the parent's progress bar shows."""
    print("TICK " + " ".join(str(n) for n in numbers), flush=True)


def send_result(result: dict[str, Any]) -> None:
    """The one ``RESULT`` line: ``result`` as JSON."""
    print("RESULT " + json.dumps(result), flush=True)


# --- the parent's side ---------------------------------------------------------------------------


class Child:
    """A child started by :func:`open_child`; ``result`` holds its result once it has come."""

    def __init__(self, process: ManagedProcess) -> None:
        self.process = process
        self.pid = process.pid
        self.result: dict[str, Any] | None = None

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Wait for the child's READY line (ProcessFailed if it exits first, ProcessTimeout if late)."""
        self.process.wait_for_line(f"^{READY}$", timeout=timeout)

    def start(self) -> None:
        """Send the start signal to a child that said READY."""
        os.kill(self.pid, START_SIGNAL)

    def wait_progress(self, timeout: float) -> tuple[int, ...] | None:
        """The numbers of the child's next TICK line; None once its RESULT has come (see ``result``).

        ProcessTimeout if neither comes within ``timeout``; ProcessFailed, quoting the child's last
        output, if it exits first.
        """
        if self.result is not None:
            return None
        match = self.process.wait_for_line(REPORT_PATTERN, timeout=timeout)
        if match[1] == "RESULT":
            self.result = json.loads(match[2])
            return None
        return tuple(int(n) for n in match[2].split())

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to exit; its exit code (ProcessTimeout if it does not)."""
        return self.process.wait(timeout)


@contextlib.contextmanager
def open_child(
    module: str, spec: str, *, namespace: str | None = None, env: dict[str, str] | None = None
) -> Iterator[Child]:
    """Run ``python -m module spec`` (inside network namespace ``namespace``, if given); leaving the block ends it."""
    argv = netns.exec_argv(namespace, python_argv("-m", module, spec))
    with open_process(argv, env=env) as process:
        yield Child(process)
