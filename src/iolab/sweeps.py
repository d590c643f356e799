"""Benchmarks as tables: run the load generator over servers and settings, one tidy row per run.

A *sweep* starts each server configuration once, warms it up, then runs every load setting
against it ``repeats`` times; the table has one row per run, with the server's settings, the
load's settings and the headline figures side by side, ready for ``groupby(...).median()`` and a
plot. Repeats are interleaved (setting A, B, C, then A, B, C again) so that a slow patch of the
machine spreads over all settings instead of landing on one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from iolab.load import LoadResult, LoadSpec, run_load
from iolab.servers import open_server

# The figures kept from each run (LoadResult.to_dict's flat head); units are in the names.
FIGURES = (
    "rps", "requests", "errors", "never_served", "p50_ms", "p90_ms", "p99_ms", "p99_9_ms", "max_ms",
    "client_cpu_percent",
)


def figures(result: LoadResult) -> dict[str, Any]:
    """The headline figures of one run (see ``FIGURES``), plus errors by kind as one string."""
    head = result.to_dict()
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(result.errors.items()))
    return {name: head[name] for name in FIGURES} | {"error_kinds": kinds}


def sweep(
    servers: Sequence[Mapping[str, Any]],
    loads: Sequence[Mapping[str, Any]],
    path: str = "/",
    *,
    repeats: int = 1,
    warmup_s: float = 0.5,
    progress: bool = True,
    interleave: bool = False,
) -> pd.DataFrame:
    """Run every load in ``loads`` against every server in ``servers``; one row per run.

    A server is the keyword arguments of :func:`iolab.servers.open_server` (``{"model": "prefork",
    "workers": 2}``); a load, those of :class:`iolab.load.LoadSpec` without the URL
    (``{"connections": 10, "duration_s": 1}``). Each server gets a short closed-loop warm-up run
    first (``warmup_s``; 0 skips it), which is not recorded: the first load, up to 10 clients.

    Servers run one after another, unless ``interleave``: then all are started at once (idle but
    for their turn) and each repeat loads them all in turn, so that a slow patch of the machine
    spreads over the servers too. Use it for a ratio between servers.
    """
    rows = []
    bar = tqdm(total=len(servers) * len(loads) * repeats, desc="runs", disable=not progress, leave=False)
    # closing(): an error in a run must stop the servers now, not when its traceback is dropped.
    with bar, contextlib.closing(_turns(servers, path, repeats, warmup_s, loads, interleave)) as turns:
        for repeat, server_kwargs, url in turns:
            for load in loads:
                result = run_load(LoadSpec(url, **load))
                rows.append(dict(server_kwargs) | dict(load) | {"repeat": repeat} | figures(result))
                bar.update()
    return pd.DataFrame(rows)


def _turns(
    servers: Sequence[Mapping[str, Any]],
    path: str,
    repeats: int,
    warmup_s: float,
    loads: Sequence[Mapping[str, Any]],
    interleave: bool,
) -> Iterator[tuple[int, Mapping[str, Any], str]]:
    """(repeat, server settings, URL) for each turn of a sweep, each server running during its turns."""

    def warm_up(url: str) -> str:
        if warmup_s > 0:
            first = loads[0]
            # Like the first load, briefly. Its requests give up soon too: a keep-alive client that a
            # pre-fork server never serves would otherwise hold the warm-up for a whole timeout.
            spec = LoadSpec(url, connections=min(10, first.get("connections", 10)), duration_s=warmup_s,
                            keepalive=first.get("keepalive", True), timeout_s=max(1.0, warmup_s))
            run_load(spec)
        return url

    if interleave:
        with contextlib.ExitStack() as stack:
            urls = [warm_up(stack.enter_context(open_server(**kwargs)).url + path) for kwargs in servers]
            for repeat in range(repeats):
                for server_kwargs, url in zip(servers, urls):
                    yield repeat, server_kwargs, url
        return
    for server_kwargs in servers:
        with open_server(**server_kwargs) as server:
            url = warm_up(server.url + path)
            for repeat in range(repeats):
                yield repeat, server_kwargs, url


def spread(df: pd.DataFrame, by: Sequence[str], value: str = "rps") -> pd.DataFrame:
    """Median, min, max and relative spread ((max - min) / median, in %) of ``value`` per group."""
    stats = df.groupby(list(by))[value].agg(["median", "min", "max", "count"]).reset_index()
    stats["spread_pct"] = 100 * (stats["max"] - stats["min"]) / stats["median"]
    return stats.rename(columns={"median": f"{value}_median", "min": f"{value}_min", "max": f"{value}_max", "count": "runs"})
