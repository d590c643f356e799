"""Source 004's word-frequency experiment: a server sends words, N client connections count them.

- ``corpus``: the (word, wait) pairs file in ``data/wordfreq/`` and the answer every client must reach;
- ``server``: the word server (asyncio on uvloop, listening through the kit's ``servers.sockets``);
- ``counting``: the client's business logic (split bytes into words, a running top-10), shared;
- ``threads``, ``scratch``, ``asyncio``, ``trio``: the four client versions, one module each;
- ``run``: start the server, run a version, measure it; ``cli``: ``python -m iolab wordfreq``.

This file only re-exports.
"""

from iolab.topics.wordfreq.counting import TopWords, WordStream
from iolab.topics.wordfreq.run import CLIENTS, measure, open_word_server, run_client, sweep

__all__ = ["CLIENTS", "TopWords", "WordStream", "measure", "open_word_server", "run_client", "sweep"]
