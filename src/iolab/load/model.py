"""What a load run asks for (``LoadSpec``) and what it measured (``LoadResult``), with JSON in and out.

Both are frozen: a result is a record of one run, never updated. ``LoadResult`` keeps the merged
HDR histograms encoded, so a notebook can recompute any percentile later, and the per-second
timeline, so a collapse or a recovery shows as it happened rather than averaged away.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

from iolab.load.histogram import PERCENTILES, Histogram, percentile_key

if TYPE_CHECKING:
    import pandas as pd

Mode = Literal["closed", "open"]
# Open loop without an explicit pool: enough connections for rate x latency in flight
# (20,000 req/s x 1 ms = 20) with room for a slow patch.
DEFAULT_POOL = 50


@dataclass(frozen=True)
class LoadSpec:
    """One load run: the target, the loop (closed: N clients; open: R requests/s) and its bounds."""

    url: str
    mode: Mode = "closed"
    connections: int = DEFAULT_POOL  # closed: the clients; open: the pool the schedule draws from
    rate: float | None = None  # open loop only: requests per second, all workers together
    duration_s: float = 5.0
    max_requests: int | None = None  # stop early after this many attempts (answers + errors)
    keepalive: bool = True  # False: a new connection for every request
    timeout_s: float = 5.0  # per request (and per connect)
    workers: int | None = None  # worker processes; None: half the cores (see manager.default_workers)
    namespace: str | None = None  # chapter 12: run the workers inside this network namespace (a netlab's client)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"{self.url!r}: the load generator speaks plain http://HOST:PORT/PATH only")
        if self.mode not in ("closed", "open"):
            raise ValueError(f"mode {self.mode!r}: use 'closed' (N clients) or 'open' (a rate)")
        if self.mode == "open" and not (self.rate and self.rate > 0):
            raise ValueError("open loop needs a rate > 0 (requests per second)")
        if self.connections < 1 or (self.workers is not None and self.workers < 1):
            raise ValueError("connections and workers must be at least 1")
        if self.workers is not None and self.connections < self.workers:
            raise ValueError(f"{self.workers} workers need at least as many connections (got {self.connections})")
        if not 0 < self.duration_s <= 3600:
            raise ValueError(f"duration {self.duration_s} s: give 0 < duration <= 3600 s")

    @property
    def host(self) -> str:
        """The target host name or address."""
        return urlsplit(self.url).hostname or ""

    @property
    def port(self) -> int:
        """The target port (80 when the URL names none)."""
        return urlsplit(self.url).port or 80

    @property
    def target(self) -> str:
        """The request target: path and query."""
        parts = urlsplit(self.url)
        return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")

    def to_dict(self) -> dict[str, Any]:
        """The spec as a JSON-ready dict."""
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoadSpec:
        """The spec ``to_dict`` wrote."""
        return cls(**{f.name: d[f.name] for f in fields(cls) if f.name in d})


def _prefixed(prefix: str, percentiles: dict[str, float]) -> dict[str, float]:
    return {f"{prefix}{k}_ms": v for k, v in percentiles.items()}


@dataclass(frozen=True)
class LoadResult:
    """The measurements of one run, merged over its workers. Latencies are of 2xx answers only."""

    spec: LoadSpec
    duration_s: float  # the measured window (shorter than asked if max_requests stopped it)
    requests: int  # answers with a 2xx status
    errors: dict[str, int]  # kind -> count: refused, timeout, reset, closed, http_503, ...
    sent: int  # requests written to a socket
    unsent: int  # open loop: scheduled but still waiting for a free connection at the end
    bytes_received: int
    per_connection: list[int]  # answers per connection slot, all workers in order
    cpu_s: float  # user + system CPU the worker processes used during the run
    workers: int
    # Encoded HDR histograms: "latency" from the actual send; in open loop also "corrected" (from
    # the intended send time) and "slip" (actual minus intended send time).
    histograms: dict[str, str]
    # One entry per second of the run: answers, errors, and the encoded histogram of that second.
    seconds: list[dict[str, Any]] = field(default_factory=list)

    # --- derived figures -----------------------------------------------------------------------

    @property
    def rps(self) -> float:
        """2xx answers per second over the measured window."""
        return self.requests / self.duration_s if self.duration_s > 0 else 0.0

    @property
    def error_count(self) -> int:
        """All errors, every kind."""
        return sum(self.errors.values())

    @property
    def never_served(self) -> int:
        """Connection slots that got no answer at all during the run."""
        return sum(1 for n in self.per_connection if n == 0)

    def histogram(self, name: str = "latency") -> Histogram | None:
        """The merged histogram ``latency``, ``corrected`` or ``slip``; None if not measured."""
        text = self.histograms.get(name)
        return Histogram.decode(text) if text is not None else None

    def percentiles(self, name: str = "latency") -> dict[str, float] | None:
        """p50..p99.99 and max in ms of histogram ``name``; None if not measured."""
        h = self.histogram(name)
        return h.percentiles() if h is not None else None

    @property
    def cpu_percent(self) -> float:
        """The client's CPU use as a percentage of one core over the run."""
        return 100 * self.cpu_s / self.duration_s if self.duration_s > 0 else 0.0

    # --- tables --------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """Flat headline figures first, then the details; JSON-ready.

        ``p50_ms``.. are the latencies a user saw: in open loop the corrected ones (from the
        intended send time), with the uncorrected ones under ``uncorrected_p50_ms``..
        """
        latency = self.percentiles("latency") or {}
        corrected = self.percentiles("corrected")
        slip = self.percentiles("slip")
        served = sorted(self.per_connection)
        head: dict[str, Any] = {
            "url": self.spec.url,
            "mode": self.spec.mode,
            "connections": self.spec.connections,
            "rate": self.spec.rate,
            "workers": self.workers,
            "duration_s": self.duration_s,
            "requests": self.requests,
            "errors": self.error_count,
            "rps": round(self.rps, 1),
            "sent": self.sent,
            "unsent": self.unsent,
            "bytes_received": self.bytes_received,
            **_prefixed("", corrected if corrected is not None else latency),
        }
        if corrected is not None:
            head |= _prefixed("uncorrected_", latency)
        if slip is not None:
            head |= _prefixed("slip_", slip)
        head |= {
            "served_min": served[0] if served else 0,
            "served_median": served[len(served) // 2] if served else 0,
            "served_max": served[-1] if served else 0,
            "never_served": self.never_served,
            "client_cpu_s": self.cpu_s,
            "client_cpu_percent": round(self.cpu_percent, 1),
        }
        details = {
            "errors_by_kind": dict(self.errors),
            "spec": self.spec.to_dict(),
            "per_connection": self.per_connection,
            "timeline": self.timeline().to_dict(orient="records"),
            "histograms": self.histograms,
            "seconds": self.seconds,
        }
        return head | details

    def to_json(self) -> str:
        """``to_dict`` as one line of JSON."""
        return json.dumps(self.to_dict())

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoadResult:
        """The result ``to_dict`` wrote."""
        return cls(
            spec=LoadSpec.from_dict(d["spec"]),
            duration_s=d["duration_s"],
            requests=d["requests"],
            errors=d["errors_by_kind"],
            sent=d["sent"],
            unsent=d["unsent"],
            bytes_received=d["bytes_received"],
            per_connection=d["per_connection"],
            cpu_s=d["client_cpu_s"],
            workers=d["workers"],
            histograms=d["histograms"],
            seconds=d["seconds"],
        )

    def timeline(self) -> pd.DataFrame:
        """One row per second: second, rps (2xx answers), errors, p50_ms, p99_ms of that second."""
        import pandas as pd  # here, not at the top: the worker processes import this module

        rows = []
        for i, s in enumerate(self.seconds):
            h = Histogram.decode(s["histogram"])
            rows.append(
                {
                    "second": i + 1,
                    "rps": s["requests"],
                    "errors": s["errors"],
                    "p50_ms": h.percentile_us(50) / 1000,
                    "p99_ms": h.percentile_us(99) / 1000,
                }
            )
        return pd.DataFrame(rows, columns=["second", "rps", "errors", "p50_ms", "p99_ms"])

    def summary(self) -> pd.DataFrame:
        """One row of headline figures, units in the column names."""
        head = {k: v for k, v in self.to_dict().items() if not isinstance(v, (dict, list))}
        head.pop("url")
        import pandas as pd
        return pd.DataFrame([head]).round(3)

    def latency_table(self) -> pd.DataFrame:
        """Tidy percentiles: one row per (series, percentile) with ``ms``; for plots."""
        import pandas as pd

        rows = []
        for name in ("corrected", "latency", "slip"):
            p = self.percentiles(name)
            if p is None:
                continue
            series = {"latency": "uncorrected" if "corrected" in self.histograms else "latency"}.get(name, name)
            rows += [{"series": series, "percentile": k, "ms": v} for k, v in p.items()]
        return pd.DataFrame(rows, columns=["series", "percentile", "ms"])


PERCENTILE_KEYS = [percentile_key(p) for p in PERCENTILES] + ["max"]
