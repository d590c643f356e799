"""Event loops under load: the kit's asyncio server on asyncio's loop, on uvloop, and with CPU work.

Two experiments, each a table with one row per run:

- ``compare_loops``: the same server code (``servers/asyncio.py``) on the default loop and on uvloop
  (and trio's server, if asked), serving the tiny route to a closed-loop load. All servers run at
  once and the runs take turns, so a slow patch of a shared machine lands on every model alike.
- ``tiny_route_beside_cpu``: a few clients keep asking for Julia sets while an open-loop load of
  tiny requests measures what a cheap request waits for, with the Julia set computed inline in the
  loop or offloaded to a process pool (the server's ``offload`` setting).
"""

from __future__ import annotations

import concurrent.futures
import functools
from collections.abc import Sequence
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from iolab.load import LoadResult, LoadSpec, run_load
from iolab.load.sweeps import spread_pct, open_in_turns
from iolab.servers import Server, open_server

WARMUP_S = 0.3  # a first run is slower (imports, caches, the kernel's socket structures): not recorded
# The headline figures kept from a run; p50_ms.. are the corrected latencies in open loop.
FIGURES = ("rps", "requests", "errors", "p50_ms", "p90_ms", "p99_ms", "max_ms")


def _figures(result: LoadResult) -> dict[str, Any]:
    head = result.to_dict()
    return {name: head[name] for name in FIGURES}


def compare_loops(
    models: Sequence[str] = ("asyncio", "uvloop"),
    *,
    connections: int = 50,
    duration_s: float = 2.0,
    repeats: int = 3,
    progress: bool = False,
    until_spread_pct: float | None = None,
) -> pd.DataFrame:
    """Closed-loop runs on the tiny route, ``repeats`` rounds of every model in turn; one row per run.

    ``until_spread_pct``: stop after a round (from the second on) once every model's requests/s so
    far spread by at most that many percent, as :func:`iolab.load.sweeps.sweep` does; ``repeats`` is
    then the most. The ``repeat`` column says how many rounds were made.
    """
    rows: list[dict[str, Any]] = []
    openers = [functools.partial(open_server, model) for model in models]

    def warm_up(server: Server) -> None:
        run_load(LoadSpec(server.url + "/", connections=connections, duration_s=WARMUP_S))

    def enough(repeat: int, index: int) -> bool:  # asked after each round: every model's runs so far
        return until_spread_pct is not None and repeat >= 1 and all(
            spread_pct([row["rps"] for row in rows if row["model"] == model]) <= until_spread_pct for model in models
        )

    bar = tqdm(total=repeats * len(models), desc="runs", disable=not progress, leave=False)
    with bar, open_in_turns(openers, repeats, interleave=True, warm_up=warm_up, enough=enough) as turns:
        for repeat, index, server in turns:
            result = run_load(LoadSpec(server.url + "/", connections=connections, duration_s=duration_s))
            rows.append({"model": models[index], "repeat": repeat, "connections": connections} | _figures(result))
            bar.update()
    return pd.DataFrame(rows)


def tiny_route_beside_cpu(
    offload: bool,
    *,
    julia_ms: float = 20.0,
    julia_clients: int = 2,
    rate: float = 100.0,
    duration_s: float = 2.0,
    alone_first: bool = False,
    model: str = "asyncio",
) -> pd.DataFrame:
    """Tiny-route latency (open loop at ``rate``/s) while ``julia_clients`` keep requesting Julia sets.

    One row per run, ``case`` "beside Julia" (and first "alone", without the Julia clients, if
    ``alone_first``): the tiny route's figures (``p99_ms``...) and the Julia answers/s (``julia_rps``).
    """
    rows = []
    with open_server(model, offload=offload) as server:
        tiny = LoadSpec(server.url + "/", mode="open", rate=rate, connections=20, duration_s=duration_s)
        run_load(LoadSpec(server.url + "/", connections=10, duration_s=WARMUP_S))
        if alone_first:
            rows.append({"case": "alone", "julia_rps": 0.0} | _figures(run_load(tiny)))
        # The Julia load starts first and runs longer, so that it covers the whole tiny-route run.
        heavy = LoadSpec(
            f"{server.url}/julia?ms={julia_ms:g}", connections=julia_clients, duration_s=duration_s + 0.5, timeout_s=30
        )
        with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
            julia = pool.submit(run_load, heavy)
            result = run_load(tiny)
            rows.append({"case": "beside Julia", "julia_rps": julia.result().rps} | _figures(result))
    return pd.DataFrame(rows).assign(model=model, offload=offload, julia_ms=julia_ms, julia_clients=julia_clients)
