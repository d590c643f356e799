"""Chapter 5, an event loop: source 004's word-frequency experiment, N client connections count words.

- ``corpus``: the (word, wait) pairs file in ``data/wordfreq/`` and the answer every client must reach;
- ``server``: the word server (asyncio on uvloop, listening through the kit's ``kit.sockets``);
- ``counting``: the client's business logic (split bytes into words, a running top-10), shared;
- ``threads``, ``scratchloop``, ``asyncio``, ``trio``: the four client versions, one module each;
- ``limits``: the limits source 004 ran into (descriptors, threads' memory, the listen backlog), each
  with its error and its fix;
- ``run``: start the server, run a version, measure it, each in a process of its own (``server``'s
  ``__main__`` and this package's, each given its spec through ``kit.channel``); the command
  ``python -m iolab wordfreq`` is :mod:`iolab.commands.event_loop`.

This file only re-exports.
"""

from iolab.topics.event_loop.counting import TopWords, WordStream
from iolab.topics.event_loop.run import CLIENTS, measure, open_word_server, run_client, sweep

__all__ = ["CLIENTS", "TopWords", "WordStream", "measure", "open_word_server", "run_client", "sweep"]
