"""Run chosen cells of a notebook in a fresh kernel, under one time limit for the whole notebook.

nbclient gives each cell a timeout; the notebook's limit is kept by giving each cell only the time
that is left. When it runs out, or when the run ends, the kernel and every process it started are
killed: a submission that forks and never reaps, or hangs in C code, cannot outlive its grading.
Errors are recorded, not raised (``allow_errors``): a failing cell is a result, and the cells after
it still run.

With a ``Sandbox``, the kernel starts inside it (``sandbox``): its command line is wrapped in
bwrap's, and it talks to nbclient over Unix sockets in the scratch folder (ZeroMQ's ``ipc``
transport), since a kernel in a network namespace of its own cannot be reached on the host's loopback.
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import psutil
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from iolab.homework.sandbox import Confinement

# How long a killed kernel's children get to disappear before we stop waiting. They have had SIGKILL
# and can do nothing more; under a subreaper such as `iolab guard` they stay zombies until it reaps
# them, and a sandbox's namespaces take about a second to be torn down, which nobody need wait for.
KILL_WAIT_SECONDS = 0.25


@dataclass(frozen=True)
class CellRun:
    """One cell that ran: its index, how long it took, and its error as ``"Name: message"`` (None if none)."""

    index: int
    seconds: float
    error: str | None


@dataclass(frozen=True)
class Execution:
    """What a run did: the cells that ran, why it stopped early (None if it did not), its seconds."""

    cells: dict[int, CellRun]
    stopped: str | None
    seconds: float


def cell_error(cell: Any) -> str | None:
    """The error a code cell's outputs show, as ``"ValueError: message"`` (first line); None if none."""
    for output in cell.get("outputs", []):
        if output.get("output_type") == "error":
            message = str(output.get("evalue", "")).strip().split("\n")[0]
            return f"{output.get('ename', 'Error')}: {message}" if message else str(output.get("ename", "Error"))
    return None


def kill_tree(pid: int) -> None:
    """Kill process ``pid`` and every process below it."""
    try:
        root = psutil.Process(pid)
        root.suspend()  # frozen, the kernel starts no new child while we list them
        procs = [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return
    for proc in procs:
        with contextlib.suppress(psutil.NoSuchProcess):
            proc.kill()
    # The kernel itself is nbclient's child: its clean-up reaps it.
    psutil.wait_procs(procs[1:], timeout=KILL_WAIT_SECONDS)


class SandboxedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel starts inside ``sandbox`` and listens on Unix sockets in its scratch folder.

    Asynchronous, as nbclient's own: with a blocking client, waiting for output would block the loop
    that notices a dead kernel.
    """

    def __init__(self, sandbox: Confinement, **kwargs: Any) -> None:
        scratch = sandbox.scratch
        super().__init__(transport="ipc", ip=str(scratch / "kernel"), connection_file=str(scratch / "kernel.json"),
                         **kwargs)
        self.sandbox = sandbox

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        return self.sandbox.wrap(super().format_kernel_cmd(extra_arguments))


def execute_cells(nb: Any, indices: Sequence[int], time_limit: float, env: Mapping[str, str] | None = None,
                  cwd: str | None = None, sandbox: Confinement | None = None) -> Execution:
    """Run the code cells ``indices`` of ``nb`` (in place: outputs land in it) within ``time_limit`` seconds, start included.

    ``env`` is added to this process's environment for the kernel; ``cwd`` is its working directory.
    With ``sandbox``, the kernel runs in it, with ``env`` as its whole environment and its scratch folder as ``cwd``.
    """
    kernel_name = nb.metadata.get("kernelspec", {}).get("name", "python3")
    if sandbox is not None:
        sandbox = dataclasses.replace(sandbox, env=dict(sandbox.env) | dict(env or {}))  # type: ignore[type-var]
        cwd = str(sandbox.scratch)
    client = NotebookClient(nb, allow_errors=True, kernel_name=kernel_name,
                            resources={"metadata": {"path": cwd or os.getcwd()}},
                            km=SandboxedKernelManager(sandbox, kernel_name=kernel_name) if sandbox else None)
    ran: dict[int, CellRun] = {}
    stopped = None
    start = time.monotonic()
    # The kernel's own stdout and stderr carry only its start-up banner and warnings (what cells print
    # reaches their outputs).
    # cleanup_kc: nbclient shuts down (and reaps) only a kernel manager it made itself, unless told to.
    with client.setup_kernel(env=os.environ | dict(env or {}), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             cleanup_kc=True):
        kernel_pid = client.km.provisioner.pid
        try:
            for index in indices:
                cell = nb.cells[index]
                if cell.cell_type != "code":
                    continue
                left = time_limit - (time.monotonic() - start)
                if left <= 0:
                    stopped = f"the notebook's time limit ({time_limit:g} s) ran out before cell {index}"
                    break
                client.timeout = max(1, math.ceil(left))
                began = time.monotonic()
                try:
                    client.execute_cell(cell, index)
                except CellTimeoutError:
                    stopped = f"the notebook's time limit ({time_limit:g} s) ran out in cell {index}"
                except DeadKernelError:
                    stopped = f"the kernel died in cell {index}"
                ran[index] = CellRun(index, time.monotonic() - began, stopped or cell_error(cell))
                if stopped:
                    break
        finally:
            kill_tree(kernel_pid)
    return Execution(ran, stopped, time.monotonic() - start)
