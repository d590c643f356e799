"""Load a set of servers one after another: each variant x target x number of clients, a row each.

A *variant* is a server model with its settings ("prefork, 2 workers", "asyncio, offloading"), or any
server with a label and an ``open()`` (chapter 4's Node.js server); ``open()`` starts it for the
duration of its rows, so that two variants never share the CPU (unless ``interleave``). This is
:func:`iolab.load.sweeps.sweep` for servers that are not all the kit's: the figures of each run
(``sweeps.figures``) and the way servers take turns (``sweeps.open_in_turns``) are the same.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import pandas as pd

from iolab.load import LoadSpec, run_load
from iolab.load.sweeps import figures, open_in_turns
from iolab.servers import Server, open_server


class Running(Protocol):
    """What a started variant offers: its base URL (``http://127.0.0.1:PORT``) and its (parent) pid."""

    @property
    def url(self) -> str: ...

    @property
    def pid(self) -> int: ...


class Startable(Protocol):
    """A server to load: a label for the tables, and ``open()`` to run it within a ``with`` block."""

    label: str

    def open(self) -> contextlib.AbstractContextManager[Running]: ...


@dataclass(frozen=True)
class Variant:
    """One of the course's server models with its settings, labelled for tables and plots.

    ``settings`` are further :class:`iolab.servers.Options` settings: ``Variant("asyncio --offload",
    "asyncio", settings={"offload": True})``.
    """

    label: str
    model: str
    workers: int | None = None
    settings: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @contextlib.contextmanager
    def open(self) -> Iterator[Server]:
        """Start the server (:func:`iolab.servers.open_server`); leaving the block stops it and its workers."""
        with open_server(self.model, workers=self.workers, **self.settings) as server:
            yield server


def load_row(url: str, clients: int, duration_s: float, keepalive: bool = True, timeout_s: float = 5.0) -> dict[str, object]:
    """The headline figures (``iolab.load.sweeps.FIGURES``) of one closed-loop run of ``clients`` clients on ``url``."""
    spec = LoadSpec(url, connections=clients, duration_s=duration_s, keepalive=keepalive, timeout_s=timeout_s)
    return figures(run_load(spec))


def load_matrix(
    variants: Sequence[Startable],
    targets: Sequence[str],
    clients: Sequence[int],
    duration_s: float,
    keepalive: bool = True,
    progress: bool = True,
    timeout_s: float = 5.0,
    repeats: int = 1,
    interleave: bool = False,
) -> pd.DataFrame:
    """Closed-loop load on every variant x target x number of clients; one tidy row per run.

    ``timeout_s`` bounds each request: a connection a server never answers (a pre-fork server with
    fewer workers than keep-alive clients) costs that long at the end of its run. With ``repeats``
    the runs on one server are interleaved (all targets and client counts, then all again), so that a
    slow patch of a shared machine spreads over the settings instead of landing on one; with
    ``interleave`` too, over the variants (see :func:`iolab.load.sweeps.open_in_turns`).
    """
    from tqdm.auto import tqdm

    rows = []
    total = len(variants) * len(targets) * len(clients) * repeats
    openers = [variant.open for variant in variants]
    with tqdm(total=total, desc="load runs", disable=not progress) as bar, \
            open_in_turns(openers, repeats, interleave=interleave) as turns:
        for repeat, index, server in turns:
            for target in targets:
                for n in clients:
                    figures = load_row(server.url + target, n, duration_s, keepalive, timeout_s)
                    rows.append({"server": variants[index].label, "target": target, "clients": n, "repeat": repeat} | figures)
                    bar.update()
    return pd.DataFrame(rows)
