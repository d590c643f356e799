"""Servers far away: the kit's servers and load generator on either side of a netlab link.

:func:`across_links` starts every server once, inside the lab's server namespace, then for each
link setting (a round-trip time, a loss rate) changes the link while they run and loads each server
from the client namespace. One tidy row per run: the server's settings, the link's, the load's and
the headline figures (:func:`iolab.load.sweeps.figures`).

Little's law says what a closed loop can reach: N clients, each waiting W seconds per request, make
N / W requests a second. Across a link, W is at least the round trips a request needs
(``round_trips``: how many depends on whether the connection is kept alive) plus the server's own
time; :func:`little_rps` is that bound.

A pre-fork server holds one keep-alive client per child, so its line is ``PREFORK_CHILDREN / RTT``:
:func:`server_settings` pins the children to that constant wherever the chapter starts one.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from iolab.load import LoadSpec, run_load
from iolab.load.sweeps import figures
from iolab.netlab import NetLab
from iolab.servers import open_server

WARMUP_S = 0.3  # one short run per server before the first setting: imports, first allocations
# The pre-fork server's children in this chapter's experiments. Its default, one per CPU, would make
# every count of the chapter ("N / RTT", the clients never served, how long attackers hold it) depend
# on the reader's machine; pinned, they mean the same everywhere, and the notebook takes them from here.
PREFORK_CHILDREN = 2


def little_rps(clients: int, rtt_ms: float, round_trips: int = 1, service_ms: float = 0.0) -> float:
    """Requests/s that ``clients`` closed-loop clients can make at most: clients / time per request."""
    return clients / ((rtt_ms * round_trips + service_ms) / 1000)


def server_settings(model: str) -> dict[str, Any]:
    """:func:`iolab.servers.open_server` arguments for ``model``: pre-fork gets ``PREFORK_CHILDREN`` children."""
    return {"model": model} | ({"workers": PREFORK_CHILDREN} if model == "prefork" else {})


def across_links(
    lab: NetLab,
    servers: Sequence[Mapping[str, Any]],
    links: Sequence[Mapping[str, Any]],
    loads: Sequence[Mapping[str, Any]],
    path: str = "/",
    *,
    repeats: int = 1,
    progress: bool = True,
) -> pd.DataFrame:
    """Every load against every server at every link setting; one row per run.

    A server is the keyword arguments of :func:`iolab.servers.open_server` (:func:`server_settings`:
    ``{"model": "prefork", "workers": 2}``);
    a link, those of :meth:`NetLab.set` with ``rtt_ms`` for the round trip (``{"rtt_ms": 50, "loss":
    0.01}``); a load, those of :class:`iolab.load.LoadSpec` without URL and namespace. The link's
    settings not given are reset (no delay, jitter or loss), so that one row's link is only what it says.
    """
    rows = []
    bar = tqdm(total=len(servers) * len(links) * len(loads) * repeats, desc="runs", disable=not progress, leave=False)
    with bar, contextlib.ExitStack() as stack:
        started = [stack.enter_context(open_server(**s, host=lab.server_ip, namespace=lab.server_ns)) for s in servers]
        for server in started:
            run_load(LoadSpec(server.url + path, connections=2, duration_s=WARMUP_S, timeout_s=1.0,
                              namespace=lab.client_ns))
        for link in links:
            lab.set(**link_settings(link))
            for repeat in range(repeats):
                for settings, server in zip(servers, started):
                    for load in loads:
                        result = run_load(LoadSpec(server.url + path, namespace=lab.client_ns, **load))
                        rows.append(dict(settings) | {"rtt_ms": 0.0, "loss": 0.0} | dict(link) | dict(load)
                                    | {"repeat": repeat} | figures(result))
                        bar.update()
    return pd.DataFrame(rows)


def link_settings(link: Mapping[str, Any]) -> dict[str, Any]:
    """``lab.set`` arguments for a link described by ``rtt_ms`` and the impairments (the rest reset)."""
    settings = {"delay_ms": 0.0, "jitter_ms": 0.0, "loss": 0.0} | {k: v for k, v in link.items() if k != "rtt_ms"}
    if "rtt_ms" in link:
        settings["delay_ms"] = link["rtt_ms"] / 2  # a one-way delay on each direction
    return settings
