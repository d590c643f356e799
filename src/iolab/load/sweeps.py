"""Benchmarks as tables: run the load generator over servers and settings, one tidy row per run.

A *sweep* starts each server configuration once, warms it up, then runs every load setting
against it ``repeats`` times; the table has one row per run, with the server's settings, the
load's settings and the headline figures side by side, ready for ``groupby(...).median()`` and a
plot. Repeats are interleaved (setting A, B, C, then A, B, C again) so that a slow patch of the
machine spreads over all settings instead of landing on one; with ``interleave=True``, over all
servers too. ``open_in_turns`` is the part that starts, warms, visits and stops the servers; chapter
4's :func:`iolab.load.comparisons.load_matrix` uses it as well.

With ``until_spread_pct``, ``repeats`` is the most a sweep runs: it stops early, pyperf-style, once the
runs of every (server, load) agree to within that spread, so that a quiet machine does not pay for
the repeats a noisy one needs. The table's ``repeat`` column (and ``spread``'s ``runs``) says how
many runs were actually made.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

import pandas as pd
from tqdm.auto import tqdm

from iolab.load import LoadResult, LoadSpec, run_load
from iolab.servers import Server, open_server

S = TypeVar("S")  # a running server: the kit's Server, or anything with a url and a pid

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
    until_spread_pct: float | None = None,
) -> pd.DataFrame:
    """Run every load in ``loads`` against every server in ``servers``; one row per run.

    A server is the keyword arguments of :func:`iolab.servers.open_server` (``{"model": "prefork",
    "workers": 2}``); a load, those of :class:`iolab.load.LoadSpec` without the URL
    (``{"connections": 10, "duration_s": 1}``). Each server gets a short closed-loop warm-up run
    first (``warmup_s``; 0 skips it), which is not recorded: the first load, up to 10 clients.

    Servers run one after another, unless ``interleave``: then all are started at once (idle but
    for their turn) and each repeat loads them all in turn, so that a slow patch of the machine
    spreads over the servers too. Use it for a ratio between servers.

    ``until_spread_pct``: make at most ``repeats`` rounds, but stop after a round (from the second
    on) once, for every (server, load), the requests/s of its runs so far spread by at most that
    many percent ((max - min) / median, as :func:`spread` reports it). A fixed count spends the same
    time on a quiet machine as on a noisy one; a medians' table needs more runs only where they
    disagree. Sequentially the rule applies per server (its loads), interleaved to all servers at
    once, since a round ends only after the last server's turn.
    """

    def warm_up(server: Server) -> None:
        if warmup_s > 0:
            first = loads[0]
            # Like the first load, briefly. Its requests give up soon too: a keep-alive client that a
            # pre-fork server never serves would otherwise hold the warm-up for a whole timeout.
            run_load(LoadSpec(server.url + path, connections=min(10, first.get("connections", 10)), duration_s=warmup_s,
                              keepalive=first.get("keepalive", True), timeout_s=max(1.0, warmup_s)))

    openers = [functools.partial(open_server, **kwargs) for kwargs in servers]
    rows: list[dict[str, Any]] = []
    # rps[server index][load index]: the runs so far, for the stopping rule
    rps: list[list[list[float]]] = [[[] for _ in loads] for _ in servers]

    def enough(repeat: int, index: int) -> bool:
        if until_spread_pct is None or repeat < 1:
            return False
        which = range(len(servers)) if interleave else [index]
        return all(spread_pct(runs) <= until_spread_pct for i in which for runs in rps[i])

    bar = tqdm(total=len(servers) * len(loads) * repeats, desc="runs", disable=not progress, leave=False)
    with bar, open_in_turns(openers, repeats, interleave=interleave, warm_up=warm_up, enough=enough) as turns:
        for repeat, index, server in turns:
            for which, load in enumerate(loads):
                result = run_load(LoadSpec(server.url + path, **load))
                row = dict(servers[index]) | dict(load) | {"repeat": repeat} | figures(result)
                rps[index][which].append(row["rps"])
                rows.append(row)
                bar.update()
    return pd.DataFrame(rows)


def spread_pct(values: Sequence[float]) -> float:
    """(max - min) / median of ``values``, in percent; infinite with no median to divide by."""
    if len(values) == 0:  # a list, or a pandas group (spread aggregates with this function)
        return float("inf")
    median = float(pd.Series(values, dtype=float).median())
    if not median > 0:
        return float("inf")
    return 100 * (max(values) - min(values)) / median


@contextlib.contextmanager
def open_in_turns(
    openers: Sequence[Callable[[], contextlib.AbstractContextManager[S]]],
    repeats: int = 1,
    *,
    interleave: bool = False,
    warm_up: Callable[[S], object] = lambda server: None,
    enough: Callable[[int, int], bool] | None = None,
) -> Iterator[Iterator[tuple[int, int, S]]]:
    """The turns of a benchmark: ``(repeat, index of the server, the running server)``, one per turn.

    ``openers`` start the servers (``open_server`` with its settings, a variant's ``open``); each
    server runs during its turns and is warmed up (``warm_up``) once, before its first. Servers run one
    after another, each for all its repeats, unless ``interleave``: then all are started at once and
    each repeat visits them in turn. Leaving the block stops every server still running, also when a
    run fails (a generator left to the garbage collector would stop them only when a notebook drops
    its last traceback).

    ``enough(repeat, index)``, if given, is asked at the end of each round whether to stop before
    ``repeats``: interleaved, after the last server's turn in repeat ``repeat`` (``index`` is then
    the last server's), and the whole benchmark ends; one after another, after each of a server's
    turns, and only that server moves on to the next. It lets a caller stop once its runs agree
    (see ``sweep``'s ``until_spread_pct``) without taking over the starting and stopping.
    """
    turns = _turns(openers, repeats, interleave, warm_up, enough or (lambda repeat, index: False))
    with contextlib.closing(turns):
        yield turns


def _turns(
    openers: Sequence[Callable[[], contextlib.AbstractContextManager[S]]],
    repeats: int,
    interleave: bool,
    warm_up: Callable[[S], object],
    enough: Callable[[int, int], bool],
) -> Iterator[tuple[int, int, S]]:
    if interleave:
        with contextlib.ExitStack() as stack:
            started = [stack.enter_context(open_()) for open_ in openers]
            for server in started:
                warm_up(server)
            for repeat in range(repeats):
                yield from ((repeat, index, server) for index, server in enumerate(started))
                if enough(repeat, len(started) - 1):
                    break
        return
    for index, open_ in enumerate(openers):
        with open_() as server:
            warm_up(server)
            for repeat in range(repeats):
                yield repeat, index, server
                if enough(repeat, index):
                    break


def spread(df: pd.DataFrame, by: Sequence[str], value: str = "rps") -> pd.DataFrame:
    """Median, min, max and relative spread ((max - min) / median, in %) of ``value`` per group."""
    stats = df.groupby(list(by))[value].agg(["median", "min", "max", "count", spread_pct]).reset_index()
    return stats.rename(columns={"median": f"{value}_median", "min": f"{value}_min", "max": f"{value}_max", "count": "runs"})
