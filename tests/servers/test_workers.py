"""iolab.servers.workers: the parent announces the port only once every worker is ready."""

from __future__ import annotations

import time

from iolab.kit import procs, sockets

# Workers that get ready at once, after 0.5 s, and never (they die first).
PROGRAM = """
import sys, time
from iolab.kit import sockets
from iolab.servers import workers

def prompt(ready):
    ready()
    time.sleep(60)

def slow(ready):
    time.sleep(0.5)
    ready()
    time.sleep(60)

def dies(ready):
    sys.exit(3)

with sockets.open_listener() as listener:
    print("forking", flush=True)
    sys.exit(workers.serve_workers([prompt, slow, dies], [listener]))
"""


def test_the_port_is_announced_after_the_slowest_worker_is_ready_and_a_dead_one_is_reported() -> None:
    with procs.open_process(procs.python_argv("-c", PROGRAM)) as process:
        process.wait_for_line("forking")
        start = time.monotonic()
        process.wait_for_line(sockets.LISTENING_PATTERN)
        assert time.monotonic() - start >= 0.45
        process.wait_for_line(r"worker \d+ exited with code 3")
        assert process.poll() is None  # the others serve on
