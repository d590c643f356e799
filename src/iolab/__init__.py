"""iolab: the lab kit of the course on synchronous and asynchronous I/O.

The package is organised by idea, one module each, so that the module a notebook calls can be read
in one sitting:

- processes: ``procs`` (start, fork, stop), ``procfs`` (read /proc), ``guard`` (nothing left behind);
- workloads and experiments: ``julia``, ``costs``, ``cow``, ``parallel``;
- measurement plumbing: ``scale``, ``machine``, ``results``, ``plots``;
- the command line: ``cli`` (``python -m iolab``).

This file only re-exports the names notebooks use most.
"""

from iolab.kit.procs import open_fork, open_process, ProcessFailed, ProcessTimeout
from iolab.kit.scale import Scale, scale

__all__ = ["ProcessFailed", "ProcessTimeout", "Scale", "open_fork", "open_process", "scale"]
