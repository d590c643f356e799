"""iolab: the lab kit of the course on synchronous and asynchronous I/O.

The folders are the architecture: five layers, each importing only from the layers above it in this
list, never from one below (a test, ``tests/test_layers.py``, enforces it):

1. ``kit``: processes, ``/proc``, the machine, scale, results, plots, sockets, the guard;
2. ``web`` (the HTTP protocol, the app, the Julia set) and ``scratchloop`` (chapter 5's event loop,
   built from nothing: it imports nothing from iolab at all);
3. ``servers`` (one module per concurrency model) and ``load`` (the load generator, sweeps, external tools);
4. ``topics``: one package per concept of the course (``topics.prefork``, ``topics.upstreams``...); a topic
   never imports another topic;
5. ``commands``: ``python -m iolab COMMAND``, one module per topic; nothing imports it.

Beside ``topics`` stand ``homework`` (student editions and the grader), which imports only ``kit``: it
reads notebooks, it does not run experiments; and ``netlab`` (chapter 12's simulated network: two
network namespaces joined by an impaired link), which imports only ``kit`` too. The servers and the
load generator run inside its namespaces by name (``kit.netns``), without importing it.

Where new code goes: an experiment of a chapter goes in that chapter's topic; a helper that two topics
need moves down to ``kit`` (or ``web``, ``servers``, ``load`` if that is what it is about); a command
goes in ``commands`` and only parses, calls a topic and prints. A module stays under about 400 lines.

This file only re-exports the names notebooks use most.
"""

from iolab.kit.procs import ProcessFailed, ProcessTimeout, open_fork, open_process
from iolab.kit.scale import Scale, scale

__all__ = ["ProcessFailed", "ProcessTimeout", "Scale", "open_fork", "open_process", "scale"]
