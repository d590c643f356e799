"""The same small service twice, in asyncio and in trio, so that the diff of the two is the lesson.

The service fans out to "upstreams" (jobs that wait, then answer or fail) and passes work through a
bounded buffer to a slow consumer. Layout:

- ``shared``: what both versions use (``Job``, ``Log``, ``UpstreamError``) and ``diff``;
- ``asyncio``: the asyncio version (``TaskGroup``, ``asyncio.timeout``, ``asyncio.Queue``);
- ``trio``: the trio version (nursery, ``move_on_after``/``fail_after``, memory channels);
- ``timing``: the run time of one fan-out as the number of jobs grows, in asyncio, uvloop and trio.

The two modules have the same functions, in the same order, with the same names. This file only
re-exports.
"""

from iolab.topics.asyncio_trio.structured.shared import Job, Log, Sample, UpstreamError, diff

__all__ = ["Job", "Log", "Sample", "UpstreamError", "diff"]
