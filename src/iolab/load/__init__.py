"""The load generator: closed loop (N clients) or open loop (a rate), measured without hiding delays.

Layout, one idea per module:

- ``model``: ``LoadSpec`` (what to run) and ``LoadResult`` (what was measured), JSON in and out;
- ``histogram``: HDR latency histograms that merge across processes;
- ``client``: one HTTP/1.1 client connection (an asyncio Protocol);
- ``worker``: one process generating load on a uvloop loop;
- ``manager``: ``run_load``, which starts the workers and merges their results;
- ``cli``: ``python -m iolab load``.

This file only re-exports.
"""

from iolab.load.histogram import Histogram
from iolab.load.manager import DescriptorLimit, run_load
from iolab.load.model import LoadResult, LoadSpec

__all__ = ["DescriptorLimit", "Histogram", "LoadResult", "LoadSpec", "run_load"]
