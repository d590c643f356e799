"""The load generator: closed loop (N clients) or open loop (a rate), measured without hiding delays.

Layout, one idea per module:

- ``model``: ``LoadSpec`` (what to run) and ``LoadResult`` (what was measured), JSON in and out;
- ``histogram``: HDR latency histograms that merge across processes;
- ``client``: one HTTP/1.1 client connection (an asyncio Protocol);
- ``_share``: one worker's part of a run (``Share``), as the manager hands it over;
- ``worker``: one process generating load (``python -m iolab.load.worker``), which runs
  - ``_run``: its ``Run`` on a uvloop loop, callback-driven, over
  - ``_slot``: its connection slots, one request in flight each,
  - ``_schedule``: the window it issues requests in and, in an open loop, the schedule, and
  - ``_tally``: what it counted, second by second;
- ``manager``: ``run_load``, which starts the workers and merges their results;
- ``sweeps``, ``comparisons``: many servers and settings as one tidy table (they start the servers:
  ``load`` is the layer above ``servers``); ``stall``: freeze a server mid-run;
- ``external``: wrk, ab and nginx beside the kit (optional tools);
- ``hostile``: slow and hostile clients (slowloris, idle holders, slow readers) beside a measurement.

``python -m iolab load`` is :mod:`iolab.commands.load`.

The modules whose names start with ``_`` are the worker's insides: only ``load`` imports them, so
they can change freely (``tests/test_layers.py`` fails on an import of another package's ``_module``).
What the layers above may use is the rest: this package's face, ``client``, ``histogram``,
``sweeps``, ``comparisons``, ``hostile``, ``stall``, ``external``, ``model`` and ``manager``.

This file only re-exports.
"""

from iolab.kit.machine import DescriptorLimit
from iolab.load.histogram import Histogram
from iolab.load.manager import run_load
from iolab.load.model import LoadResult, LoadSpec

__all__ = ["DescriptorLimit", "Histogram", "LoadResult", "LoadSpec", "run_load"]
