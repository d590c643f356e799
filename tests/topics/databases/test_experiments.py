"""iolab.topics.databases.experiments: repeats go through every size in turns, and each run says what it cost."""

from __future__ import annotations

from iolab.topics.databases import experiments, queries


def test_pool_sweep_repeats_go_through_every_size_in_turns_and_read_the_database_cpu(db):
    # Enough work per run (8 queries of tens of ms) for the kernel's 10 ms ticks of CPU time to count it.
    sweep = experiments.pool_sweep(db, queries.cpu(2_000_000), [1, 2], requests=8, concurrency=4, repeats=2)
    assert list(zip(sweep["repeat"], sweep["pool"])) == [(0, 1), (0, 2), (1, 1), (1, 2)]
    assert (sweep["errors"] == 0).all()
    assert (sweep["db_cpu_ms"] > 0).all(), "every query runs in the database: its CPU time per query is not zero"


def test_the_database_cpu_of_many_short_lived_backends_is_counted_whole(db):
    # 16 queries of a few ms over 8 backends: each backend's CPU stays under the kernel's 10 ms tick while it
    # lives, so it is counted only once the backend has exited.
    sweep = experiments.pool_sweep(db, queries.cpu(200_000), [1, 8], requests=16, concurrency=8)
    per_query = sweep.set_index("pool")["db_cpu_ms"]
    assert per_query[8] > 0.5 * per_query[1], per_query.to_dict()


def test_threads_vs_async_repeats_go_through_both_services_in_turns(db):
    runs = experiments.threads_vs_async(db, queries.slow(5), [2], requests=6, threads=2, repeats=2)
    assert list(zip(runs["repeat"], runs["service"])) == [(0, "sync-threads"), (0, "async-pool"),
                                                          (1, "sync-threads"), (1, "async-pool")]


def test_connection_costs_give_the_wall_time_and_the_threads_cpu_time_of_each_step(db):
    costs = experiments.connection_costs(db, queries.QUERIES["ten"], repeats=5)
    assert {"ms", "cpu_ms"} <= set(costs.columns)
    per_step = costs.groupby("step")[["ms", "cpu_ms"]].median()
    # A new connection waits for the server to fork a backend: much of its wall time is another process's CPU.
    assert per_step.loc["connect + select 1 + close", "cpu_ms"] < per_step.loc["connect + select 1 + close", "ms"]
    assert (costs["cpu_ms"] >= 0).all()
