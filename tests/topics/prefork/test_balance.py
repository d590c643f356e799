"""iolab.topics.prefork.balance: connections counted per worker, wake-ups per connection, a busy worker's queue."""

from __future__ import annotations

import pandas as pd
import pytest

from iolab.load import Histogram
from iolab.load.comparisons import Variant
from iolab.topics.prefork import balance

SHARED = Variant("prefork", "prefork", 3)
REUSEPORT = Variant("prefork --reuseport", "prefork", 3, {"reuseport": True})


@pytest.mark.parametrize("variant", [SHARED, REUSEPORT], ids=lambda v: v.label)
def test_every_worker_gets_connections_and_every_connection_is_counted(variant: Variant) -> None:
    with variant.open() as server:
        table = balance.spread(server.url, server.pid, 90, clients=3)
    assert len(table) == 3 and table.connections.sum() == 90
    assert (table.connections > 0).all()


def test_one_worker_is_woken_per_connection_not_all_of_them() -> None:
    per_connection = {}
    for workers in (1, 12):
        with Variant("prefork", "prefork", workers).open() as server:
            per_connection[workers] = balance.switches_per_connection(server.url, server.pid, 150)
    # A herd would add about one wake-up per idle worker: 11 more per connection with 12 workers.
    assert per_connection[12] < per_connection[1] + 3


@pytest.mark.solo  # compares timings or rates: needs the cores to itself
def test_reuseport_queues_connections_behind_a_busy_worker_and_a_shared_socket_does_not() -> None:
    rows = {}
    for variant in (SHARED, REUSEPORT):
        with variant.open() as server:
            rows[variant.label] = balance.behind_a_busy_worker(server.url, server.pid, busy_ms=1500, rate=60, duration_s=0.8)
    rows = pd.DataFrame(rows).T
    assert rows.loc["prefork", "slow_share"] < 0.05
    assert rows.loc["prefork --reuseport", "slow_share"] > rows.loc["prefork", "slow_share"] + 0.05
    assert (rows.requests > 0).all()


def test_share_slower_than_counts_the_tail() -> None:
    h = Histogram()
    for ms in [1] * 8 + [500] * 2:
        h.record_seconds(ms / 1000)
    assert balance.share_slower_than(h, 100) == pytest.approx(0.2)
    assert balance.share_slower_than(Histogram(), 100) == 0.0


def test_worker_counts_rejects_more_clients_than_connections() -> None:
    with pytest.raises(ValueError, match="clients"):
        balance.worker_counts("http://127.0.0.1:9", connections=2, clients=3)


def test_the_probe_must_end_before_the_busy_request() -> None:
    with pytest.raises(ValueError, match="must end before"):
        balance.behind_a_busy_worker("http://127.0.0.1:9", 1, busy_ms=500, duration_s=1.0)


def test_cli_prints_one_json_document(capsys) -> None:
    import json

    from iolab.commands import main

    assert main(["balance", "--workers", "2", "--connections", "20", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sum(w["connections"] for w in doc["workers"]) == 20
    # Zero is possible on a busy machine: a worker that always finds the next connection waiting never
    # sleeps. What the document must hold is a count per connection.
    assert isinstance(doc["switches_per_connection"], float) and doc["switches_per_connection"] >= 0
