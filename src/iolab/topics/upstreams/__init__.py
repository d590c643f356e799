"""Threads vs async when upstreams are slow or down (source 001), with real upstreams on real sockets.

Layout, one idea per module:

- ``spec``: the latency spec, ``20ms*9,30s``, plus faults (``refuse``, ``reset``, ``hang``);
- ``endpoints``: the upstream endpoints, all in one asyncio process (``open_upstreams``);
- ``service``: what both service models share: the schedule, the ledger of requests;
- ``service_process``: the service process (``python -m iolab.topics.upstreams.service_process``), which runs one model;
- ``sync``: the service as a fixed pool of threads making blocking calls;
- ``asyncio``: the service as one event loop, a task per request, with an optional limit;
- ``trio``: the same async service on trio, its calls tasks of one nursery;
- ``result``: what a run measured, and source 001's figures computed from it;
- ``run``: ``RunSpec`` and ``run_upstreams``, the experiment runner;
- ``memory``: what a thread costs: virtual, resident and kernel memory, read from /proc;
- ``experiments``: the chapter's comparisons, as tidy tables; ``figures``: the chapter's recurring plots;
(``python -m iolab upstreams`` is in :mod:`iolab.commands.upstreams`.)

This file only re-exports.
"""

from iolab.kit.lazy import lazy_exports

# Re-exported lazily: the upstream and service processes import this package too, and must not
# pay for numpy and pandas (which ``result`` needs) at every start.
_EXPORTS = {
    "Endpoint": "spec",
    "format_spec": "spec",
    "parse_spec": "spec",
    "Upstreams": "endpoints",
    "open_upstreams": "endpoints",
    "RunSpec": "run",
    "run_service": "run",
    "run_upstreams": "run",
    "UpstreamsResult": "result",
}
__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
