"""HTTP/1.1 for the lab's servers, sans-I/O: bytes in, requests out; responses in, bytes out.

No socket appears here. Every server model gives a per-connection :class:`Connection` the bytes it
received and sends the bytes it gets back, so the models differ only in how they wait for bytes.

Parsing is httptools (llhttp, the parser of Node.js). h11 was measured too: parsing a request and
encoding its response took 18-32 us with h11 against 3-8 us here on the course machine
(``iolab.topics.measuring.parser_costs``; ``pytest -s tests/web/test_http.py -k faster``). At the tiny
route the uvloop server spends about 7 us of CPU per request in all (pinned to a core, under wrk), so
with h11 every model would mostly measure h11.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import NamedTuple

import httptools

# A request head (request line + headers) above this is refused with 431. Browsers send 1-2 KiB;
# nginx accepts 4 x 8 KiB by default. The limit bounds memory per connection: 1,000 idle
# connections each holding an unfinished head must not add up to more than a few MiB.
MAX_HEAD_BYTES = 16 * 1024
# A request body above this is refused with 413. No route reads a body; the limit only stops a
# client from making the server buffer an upload nobody wants.
MAX_BODY_BYTES = 64 * 1024
# The versions spoken here; HTTP/2 and later are other protocols on the same port (505).
VERSIONS = ("1.0", "1.1")


class HttpError(Exception):
    """A request the server refuses: ``status`` is the 4xx/5xx to answer before closing."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(f"{status} {reason}")
        self.status = status
        self.reason = reason


class Request(NamedTuple):
    """One parsed request; ``target`` is the raw request target, e.g. ``/julia?ms=20``.

    A NamedTuple rather than a frozen dataclass: one is built per request, and a frozen dataclass
    sets each field through ``object.__setattr__``. With the response's fixed lines encoded once
    (``Response``), this took parsing and answering a tiny request from 2.1 to 1.7 us of pure Python
    on the course machine (issue 18; ``benchmarks/README.md`` records what the uvloop server then
    reached against nginx).
    """

    method: str
    target: str
    headers: tuple[tuple[bytes, bytes], ...] = ()  # names lower-cased, in arrival order
    body: bytes = b""
    version: str = "1.1"
    keep_alive: bool = True  # the client lets the connection stay open after the response

    @property
    def path(self) -> str:
        """The target without its query string (still percent-encoded)."""
        return self.target.partition("?")[0]

    @property
    def query(self) -> str:
        """The query string, without the ``?``."""
        return self.target.partition("?")[2]


def _status_line(status: int) -> bytes:
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    return f"HTTP/1.1 {status} {phrase}\r\n".encode("ascii")


@dataclass(frozen=True, slots=True)
class Response:
    """A response to encode with :meth:`Connection.respond`."""

    status: int = 200
    body: bytes = b""
    content_type: str = "text/plain; charset=utf-8"
    headers: tuple[tuple[str, str], ...] = ()
    close: bool = False  # close the connection after this response whatever the client asked
    # The encoded status line and headers that depend on the response alone (type, extra headers,
    # length), computed once per Response: most responses are module constants reused for every
    # request, so the per-request encoding is one join.
    _fixed_head: bytes = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        extra = "".join(f"{name}: {value}\r\n" for name, value in self.headers)
        lines = f"Content-Type: {self.content_type}\r\n{extra}Content-Length: {len(self.body)}\r\n"
        object.__setattr__(self, "_fixed_head", _status_line(self.status) + lines.encode("latin-1"))


_OK = _status_line(200)  # the status line of every chunked response
_KEEP_ALIVE = b"Connection: keep-alive\r\n"
_CLOSE = b"Connection: close\r\n"


class Connection:
    """One client connection's protocol state: feed it bytes, get requests; give it responses.

    ``closing`` becomes True once a response said ``Connection: close``: the server sends the bytes
    it has and closes the socket. ``receiving`` is True from a request's first byte until the request
    is complete, and ``begun`` counts the requests started: a server's timeouts read both.
    """

    def __init__(self, worker: int | None = None) -> None:
        self._parser = httptools.HttpRequestParser(self)
        # Every response names the process that served it: the pre-fork chapters count accepts
        # per worker from this header, the last of the head. Computed per connection, so it is
        # right after a fork.
        self._head_end = b"X-Worker: %d\r\n\r\n" % (os.getpid() if worker is None else worker)
        self.closing = False
        self.begun = 0
        self.receiving = False
        self._done: list[Request] = []
        # The request being received; on_message_begin starts each one afresh.
        self._url = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._has_host = False
        self._head_bytes = 0
        self._version = "1.1"
        self._body = b""

    # --- bytes in -----------------------------------------------------------------------------

    def feed(self, data: bytes) -> list[Request]:
        """The requests completed by ``data`` (none, one, or several when pipelined).

        Raises :class:`HttpError` for a malformed or oversized request; the connection is then
        finished: answer with :meth:`respond_error` and close.
        """
        if self.closing:
            return []  # after a Connection: close or an upgrade, further bytes are not HTTP
        self._done = done = []
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            self.closing = True
            if isinstance(exc.__context__, HttpError):
                raise exc.__context__ from None
            raise
        except httptools.HttpParserUpgrade:
            # The client asked to switch protocols (Upgrade, CONNECT); the server does not
            # switch, so it answers what it has and closes: the rest is not HTTP/1.1.
            if self._done:
                last = self._done[-1]
                self._done[-1] = Request(last.method, last.target, last.headers, last.body, last.version, False)
            self.closing = True
        except httptools.HttpParserError as exc:
            self.closing = True
            raise HttpError(400, f"malformed request ({exc})") from None
        return done

    # httptools calls these while feed_data runs; an HttpError raised here ends the connection.

    def on_message_begin(self) -> None:
        self.receiving = True
        self.begun += 1
        self._url = b""
        self._headers = []
        self._has_host = False
        self._head_bytes = 0
        self._body = b""

    def on_url(self, url: bytes) -> None:
        self._url += url  # may come in pieces when a request line spans two reads
        self._head_bytes += len(url)
        if self._head_bytes > MAX_HEAD_BYTES:
            raise HttpError(414, f"request target over {MAX_HEAD_BYTES} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        name = name.lower()
        if name == b"host":
            self._has_host = True
        elif name == b"content-length" and int(value) > MAX_BODY_BYTES:  # llhttp checked the digits
            raise HttpError(413, f"request body over {MAX_BODY_BYTES} bytes")
        self._headers.append((name, value))
        self._head_bytes += len(name) + len(value) + 4
        if self._head_bytes > MAX_HEAD_BYTES:
            raise HttpError(431, f"request head over {MAX_HEAD_BYTES} bytes")

    def on_headers_complete(self) -> None:
        self._version = version = self._parser.get_http_version()
        if version not in VERSIONS:
            raise HttpError(505, f"HTTP/{version} is not spoken here, only HTTP/1.0 and HTTP/1.1")
        if version == "1.1" and not self._has_host:
            raise HttpError(400, "an HTTP/1.1 request must have a Host header (RFC 9112, 3.2)")

    def on_body(self, body: bytes) -> None:
        self._body += body
        if len(self._body) > MAX_BODY_BYTES:  # chunked bodies announce no length up front
            raise HttpError(413, f"request body over {MAX_BODY_BYTES} bytes")

    def on_message_complete(self) -> None:
        parser = self._parser
        # _make takes the fields in order, as a tuple: 40 ns cheaper than the keyword-capable
        # constructor, and this runs once per request.
        request = Request._make((
            parser.get_method().decode("ascii"),
            self._url.decode("latin-1"),
            tuple(self._headers),
            self._body,
            self._version,
            parser.should_keep_alive(),  # RFC 9112 rules: 1.1 stays open, 1.0 only if asked
        ))
        self._done.append(request)
        self.receiving = False

    # --- bytes out ----------------------------------------------------------------------------

    def respond(self, request: Request, response: Response) -> bytes:
        """The bytes of ``response`` to ``request``; sets ``closing`` if the connection must end."""
        return b"".join(
            (
                response._fixed_head,
                # The usual answer, keep-alive, without a call: this runs once per request.
                _KEEP_ALIVE
                if request.keep_alive and not response.close and not self.closing
                else self._connection_line(False),
                self._head_end,
                response.body,
            )
        )

    def respond_chunked_head(self, request: Request, content_type: str) -> bytes:
        """The head of a 200 response to ``request`` whose body follows as :func:`chunk` pieces.

        For a body whose length is not known when its first bytes are ready (rows streamed from a
        database); ``Transfer-Encoding: chunked`` is HTTP/1.1 only, so a 1.0 client needs :meth:`respond`.
        """
        return b"".join(
            (
                _OK,
                b"Content-Type: %s\r\nTransfer-Encoding: chunked\r\n" % content_type.encode("latin-1"),
                self._connection_line(request.keep_alive),
                self._head_end,
            )
        )

    def _connection_line(self, keep_alive: bool) -> bytes:
        # Once closing, every later response says close too; the server closes after sending it.
        if keep_alive and not self.closing:
            return _KEEP_ALIVE
        self.closing = True
        return _CLOSE

    def respond_error(self, error: HttpError) -> bytes:
        """The bytes of the error response for ``error``, which always closes the connection."""
        body = f"{error.status} {error.reason}\n".encode()
        request = Request("GET", "/", keep_alive=False)
        return self.respond(request, Response(error.status, body, close=True))


def chunk(data: bytes) -> bytes:
    """One piece of a chunked body (RFC 9112, 7.1): its size in hex, then the bytes; ``chunk(b"")`` ends the body."""
    return b"%x\r\n%s\r\n" % (len(data), data)
