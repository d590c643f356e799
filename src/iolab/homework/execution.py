"""Run chosen cells of a notebook in a fresh kernel, under one time limit for the whole notebook.

The limit counts from the moment the kernel is ready, so that a machine slow to start one (busy,
or a sandbox) costs no cell its time; the start has a limit of its own (``STARTUP_SECONDS``).
nbclient gives each cell a timeout; the notebook's limit is kept by giving each cell only the time
that is left. When it runs out, or when the run ends, the kernel and every process it started are
killed: a submission that forks and never reaps, or hangs in C code, cannot outlive its grading.
Errors are recorded, not raised (``allow_errors``): a failing cell is a result, and the cells after
it still run.

With a ``Sandbox``, the kernel starts inside it (``sandbox``): its command line is wrapped in
bwrap's, and it talks to nbclient over Unix sockets in the scratch folder (ZeroMQ's ``ipc``
transport), since a kernel in a network namespace of its own cannot be reached on the host's loopback.

With ``Caps`` (``caps``), the run is also stopped when it passes a cap on processes, memory or its
folder, with the cap as the reason; a file or a /tmp past its cap is an error in the cell that wrote
it; and each cell keeps at most so many bytes of output (:class:`CappedClient`).
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
from pathlib import Path
from typing import Any

import nbformat
import psutil
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient
from nbclient.exceptions import CellTimeoutError, DeadKernelError

from iolab.homework.caps import Caps, Watchdog, explain, launcher, open_cgroup, size_text
from iolab.homework.cgroups import Cgroup
from iolab.homework.sandbox import Confinement, Sandbox

# How long a killed kernel's children get to disappear before we stop waiting. They have had SIGKILL
# and can do nothing more; under a subreaper such as `iolab guard` they stay zombies until it reaps
# them, and a sandbox's namespaces take about a second to be torn down, which nobody need wait for.
KILL_WAIT_SECONDS = 0.25
# A kernel's start has this long (nbclient's ``startup_timeout``); the notebook's time limit counts after it.
STARTUP_SECONDS = 60
# What an error output past the output cap keeps of its message: enough for cell_error's first line.
ERROR_CHARACTERS = 2000


@dataclass(frozen=True)
class CellRun:
    """One cell that ran: its index, how long it took, and its error as ``"Name: message"`` (None if none)."""

    index: int
    seconds: float
    error: str | None


@dataclass(frozen=True)
class Execution:
    """What a run did: the cells that ran, why it stopped early (None if not), its seconds from the kernel ready."""

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


class CappedKernelManager(AsyncKernelManager):
    """A kernel manager whose kernel command line starts with ``launcher`` (``caps.launcher``: its limits and
    cgroup) and, with a ``sandbox``, runs inside it, listening on Unix sockets in its scratch folder.

    Asynchronous, as nbclient's own: with a blocking client, waiting for output would block the loop
    that notices a dead kernel.
    """

    def __init__(self, sandbox: Confinement | None, launcher: Sequence[str] = (), **kwargs: Any) -> None:
        if sandbox is not None:
            scratch = sandbox.scratch
            kwargs |= {"transport": "ipc", "ip": str(scratch / "kernel"), "connection_file": str(scratch / "kernel.json")}
        super().__init__(**kwargs)
        self.sandbox = sandbox
        self.launcher = list(launcher)

    def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
        argv = super().format_kernel_cmd(extra_arguments)
        return [*self.launcher, *(self.sandbox.wrap(argv) if self.sandbox is not None else argv)]


class CappedClient(NotebookClient):
    """A notebook client that keeps at most ``output_bytes`` of each cell's outputs (None: all of them).

    nbclient appends every output message to the cell, so a cell that prints without end grows the
    grader's memory without end (200 MB in 1.8 s in a hostile trial). Past the cap, stream text is cut
    and other outputs dropped, and one line says so; error outputs are always kept, as the cell's error
    is read from them (their traceback cut to the cap).
    """

    def __init__(self, nb: Any, output_bytes: int | None = None, **kwargs: Any) -> None:
        super().__init__(nb, **kwargs)
        self.output_bytes = output_bytes
        self._kept: dict[int, int] = {}

    def output(self, outs: list[Any], msg: dict[str, Any], display_id: str | None, cell_index: int) -> Any:
        out = super().output(outs, msg, display_id, cell_index)
        if self.output_bytes is None or out is None or not outs or outs[-1] is not out:
            return out  # a widget's hook took it, or nothing was added
        kept = self._kept.get(cell_index, 0) if len(outs) > 1 else 0  # the first, or outputs cleared: anew
        room = max(0, self.output_bytes - kept)
        size = _output_size(out)
        if size > room:
            if out.output_type == "error":
                out.traceback = _cut_lines(out.get("traceback", []), room)
                out.evalue = str(out.get("evalue", ""))[:max(room, ERROR_CHARACTERS)]
            elif out.output_type == "stream" and room > 0:
                out.text = out.text[:room]
            elif display_id:  # its place is recorded for later updates: emptied, not removed
                out.data = {"text/plain": ""}
            else:
                outs.pop()
            if kept <= self.output_bytes:  # said once per cell
                outs.append(_note(self.output_bytes))
            size = room + 1  # past the cap from now on
        self._kept[cell_index] = kept + size
        return out


def _output_size(out: Any) -> int:
    """About how many bytes an output holds (its text, or the values of its data and traceback)."""
    if out.output_type == "stream":
        return len(out.get("text", ""))
    parts = [*out.get("data", {}).values(), *out.get("traceback", []), out.get("evalue", "")]
    return sum(len(part) if isinstance(part, str) else len(str(part)) for part in parts)


def _cut_lines(lines: list[str], room: int) -> list[str]:
    """The first of ``lines`` that fit in ``room`` characters, and the last line (it names the error), cut short."""
    kept: list[str] = []
    for line in lines[:-1]:
        room -= len(line)
        if room < 0:
            break
        kept.append(line)
    return [*kept, *(line[:ERROR_CHARACTERS] for line in lines[-1:])]


def _note(output_bytes: int) -> Any:
    return nbformat.v4.new_output("stream", name="stderr",
                                  text=f"\n[the grader kept the first {size_text(output_bytes)} of this cell's output]\n")


def _kernel_pid(client: NotebookClient) -> int:
    """The process id of the kernel ``client`` started (jupyter_client's local provisioner keeps it)."""
    provisioner = client.km.provisioner if client.km is not None else None
    pid = getattr(provisioner, "pid", None)
    if not isinstance(pid, int):
        raise RuntimeError("the kernel started without a process id (not a local kernel?)")
    return pid


def execute_cells(nb: Any, indices: Sequence[int], time_limit: float, env: Mapping[str, str] | None = None,
                  cwd: str | None = None, sandbox: Confinement | None = None, caps: Caps | None = None) -> Execution:
    """Run the code cells ``indices`` of ``nb`` (in place: outputs land in it) within ``time_limit`` seconds,
    counted once the kernel is ready (its start has ``STARTUP_SECONDS``).

    ``env`` is added to this process's environment for the kernel; ``cwd`` is its working directory.
    With ``sandbox``, the kernel runs in it, with ``env`` as its whole environment and its scratch folder as ``cwd``.
    With ``caps``, the run is held to them (``caps``: a cgroup where the machine gives one, file limits, a
    watchdog on the processes and the folder ``cwd``, and the outputs kept); None runs trusted code uncapped.
    """
    kernel_name = nb.metadata.get("kernelspec", {}).get("name", "python3")
    if sandbox is not None:
        sandbox = dataclasses.replace(sandbox, env=dict(sandbox.env) | dict(env or {}))  # type: ignore[type-var]
        if caps is not None and isinstance(sandbox, Sandbox):
            sandbox = dataclasses.replace(sandbox, tmp_bytes=caps.tmp_bytes)
        cwd = str(sandbox.scratch)
    with open_cgroup(caps) if caps is not None else contextlib.nullcontext() as cgroup:
        start_with = launcher(caps, cgroup) if caps is not None else []
        client = CappedClient(nb, caps.output_bytes_per_cell if caps else None, allow_errors=True,
                              startup_timeout=STARTUP_SECONDS, kernel_name=kernel_name,
                              resources={"metadata": {"path": cwd or os.getcwd()}},
                              km=CappedKernelManager(sandbox, start_with, kernel_name=kernel_name))
        return _run(client, nb, indices, time_limit, env, caps, cgroup, Path(cwd) if cwd else None)


def _run(client: CappedClient, nb: Any, indices: Sequence[int], time_limit: float, env: Mapping[str, str] | None,
         caps: Caps | None, cgroup: Cgroup | None, scratch: Path | None) -> Execution:
    """The cells run by ``client``'s kernel, watched when there are ``caps``: what :func:`execute_cells` returns."""
    ran: dict[int, CellRun] = {}
    stopped = None
    # The kernel's own stdout and stderr carry only its start-up banner and warnings (what cells print
    # reach their outputs).
    # cleanup_kc: nbclient shuts down (and reaps) only a kernel manager it made itself, unless told to.
    with client.setup_kernel(env=os.environ | dict(env or {}), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             cleanup_kc=True):
        # The limit counts from here, the kernel ready: on a busy machine its start alone can take seconds
        # (a sandbox, a cgroup, ipykernel's imports), and the student's cells are not to pay for them.
        start = time.monotonic()
        kernel_pid = _kernel_pid(client)
        watchdog = Watchdog(kernel_pid, caps, lambda: kill_tree(kernel_pid), scratch, cgroup) if caps else None
        try:
            with watchdog or contextlib.nullcontext():
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
                    if watchdog is not None:
                        # Once more after each cell, so that the cell that passed a cap is the one named,
                        # however soon it ended (a fork refused by the cgroup, then caught), and a kernel
                        # the cgroup's OOM killer ended is reported as that.
                        reason = watchdog.enforce()
                        stopped = f"{reason} in cell {index}" if reason else stopped
                    error = cell_error(cell)
                    ran[index] = CellRun(index, time.monotonic() - began,
                                         stopped or (explain(error, caps) if caps else error))
                    if stopped:
                        break
        finally:
            kill_tree(kernel_pid)
            if cgroup is not None:
                cgroup.kill()
    return Execution(ran, stopped, time.monotonic() - start)
