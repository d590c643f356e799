"""The c10k shoot-out: many concurrent sleepers in threads, asyncio, trio, Go and Node.js, watched via /proc.

The package is laid out by idea, one module each:

- the programs: ``threads``, ``asyncio``, ``trio`` (Python, ``python -m iolab.topics.c10k.NAME``) and
  ``programs`` (Go, JavaScript, Ruby as source text), all speaking ``protocol``'s lines;
- ``runtimes``: the table of runtimes (``RUNTIMES``) and which are installed;
- ``limits``: the machine's limits on threads, and which one a failed run met;
- ``launch``: the launcher that runs a program under the runner's limits;
- ``sampler``: memory, the kernel's share and OS threads of a process over time, from ``/proc``;
- ``runner``: one runtime in a child process under limits (``run``), or several (``run_each``,
  ``tables``, or both at once: ``shootout``);
- ``phases``: where an asyncio run's wall time goes beyond its sleep (``breakdown``);
- ``collector``: CPython's cyclic garbage collector inside a sleepers program, timed or switched off;
- ``blocked``: readers blocked on pipes and sockets, OS threads as their number grows;
- ``amdahl``: the 90%-waiting request against the kit's server;
(``python -m iolab sleepers`` is in :mod:`iolab.commands.c10k`.)

This file only re-exports what notebooks use most, and imports it when first asked for (PEP 562):
every Python sleepers program imports this package first, and its start-up is part of its wall time.
"""

from iolab.kit.lazy import lazy_exports

_EXPORTS = {
    "answers_allowed": "collector",
    "blocked_reads": "blocked",
    "breakdown": "phases",
    "MachineLimits": "limits",
    "ThreadCosts": "limits",
    "machine_limits": "limits",
    "name_limit": "limits",
    "predict_thread_limits": "limits",
    "ProgramRun": "runner",
    "run": "runner",
    "run_each": "runner",
    "shootout": "runner",
    "tables": "runner",
    "RUNTIMES": "runtimes",
    "Runtime": "runtimes",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
