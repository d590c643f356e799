"""For nbval only (``make test``): kernels start one at a time across pytest-xdist workers, with retries.

jupyter_client picks a kernel's five ports by binding to port 0 and closing the socket; the kernel
binds them a moment later. Two kernels starting at once can pick the same port, or a port that a
benchmark's client connection takes in between, and the kernel dies with "Kernel died before
replying to kernel_info" (jupyter/jupyter_client#487; seen in this course's CI right after the
notebooks that open thousands of loopback connections). A file lock makes the starts take turns,
and a kernel that dies starting is started again.
"""

from __future__ import annotations

import fcntl
import tempfile
from pathlib import Path
from typing import Any

try:
    import nbval.kernel
except ImportError:  # running the notebooks some other way: nothing to do
    nbval = None

LOCK = Path(tempfile.gettempdir()) / "iolab-nbval-kernel-start.lock"
ATTEMPTS = 3

if nbval is not None:
    _start_new_kernel = nbval.kernel.start_new_kernel

    def start_new_kernel_in_turn(*args: Any, **kwargs: Any) -> Any:
        """nbval's ``start_new_kernel``, under a machine-wide lock, tried up to ATTEMPTS times."""
        with LOCK.open("a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
            for attempt in range(1, ATTEMPTS + 1):
                try:
                    return _start_new_kernel(*args, **kwargs)
                except RuntimeError:
                    if attempt == ATTEMPTS:
                        raise

    nbval.kernel.start_new_kernel = start_new_kernel_in_turn
