"""``iolab.topics.completion.tiny_http``: complete heads answered, partial ones kept, bad input refused."""

from iolab.topics.completion.tiny_http import BAD, MAX_HEAD, OK, answer

GET = b"GET / HTTP/1.1\r\nHost: a\r\n\r\n"


def test_each_complete_head_gets_one_ok_and_a_partial_one_waits() -> None:
    pending = bytearray(GET + GET + GET[:10])
    reply = answer(pending)
    assert (reply.data, reply.requests, reply.close) == (OK + OK, 2, False)
    assert pending == GET[:10]
    pending += GET[10:]
    assert answer(pending) == (OK, 1, False) and pending == b""


def test_a_method_other_than_get_is_answered_400_after_the_good_ones_and_closed() -> None:
    reply = answer(bytearray(GET + b"POST / HTTP/1.1\r\n\r\n"))
    assert (reply.data, reply.requests, reply.close) == (OK + BAD, 1, True)


def test_a_head_that_never_ends_is_refused_once_too_long() -> None:
    assert answer(bytearray(b"GET /" + b"a" * MAX_HEAD)) == (BAD, 0, True)
    assert answer(bytearray(b"GET /" + b"a" * 100)) == (b"", 0, False)
