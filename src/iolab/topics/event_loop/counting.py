"""The client's "business logic", shared by every version: split bytes into words, keep a running top-10.

Source 004's client updated its top-10 on every word and printed it. Here the top-10 is kept up to
date on every word too (the work is the same) but not printed: printing 100,000 lines would measure
the terminal.
"""

from __future__ import annotations

from iolab.topics.event_loop.corpus import TOP

# What a client sends first. The server starts its words when this arrives, not at accept: a client
# that only listened could not tell that the server had dropped its handshake (a full accept queue
# drops the handshake's last ACK, and the client believes it is connected); data it sends is
# retransmitted by TCP until the server has room to accept it.
HELLO = b"hello\n"
# At most this many connections of one client between connect() and the server's first word. Past
# the server's accept queue (at most net.core.somaxconn, 4096), Linux drops the handshake's last ACK;
# the client believes it is connected, and if the server has not caught up when the handshake expires
# (about a minute: net.ipv4.tcp_synack_retries), the client's hello is answered with a reset.
CONNECTING = 1000


class TopWords:
    """Word counts and the running top-``size`` (most frequent first, ties alphabetical).

    Updating costs O(size) per word, not a sort of the whole vocabulary: a count only ever grows by
    one, so a word outside the top can only enter it by overtaking the current last one.
    """

    def __init__(self, size: int = TOP) -> None:
        self.size = size
        self.counts: dict[str, int] = {}
        self.top: list[str] = []
        self.words = 0

    def _key(self, word: str) -> tuple[int, str]:
        return (-self.counts[word], word)

    def add(self, word: str) -> None:
        """Count ``word`` and update the top."""
        self.words += 1
        self.counts[word] = self.counts.get(word, 0) + 1
        top = self.top
        if word not in top:
            if len(top) < self.size:
                top.append(word)
            elif self._key(word) < self._key(top[-1]):
                top[-1] = word
            else:
                return
        top.sort(key=self._key)

    def ranked(self) -> list[tuple[str, int]]:
        """The top words with their counts."""
        return [(word, self.counts[word]) for word in self.top]


class WordStream:
    """One connection's bytes, split into words; a word cut between two reads is kept until its end arrives."""

    def __init__(self) -> None:
        self._rest = b""

    def feed(self, data: bytes) -> list[str]:
        """The words completed by ``data``."""
        *lines, self._rest = (self._rest + data).split(b"\n")
        return [line.decode() for line in lines]
