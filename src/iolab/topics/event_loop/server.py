"""The word server: on each connection, send one slice of the pairs file, a word, then its wait, and close.

Source 004's was a thread per connection; this one is an asyncio Protocol on uvloop, so that the
server stays the cheap side of the experiment at 10,000 connections (a timer and a write per word)
and the clients are what is measured. It is started as ``python -m iolab.topics.event_loop.server SPEC_JSON``
(a :class:`~iolab.topics.event_loop.run.WordServer`; see ``run.open_word_server``), listens through the
kit (``iolab.kit.sockets``) and prints the same "listening on" line as the HTTP servers.
"""

from __future__ import annotations

import asyncio
import itertools
import socket
import typing

import uvloop

from iolab.kit import channel, machine, sockets
from iolab.topics.event_loop import corpus
from iolab.topics.event_loop.run import WordServer


class WordSender(asyncio.Protocol):
    """One connection: once the client says hello, write each word of its slice, wait the pair's wait, then close."""

    def __init__(self, pairs: list[tuple[str, float]]) -> None:
        self.pairs = iter(pairs)
        self.transport: asyncio.Transport
        self.timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = typing.cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        if self.timer is None:  # the client's hello (see counting.HELLO): start
            self._send_next()

    def _send_next(self) -> None:
        pair = next(self.pairs, None)
        if pair is None:
            self.transport.close()
            return
        word, wait = pair
        self.transport.write(word.encode() + b"\n")
        self.timer = asyncio.get_running_loop().call_later(wait, self._send_next)

    def connection_lost(self, exc: Exception | None) -> None:
        if self.timer is not None:
            self.timer.cancel()


async def serve_words(listener: socket.socket, words: int, backlog: int) -> None:
    """Serve slices of ``words`` pairs on ``listener`` until SIGTERM or SIGINT."""
    loop = asyncio.get_running_loop()
    stop = sockets.stop_event()
    pairs = corpus.load()
    index = itertools.count()
    server = await loop.create_server(
        lambda: WordSender(corpus.slice_for(pairs, next(index), words)), sock=listener, backlog=backlog
    )
    sockets.announce(listener)
    await stop.wait()
    server.close()


def serve(port: int, words: int, backlog: int) -> int:
    """Run the word server until stopped; the exit code."""
    # A descriptor per connection: take all that ulimit -n allows, whatever the client set for itself.
    machine.raise_open_files_limit()
    with sockets.open_listener(port, backlog) as listener:
        uvloop.run(serve_words(listener, words, backlog))
    return 0


def run(spec: WordServer) -> int:
    """Run the word server ``spec`` describes in this process until SIGTERM or SIGINT; the exit code."""
    return serve(spec.port, spec.words, spec.backlog)


if __name__ == "__main__":
    channel.child_main(WordServer, run)
