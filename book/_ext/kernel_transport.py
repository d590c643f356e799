"""Notebook kernels reach the build through Unix sockets, not loopback TCP.

myst-nb runs every notebook through nbclient, whose kernel manager talks to the kernel over TCP on
127.0.0.1 unless told otherwise, and ipykernel then warns, once per notebook, that the channel is
unencrypted. `make lab` starts JupyterLab with ``--KernelManager.transport=ipc``; myst-nb has no
setting for it, so this extension gives every kernel the build starts the same transport. Its sockets
live in a short temporary folder of the build's own (a Unix socket's path must stay under about 100
bytes, which a runtime folder under a long home directory can exceed), removed when the build ends.
Where Unix sockets do not exist (Windows), nothing changes.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from typing import Any

from nbclient import NotebookClient


def use_ipc(folder: str) -> None:
    """Make every nbclient kernel manager from now on use IPC sockets named under ``folder``."""
    create = getattr(NotebookClient.create_kernel_manager, "__wrapped__", NotebookClient.create_kernel_manager)

    def create_kernel_manager(self: NotebookClient) -> Any:
        # A kernel manager reads its settings from the client's config; several kernels may share the
        # prefix, since jupyter_client numbers the socket files past the ones that exist.
        self.config.KernelManager.transport = "ipc"
        self.config.KernelManager.ip = os.path.join(folder, "kernel")
        return create(self)

    create_kernel_manager.__wrapped__ = create  # type: ignore[attr-defined]
    NotebookClient.create_kernel_manager = create_kernel_manager  # type: ignore[method-assign]


def setup(app: Any) -> dict[str, Any]:
    if os.name == "posix":
        folder = tempfile.mkdtemp(prefix="iolab-kernels-", dir="/tmp" if os.path.isdir("/tmp") else None)
        use_ipc(folder)
        app.connect("build-finished", lambda _app, _error: shutil.rmtree(folder, ignore_errors=True))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
