"""iolab: the lab kit of the course on synchronous and asynchronous I/O.

The folders are the architecture: packages on six levels, ``kit`` at the bottom, and imports point
down. A package imports only from the packages its row names, each on a lower level than its own:
never from one above it or beside it. This table is the rule itself: ``tests/test_layers.py`` reads
it, and fails on an import it does not allow, and on a module below ``commands`` that starts
``python -m iolab COMMAND``. Bottom to top::

    level  package      may import from
    1      kit          nothing in iolab
    1      scratchloop  nothing in iolab
    2      web          kit
    2      netlab       kit
    2      homework     kit
    3      servers      kit, web, scratchloop
    4      load         kit, web, servers
    5      topics       kit, web, scratchloop, netlab, servers, load
    6      commands     kit, web, scratchloop, netlab, homework, servers, load, topics

What each package is, bottom to top:

- ``kit``: processes, ``/proc``, the machine, scale, results, plots, sockets, the guard;
- ``scratchloop``: chapter 5's event loop, built from nothing (a server model runs on it);
- ``web``: what the servers serve: the HTTP protocol (sans-I/O), the app, the Julia set;
- ``netlab``: chapter 12's simulated network, two network namespaces joined by an impaired link; the
  servers and the load generator run inside its namespaces by name (``kit.netns``), without importing it;
- ``homework``: student editions and the grader; it reads notebooks, it runs no experiment;
- ``servers``: one module per concurrency model, and ``MODELS``, the table of them;
- ``load``: the load generator, and the sweeps and comparisons that run it against the servers;
- ``topics``: one package per concept of the course (``topics.prefork``, ``topics.upstreams``...); a
  topic never imports another topic;
- ``commands``: ``python -m iolab COMMAND``: a module per chapter's instruments or per group of tools,
  and what they share; nothing imports it.

Outside the table, this file re-exports from ``kit`` only, and ``__main__`` only runs ``commands``.

Where new code goes: in the lowest layer that has everything it uses.

- An experiment of a chapter goes in that chapter's topic. A helper that two topics need moves down,
  to ``kit`` or to ``web``, ``servers`` or ``load`` if that is what it is about.
- Harness code that spans the servers and the load generator (``load.sweeps``, ``load.comparisons``)
  goes in ``load``, the lowest layer that has both.
- A child process's ``python -m`` entry point goes in a module of the lowest layer that has what the
  child runs (``python -m iolab.servers``, ``python -m iolab.load.worker``), and takes its settings
  as one typed object (a dataclass as JSON), not as a command line made for people. Nothing below
  ``commands`` starts ``python -m iolab COMMAND``.
- A command goes in ``commands`` and only parses its arguments, calls the layers below and prints.
- A context manager that owns a resource (a process, a thread or task, sockets, a server) and closes
  it on exit is named ``open_*`` (``open_process``, ``open_watch``); a scope that only changes
  something for the block (a CPU affinity, a namespace, signal handlers) is named for the state
  inside it (``on_cpus``, ``entered``, ``stopped_by_signals``).

A module whose name starts with ``_`` (``iolab.load._run``) is its package's own: nothing outside the
package imports it. A module stays under about 400 lines. This file only re-exports the names notebooks use most.
"""

from iolab.kit.procs import ProcessFailed, ProcessTimeout, open_fork, open_process
from iolab.kit.scale import Scale, scale

__all__ = ["ProcessFailed", "ProcessTimeout", "Scale", "open_fork", "open_process", "scale"]
