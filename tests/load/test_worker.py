"""The load worker's parts: the per-second tally, the window, the share's JSON, and a ``Run``'s books.

A ``Run`` is driven here in the test's own event loop against a server in the same loop, without
the worker processes, so that its result can be checked against what the server was sent.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from iolab.load.histogram import Histogram
from iolab.load.manager import shares
from iolab.load.model import LoadSpec
from iolab.load._run import Run
from iolab.load._schedule import Window
from iolab.load._share import Share
from iolab.load._tally import Second, Tally

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello"
BUSY = b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 4\r\n\r\nbusy"


class _Answer(asyncio.Protocol):
    """Answers every request with ``response``, after ``delay_s``."""

    def __init__(self, response: bytes, delay_s: float) -> None:
        self.response = response
        self.delay_s = delay_s
        self.buffer = b""

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport: asyncio.Transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while b"\r\n\r\n" in self.buffer:
            _, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
            if self.delay_s:
                asyncio.get_running_loop().call_later(self.delay_s, self.transport.write, self.response)
            else:
                self.transport.write(self.response)


def run_once(response: bytes = OK, delay_s: float = 0.0, **spec: Any) -> dict[str, Any]:
    """One worker's result for ``spec`` against a server answering ``response``."""

    async def main() -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(lambda: _Answer(response, delay_s), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        (share,) = shares(LoadSpec(f"http://127.0.0.1:{port}/", workers=1, **spec))
        run = Run(share, loop)
        run.start()
        try:
            await asyncio.wait_for(run.done.wait(), share.spec.duration_s + share.spec.timeout_s + 5)
        finally:
            run.close()
            server.close()
        return run.result()

    return asyncio.run(main())


def latency_count(encoded: str) -> int:
    return Histogram.decode(encoded).count


# --- the small parts -------------------------------------------------------------------------------


def test_a_second_reports_its_2xx_answers_as_requests_with_their_histogram() -> None:
    second = Second()
    for us in (800, 900, 1000):
        second.answers += 1
        second.latency.record(us)
    second.errors += 2
    d = second.to_dict()
    assert (d["requests"], d["errors"]) == (3, 2)
    assert Histogram.decode(d["histogram"]).percentile_us(100) == 1000


def test_tally_has_a_second_per_started_second_and_counts_the_tail_in_the_last() -> None:
    assert len(Tally(0.2).seconds) == 1 and len(Tally(2.0).seconds) == 2
    tally = Tally(2.5)
    for kind, at in (("refused", 0.5), ("timeout", 2.9), ("timeout", 30.0)):
        tally.error(kind, at)
    assert [s.errors for s in tally.seconds] == [1, 0, 2]
    assert tally.errors == {"refused": 1, "timeout": 2} and tally.error_count == 3


def test_tally_answers_are_the_sum_of_its_seconds_and_histograms_follow_the_loop() -> None:
    tally = Tally(3)
    for second, n in zip(tally.seconds, (4, 0, 7)):
        second.answers = n
        second.latency.record(100)
    assert tally.answers == 11
    assert set(tally.histograms(open_loop=False)) == {"latency"}
    histograms = tally.histograms(open_loop=True)
    assert set(histograms) == {"latency", "corrected", "slip"}
    assert latency_count(histograms["corrected"]) == 3 and latency_count(histograms["latency"]) == 0


def test_window_closes_once_keeping_its_first_reason() -> None:
    window = Window(5.0, None)
    assert window.budget == sys.maxsize and not window.issuing
    window.open(100.0)
    assert window.issuing and window.deadline == 105.0
    window.last_answer = 101.5
    window.close(early=True)
    window.close(early=False)  # the deadline passing later does not undo "stopped early"
    assert not window.issuing and window.stopped_early
    assert window.measured_s() == 1.5


def test_window_not_stopped_early_measures_the_duration_asked_for() -> None:
    window = Window(5.0, 10)
    window.open(100.0)
    window.last_answer = 104.0
    window.close()
    assert window.measured_s() == 5.0


def test_share_json_round_trip() -> None:
    spec = LoadSpec("http://127.0.0.1:8000/x?y=1", mode="open", rate=300, connections=4, workers=2)
    for share in shares(spec):
        assert Share.from_json(share.to_json()) == share


# --- a run's books ---------------------------------------------------------------------------------


def test_closed_loop_result_adds_up_over_seconds_and_connections() -> None:
    result = run_once(connections=4, duration_s=1.2)
    requests, late = result["requests"], result["late"]
    assert requests > 50 and result["errors"] == {}
    assert requests == sum(s["requests"] for s in result["seconds"]) and len(result["seconds"]) == 2
    assert requests == sum(result["per_connection"]) and len(result["per_connection"]) == 4
    # Every request written was answered, in the window or late; all their latencies are recorded.
    assert result["sent"] == requests + late
    assert result["bytes_received"] == (requests + late) * len(OK)
    assert latency_count(result["histograms"]["latency"]) == requests + late
    assert sum(latency_count(s["histogram"]) for s in result["seconds"]) == requests + late
    assert result["unsent"] == 0 and result["duration_s"] == 1.2


def test_closed_loop_answers_after_the_deadline_are_late_not_requests() -> None:
    # 0.4 s per answer, a 0.6 s window: each client's first answer is in it, its second is late.
    result = run_once(delay_s=0.4, connections=3, duration_s=0.6)
    assert (result["requests"], result["late"], result["sent"]) == (3, 3, 6)
    assert result["per_connection"] == [1, 1, 1]
    assert latency_count(result["histograms"]["latency"]) == 6


def test_non_2xx_answers_are_errors_by_status_in_total_and_per_second() -> None:
    result = run_once(response=BUSY, connections=2, duration_s=0.5)
    assert result["requests"] == 0 and result["per_connection"] == [0, 0]
    assert set(result["errors"]) == {"http_503"}
    assert result["errors"]["http_503"] == sum(s["errors"] for s in result["seconds"]) > 10


def test_budget_stops_the_run_early_and_its_window_ends_with_the_last_answer() -> None:
    result = run_once(connections=3, duration_s=10, max_requests=40)
    assert result["requests"] == result["sent"] == 40
    assert 0 < result["duration_s"] < 5


def test_open_loop_books_every_scheduled_request_once() -> None:
    result = run_once(mode="open", rate=200, connections=5, duration_s=1.0)
    assert result["sent"] + result["unsent"] == 200
    assert result["requests"] == sum(s["requests"] for s in result["seconds"]) == result["sent"]
    histograms = result["histograms"]
    assert latency_count(histograms["slip"]) == 200  # one per scheduled request, sent or not
    assert latency_count(histograms["corrected"]) == latency_count(histograms["latency"]) == result["requests"]
