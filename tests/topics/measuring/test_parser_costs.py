"""``iolab.topics.measuring.parser_costs``: the measurement behind the kit's choice of HTTP parser."""

import pytest

from iolab.topics.measuring import parser_costs


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_httptools_parses_several_times_faster_than_h11(capsys: pytest.CaptureFixture[str]) -> None:
    """The measurement behind choosing httptools (run with -s to see the numbers)."""
    costs = parser_costs.compare(requests=2000, repeats=3)
    h11_us, httptools_us = min(costs["h11"]), min(costs["httptools"])
    with capsys.disabled():
        print(f"\nparse + encode one request: h11 {h11_us:.1f} us, iolab.web.http (httptools) {httptools_us:.1f} us")
    assert httptools_us * 3 < h11_us
