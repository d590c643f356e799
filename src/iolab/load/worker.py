"""One load-generating process: ``python -m iolab.load.worker SHARE_JSON``.

The worker says ``READY``, waits for the start signal (so that all workers start together), runs
its :class:`~iolab.load._share.Share` on one uvloop loop (:class:`~iolab.load._run.Run`), sends
``TICK second answers errors`` once a second and finally ``RESULT {json}``, over the kit's child
channel (:mod:`iolab.kit.channel`). The manager (:mod:`iolab.load.manager`) starts the workers and
merges their results.
"""

from __future__ import annotations

import asyncio
from typing import Any

from iolab.kit import channel
from iolab.kit.machine import SPARE_DESCRIPTORS, raise_open_files_limit
from iolab.kit.procfs import cpu_seconds
from iolab.kit.procs import START_SECONDS
from iolab.load._run import Run
from iolab.load._share import Share

# Past the duration and one timeout, every request has ended; the margin only guards against a bug.
FINISH_MARGIN_S = 5.0


async def run_share(share: Share) -> dict[str, Any]:
    """Wait for the start signal, run ``share`` and return its result (CPU seconds included)."""
    loop = asyncio.get_running_loop()
    go = asyncio.Event()
    loop.add_signal_handler(channel.START_SIGNAL, go.set)
    channel.send_ready()
    await asyncio.wait_for(go.wait(), START_SECONDS)  # the manager's own wait for a start
    run = Run(share, loop)
    cpu = cpu_seconds()
    run.start()
    spec = share.spec
    try:
        await asyncio.wait_for(run.done.wait(), spec.duration_s + spec.timeout_s + FINISH_MARGIN_S)
    except TimeoutError:
        run.tally.errors["unfinished"] += run.in_flight()
    finally:
        run.close()
    return run.result() | {"cpu_s": cpu_seconds() - cpu}


def serve_share(share: Share) -> dict[str, Any]:
    """Run ``share`` on a uvloop loop; its result, which ``child_main`` sends as the one ``RESULT`` line."""
    import uvloop

    # The manager has already checked that the hard limit suffices.
    raise_open_files_limit(share.connections + SPARE_DESCRIPTORS)
    return uvloop.run(run_share(share))


if __name__ == "__main__":
    channel.child_main(Share, serve_share)
