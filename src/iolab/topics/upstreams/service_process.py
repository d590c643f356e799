"""The service process: ``python -m iolab.topics.upstreams.service_process SPEC_JSON`` runs the model its ServiceSpec names.

It sends ``TICK second finished`` once a second and finally ``RESULT {json}`` over the kit's child
channel (:mod:`iolab.kit.channel`); then it exits at once
with ``os._exit``: calls still hanging (threads blocked in ``recv``, tasks awaiting a black hole) end
with the process, as they would in a crash. A module of its own because it picks among the models,
which all import :mod:`~iolab.topics.upstreams.service`.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from iolab.kit import channel
from iolab.kit.machine import raise_open_files_limit
from iolab.topics.upstreams.service import ServiceSpec


def finish_process(result: dict[str, Any] | None) -> None:
    """Send the result line and end the process now, hanging calls and all."""
    if result is not None:
        channel.send_result(result)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run(spec: ServiceSpec) -> None:
    """Run the model ``spec`` names; send its result and end the process."""
    # Calls in flight should fail for their own reasons (a black hole holding thousands of
    # sockets), not because a shell left the soft limit at a conservative 1,024.
    raise_open_files_limit()
    if spec.model == "sync":
        from iolab.topics.upstreams import sync as model
    elif spec.loop == "trio":
        from iolab.topics.upstreams import trio as model  # type: ignore[no-redef]
    else:
        from iolab.topics.upstreams import asyncio as model  # type: ignore[no-redef]
    finish_process(model.run(spec))


if __name__ == "__main__":
    channel.child_main(ServiceSpec, run)
