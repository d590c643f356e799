"""Idle and slowloris clients against the kit's servers, with and without timeouts.

Three experiments, each a function that starts its server(s), plays the bad clients with
:mod:`iolab.load.hostile`, measures a legitimate client beside them and stops everything:

- :func:`idle_holders`: as many idle keep-alive clients as a pre-fork server has children, then one
  legitimate request: is it answered, and when?
- :func:`slowloris_table`: legitimate clients' figures alone, then beside ``attackers`` slowloris
  connections, for each model, with or without a header timeout;
- :func:`slow_but_honest`: clients whose request head takes a while to arrive (a phone on a bad
  network), against header timeouts shorter and longer than that: what the timeout costs them.

They run on the loopback: what an attacker holds does not depend on the round-trip time.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Sequence
from urllib.parse import urlsplit

import pandas as pd

from iolab.load import LoadSpec, hostile, run_load
from iolab.load.sweeps import figures
from iolab.servers import open_server
from iolab.topics.networks.distance import PREFORK_CHILDREN, server_settings

LEGIT_TIMEOUT_S = 2.0  # a legitimate request not answered within this counts as a timeout


def first_answer_s(url: str, timeout_s: float) -> float | None:
    """Seconds from connect() to the first byte of the answer to one GET; None if none came in time."""
    parts = urlsplit(url)
    started = time.monotonic()
    with socket.create_connection((parts.hostname, parts.port), timeout=timeout_s) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % parts.netloc.encode())
        try:
            first = sock.recv(1)
        except TimeoutError:
            return None
    return time.monotonic() - started if first else None


def idle_holders(workers: int = PREFORK_CHILDREN, keepalive_timeout: float | None = None,
                 wait_s: float = 5.0) -> dict[str, object]:
    """Pre-fork with ``workers`` children, as many idle keep-alive clients, then one legitimate GET."""
    with open_server("prefork", workers=workers, keepalive_timeout=keepalive_timeout) as server:
        with hostile.idle(server.url, count=workers, seconds=wait_s + 5) as attack:
            answered = first_answer_s(server.url, wait_s)
            report = attack.report()
            # A child freed by closing an idle connection answers at once; the attack's own loop may
            # not have read that close yet (seen in a container: answered at 0.501 s, none counted).
            settle = time.monotonic() + 1.0
            while answered is not None and report.closed_by_server == 0 and time.monotonic() < settle:
                time.sleep(0.01)
                report = attack.report()
    return {"workers": workers, "idle_clients": workers, "keepalive_timeout_s": keepalive_timeout,
            "answered_after_s": answered, "waited_up_to_s": wait_s, "idle_closed_by_server": report.closed_by_server}


def slowloris_table(models: Sequence[str], attackers: int, header_timeout: float | None, clients: int = 2,
                    duration_s: float = 2.0, byte_every_ms: float = 100.0) -> pd.DataFrame:
    """Legitimate clients alone, then beside ``attackers`` slowloris connections; one row per model and phase.

    Pre-fork runs with :data:`~iolab.topics.networks.distance.PREFORK_CHILDREN` children (``children``
    in its rows): how long the attackers hold it depends on how many.
    """
    rows = []
    load = {"connections": clients, "duration_s": duration_s, "timeout_s": LEGIT_TIMEOUT_S, "workers": 1}
    for model in models:
        settings = server_settings(model)
        with open_server(**settings, header_timeout=header_timeout) as server:
            alone = run_load(LoadSpec(server.url + "/", **load))
            with hostile.slowloris(server.url, count=attackers, byte_every_ms=byte_every_ms,
                                   seconds=duration_s + 10) as attack:
                attacked = run_load(LoadSpec(server.url + "/", **load))
                report = attack.report()
        head = {"model": model, "children": settings.get("workers"), "header_timeout_s": header_timeout,
                "attackers": attackers}
        rows.append(head | {"phase": "alone"} | figures(alone))
        rows.append(head | {"phase": "under attack", "attackers_connected": report.connected,
                            "attackers_408": report.answered_408} | figures(attacked))
    return pd.DataFrame(rows)


def slow_but_honest(header_timeouts: Sequence[float], head_takes_s: float, clients: int = 5,
                    model: str = "asyncio") -> pd.DataFrame:
    """Clients whose request head takes ``head_takes_s`` to arrive, against each header timeout."""
    rows = []
    for timeout in header_timeouts:
        with open_server(model, header_timeout=timeout) as server:
            report = hostile.slowloris(server.url, count=clients, byte_every_ms=100, seconds=head_takes_s + 1,
                                       finish_after_s=head_takes_s).run()
        rows.append({"model": model, "header_timeout_s": timeout, "head_takes_s": head_takes_s, "clients": clients,
                     "answered_200": report.statuses.get(200, 0), "refused_408": report.answered_408})
    return pd.DataFrame(rows)
