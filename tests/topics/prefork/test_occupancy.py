"""iolab.topics.prefork.occupancy: a blocking worker is tied to its keep-alive client; an event loop is not."""

from __future__ import annotations

import pytest

from iolab.load.comparisons import Variant
from iolab.topics.prefork import occupancy

HOLD_S = 0.4


@pytest.fixture(scope="module")
def prefork2():
    with Variant("prefork", "prefork", 2).open() as server:
        yield server


def test_each_held_keepalive_client_occupies_its_own_prefork_worker(prefork2) -> None:
    with occupancy.open_held_connections(prefork2.url, 2) as held:
        assert len({h.worker for h in held}) == 2


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_prefork_client_n_plus_1_waits_until_a_keepalive_client_leaves(prefork2) -> None:
    row = occupancy.next_client_wait(prefork2.url, holders=2, hold_s=HOLD_S)
    assert row["wait_ms"] >= HOLD_S * 1000 * 0.9
    assert row["held_workers"] == 2


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_prefork_client_with_a_free_worker_does_not_wait(prefork2) -> None:
    row = occupancy.next_client_wait(prefork2.url, holders=1, hold_s=HOLD_S)
    assert row["wait_ms"] < HOLD_S * 1000 / 2


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_asyncio_serves_the_next_client_while_others_hold_connections() -> None:
    with Variant("asyncio", "asyncio").open() as server:
        df = occupancy.wait_sweep(server.url, [0, 3], hold_s=HOLD_S)
    assert list(df.holders) == [0, 3]
    assert (df.wait_ms < HOLD_S * 1000 / 2).all()


def test_hold_must_end_before_the_client_gives_up() -> None:
    with pytest.raises(ValueError, match="shorter than timeout_s"):
        occupancy.next_client_wait("http://127.0.0.1:9", holders=0, hold_s=5, timeout_s=1)


def test_connect_rejects_a_url_that_is_not_plain_http() -> None:
    with pytest.raises(ValueError, match="http://HOST:PORT"):
        occupancy.connect("https://example.org")
