"""The c10k shoot-out: many concurrent sleepers in threads, asyncio, trio, Go and Node.js, watched via /proc.

The package is laid out by idea, one module each:

- the programs: ``threads``, ``asyncio``, ``trio`` (Python, ``python -m iolab.sleepers.NAME``) and
  ``programs`` (Go, JavaScript, Ruby as source text), all speaking ``protocol``'s lines;
- ``runtimes``: the table of runtimes (``RUNTIMES``) and which are installed;
- ``limits``: the machine's limits on threads, and which one a failed run met;
- ``launch``: the launcher that runs a program under the runner's limits;
- ``sampler``: memory, the kernel's share and OS threads of a process over time, from ``/proc``;
- ``runner``: one runtime in a child process under limits (``run``), or several (``shootout``);
- ``blocked``: readers blocked on pipes and sockets, OS threads as their number grows;
- ``amdahl``: the 90%-waiting request against the kit's server;
- ``cli``: ``python -m iolab sleepers``.

This file only re-exports what notebooks use most; it imports nothing heavy, because every Python
sleepers program imports it first.
"""

from iolab.sleepers.blocked import blocked_reads
from iolab.sleepers.limits import MachineLimits, ThreadCosts, machine_limits, name_limit, predict_thread_limits
from iolab.sleepers.runner import Run, run, shootout
from iolab.sleepers.runtimes import RUNTIMES, Runtime

__all__ = [
    "RUNTIMES",
    "MachineLimits",
    "Run",
    "Runtime",
    "ThreadCosts",
    "blocked_reads",
    "machine_limits",
    "name_limit",
    "predict_thread_limits",
    "run",
    "shootout",
]
