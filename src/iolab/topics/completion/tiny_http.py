"""The smallest HTTP/1.1 a load generator accepts: every complete request head gets the same answer.

Chapter 13 compares ways of *waiting* (epoll readiness, uvloop, io_uring completions), so the
three servers it measures do the same tiny work per request, and what differs is the system calls
around it. The course's full servers (``iolab.servers``) parse with httptools and route through the
app; here a request is any head ending in a blank line, and the answer is always ``ok``. The
course's load generator sends ``GET`` requests without a body, one at a time per connection, which
is all this needs to understand. Anything else (a head over :data:`MAX_HEAD` bytes, a method other
than GET) is answered 400 and the connection closed, and the server lives on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Type: text/plain\r\n\r\nok\n"
BAD = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 12\r\nConnection: close\r\n\r\nbad request\n"
END_OF_HEAD = b"\r\n\r\n"
MAX_HEAD = 8192


class Reply(NamedTuple):
    """What to send for the complete requests received so far, how many were answered 200, whether to close."""

    data: bytes
    requests: int
    close: bool


def answer(pending: bytearray) -> Reply:
    """Consume the complete request heads at the front of ``pending`` and answer them.

    ``pending`` keeps what is left: the start of a request not yet complete.
    """
    answered = 0
    while (end := pending.find(END_OF_HEAD)) >= 0:
        if not pending.startswith(b"GET "):
            return Reply(OK * answered + BAD, answered, True)
        answered += 1
        del pending[: end + len(END_OF_HEAD)]
    if len(pending) > MAX_HEAD:
        return Reply(OK * answered + BAD, answered, True)
    return Reply(OK * answered, answered, False)


@dataclass
class Counts:
    """What a server counted by itself: requests answered, connections taken, and its own system calls.

    ``calls`` counts every system call the server's own code makes (accept, recv, send, close and the
    waits); ``waits`` the calls among them that wait for events (``epoll_wait``, ``io_uring_enter``).
    uvloop's calls happen inside libuv, where Python cannot count them: there both stay None.
    """

    requests: int = 0
    connections: int = 0
    calls: int | None = 0
    waits: int | None = 0
