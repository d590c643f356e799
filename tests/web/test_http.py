"""iolab.web.http: bytes in, requests out; responses in, bytes out; refusals as 4xx."""

from __future__ import annotations

import os

import h11
import pytest

from iolab.web import http

GET = b"GET /julia?ms=20 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


def test_a_request_fed_byte_by_byte_is_parsed_once_complete() -> None:
    conn = http.Connection()
    seen = [conn.feed(GET[i : i + 1]) for i in range(len(GET))]
    assert all(not requests for requests in seen[:-1])
    (request,) = seen[-1]
    assert (request.method, request.target, request.path, request.query) == ("GET", "/julia?ms=20", "/julia", "ms=20")
    assert request.headers == ((b"host", b"127.0.0.1"),)
    assert request.keep_alive and request.version == "1.1"


def test_pipelined_requests_come_out_in_order() -> None:
    conn = http.Connection()
    data = GET.replace(b"20", b"1") + GET.replace(b"20", b"2") + GET[:10]
    assert [r.query for r in conn.feed(data)] == ["ms=1", "ms=2"]
    assert [r.query for r in conn.feed(GET[10:])] == ["ms=20"]


def test_a_body_is_read_by_content_length() -> None:
    (request,) = http.Connection().feed(b"POST /x HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhello")
    assert (request.method, request.body) == ("POST", b"hello")


@pytest.mark.parametrize(
    "data",
    [b"GET / HTTP/1.1 extra\r\nHost: a\r\n\r\n", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", b"GET / HTTP/1.1\r\nBad Header\r\n\r\n"],
    ids=["three-spaces", "tls-hello", "header-without-colon"],
)
def test_malformed_requests_are_refused_with_400(data: bytes) -> None:
    conn = http.Connection()
    with pytest.raises(http.HttpError) as refused:
        conn.feed(data)
    assert refused.value.status == 400
    assert conn.closing


def test_an_http11_request_without_host_is_refused_with_400() -> None:
    with pytest.raises(http.HttpError) as refused:
        http.Connection().feed(b"GET / HTTP/1.1\r\n\r\n")
    assert refused.value.status == 400


def test_http2_and_later_are_refused_with_505() -> None:
    with pytest.raises(http.HttpError) as refused:
        http.Connection().feed(b"GET / HTTP/2.0\r\nHost: a\r\n\r\n")
    assert refused.value.status == 505


def test_oversized_head_is_refused_with_431_even_when_it_comes_in_pieces() -> None:
    conn = http.Connection()
    conn.feed(b"GET / HTTP/1.1\r\nHost: a\r\n")
    with pytest.raises(http.HttpError) as refused:
        for _ in range(http.MAX_HEAD_BYTES // 1000 + 2):
            conn.feed(b"X-Filler: " + b"x" * 1000 + b"\r\n")
    assert refused.value.status == 431


def test_oversized_target_is_refused_with_414() -> None:
    with pytest.raises(http.HttpError) as refused:
        http.Connection().feed(b"GET /" + b"a" * http.MAX_HEAD_BYTES + b" HTTP/1.1\r\n")
    assert refused.value.status == 414


def test_oversized_bodies_are_refused_with_413_announced_or_chunked() -> None:
    too_big = http.MAX_BODY_BYTES + 1
    with pytest.raises(http.HttpError) as announced:
        http.Connection().feed(b"POST / HTTP/1.1\r\nHost: a\r\nContent-Length: %d\r\n\r\n" % too_big)
    conn = http.Connection()
    conn.feed(b"POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n")
    with pytest.raises(http.HttpError) as chunked:
        for _ in range(too_big // 4096 + 1):
            conn.feed(b"1000\r\n" + b"x" * 4096 + b"\r\n")
    assert announced.value.status == chunked.value.status == 413


@pytest.mark.parametrize(
    ("head", "keep_alive"),
    [
        (b"GET / HTTP/1.1\r\nHost: a\r\n\r\n", True),
        (b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", False),
        (b"GET / HTTP/1.0\r\n\r\n", False),
        (b"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", True),
    ],
    ids=["1.1", "1.1-close", "1.0", "1.0-keep-alive"],
)
def test_keep_alive_follows_the_version_and_connection_header(head: bytes, keep_alive: bool) -> None:
    conn = http.Connection()
    (request,) = conn.feed(head)
    data = conn.respond(request, http.Response(200, b"hi"))
    assert request.keep_alive is keep_alive
    assert (b"Connection: keep-alive\r\n" in data) is keep_alive
    assert (b"Connection: close\r\n" in data) is not keep_alive
    assert conn.closing is not keep_alive


def test_a_response_encodes_to_what_an_independent_parser_reads() -> None:
    conn = http.Connection()
    (request,) = conn.feed(GET)
    data = conn.respond(request, http.Response(404, b"nope\n", "text/plain", headers=(("Allow", "GET"),)))
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "a")]))
    client.receive_data(data)
    response, body = client.next_event(), client.next_event()
    headers = dict(response.headers)
    assert response.status_code == 404 and body.data == b"nope\n"
    assert headers[b"content-length"] == b"5" and headers[b"allow"] == b"GET"
    assert headers[b"x-worker"] == str(os.getpid()).encode()


def test_a_chunked_response_encodes_to_what_an_independent_parser_reads() -> None:
    conn = http.Connection(worker=0)
    (request,) = conn.feed(GET)
    head = conn.respond_chunked_head(request, "application/json")
    data = head + http.chunk(b"[1,") + http.chunk(b"2]") + http.chunk(b"")
    client = h11.Connection(h11.CLIENT)
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "a")]))
    client.receive_data(data)
    response = client.next_event()
    body = b""
    while isinstance(event := client.next_event(), h11.Data):
        body += event.data
    headers = dict(response.headers)
    assert response.status_code == 200 and body == b"[1,2]" and isinstance(event, h11.EndOfMessage)
    assert headers[b"transfer-encoding"] == b"chunked" and b"content-length" not in headers
    assert headers[b"content-type"] == b"application/json" and headers[b"x-worker"] == b"0"
    assert headers[b"connection"] == b"keep-alive" and not conn.closing


def test_a_chunked_response_to_a_closing_request_says_close() -> None:
    conn = http.Connection()
    (request,) = conn.feed(b"GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
    assert b"Connection: close\r\n" in conn.respond_chunked_head(request, "text/plain") and conn.closing


def test_an_error_response_closes_the_connection() -> None:
    conn = http.Connection()
    data = conn.respond_error(http.HttpError(431, "too big"))
    assert data.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
    assert b"Connection: close\r\n" in data and conn.closing
