"""The latency spec: which upstream endpoints exist and how each one answers, in source 001's syntax.

``20ms*9,30s`` is ten endpoints: nine answer after 20 ms, one after 30 s. Besides a latency an
endpoint can be one of three faults, the ways a real dependency goes down:

- ``refuse``: nothing listens on its port; every connect fails at once (ECONNREFUSED);
- ``reset``: it accepts, reads the request, and resets the connection (RST) instead of answering;
- ``hang``: it accepts and reads, and never answers (a black hole: only a client timeout ends the call).

Grammar (whitespace ignored)::

    SPEC     := ITEM ("," ITEM)*
    ITEM     := KIND ["*" COUNT]
    KIND     := DURATION | "refuse" | "reset" | "hang"
    DURATION := NUMBER ["us" | "ms" | "s"]     a bare number is milliseconds, as in the source's tool
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import groupby

FAULTS = ("refuse", "reset", "hang")
ANSWER = "answer"
# One listening socket per endpoint: past a few hundred the spec is a typo, not an experiment.
MAX_ENDPOINTS = 1000
# An answer slower than an hour is a hang; say so with "hang".
MAX_LATENCY_S = 3600.0
_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "": 1e-3}
_DURATION = re.compile(r"^(\d+(?:\.\d*)?|\.\d+)(us|ms|s|)$")
GRAMMAR = "ITEM[,ITEM...] where ITEM is a latency (20ms, 1.5s, 300us, 20 = 20ms) or refuse|reset|hang, optionally *COUNT"


@dataclass(frozen=True)
class Endpoint:
    """One upstream endpoint: it answers after ``latency_s``, or fails as ``kind`` says."""

    kind: str = ANSWER  # "answer", or one of FAULTS
    latency_s: float = 0.0  # answers only; a fault has none

    @property
    def label(self) -> str:
        """The endpoint in spec syntax: ``20ms``, ``30s``, ``hang``."""
        if self.kind != ANSWER:
            return self.kind
        s = self.latency_s
        if s >= 1:
            return f"{s:g}s"
        if s * 1e3 >= 1 or s == 0:
            return f"{s * 1e3:g}ms"
        return f"{s * 1e6:g}us"


def parse_duration(text: str) -> float:
    """Seconds in ``text`` (``20ms``, ``1.5s``, ``300us``; a bare number is milliseconds)."""
    match = _DURATION.match(text.strip().lower())
    if not match:
        raise ValueError(f"{text!r} is not a duration: write a number with us, ms or s (20ms, 1.5s)")
    return float(match[1]) * _UNITS[match[2]]


def parse_item(item: str) -> list[Endpoint]:
    """The endpoints one ITEM of a spec stands for (``20ms*9`` is nine)."""
    kind, star, count_text = item.strip().partition("*")
    count = 1
    if star:
        if not count_text.strip().isdigit() or int(count_text) < 1:
            raise ValueError(f"{item!r}: the count after '*' must be a whole number of at least 1")
        count = int(count_text)
    kind = kind.strip().lower()
    if kind in FAULTS:
        return [Endpoint(kind)] * count
    try:
        latency = parse_duration(kind)
    except ValueError:
        raise ValueError(f"{item!r} is neither a latency nor a fault; a spec is {GRAMMAR}") from None
    if latency > MAX_LATENCY_S:
        raise ValueError(f"{item!r}: latencies above {MAX_LATENCY_S:g} s are not answers; write 'hang'")
    return [Endpoint(ANSWER, latency)] * count


def parse_spec(text: str) -> tuple[Endpoint, ...]:
    """The endpoints of a latency spec such as ``20ms*9,30s`` or ``20ms*8,refuse,hang``."""
    if not text or not text.strip():
        raise ValueError(f"an empty latency spec; a spec is {GRAMMAR}")
    endpoints: list[Endpoint] = []
    for item in text.replace(" ", "").split(","):
        if not item:
            raise ValueError(f"{text!r} has an empty item (two commas in a row?)")
        endpoints += parse_item(item)
        if len(endpoints) > MAX_ENDPOINTS:
            raise ValueError(f"{text!r} makes more than {MAX_ENDPOINTS} endpoints, one listening socket each")
    return tuple(endpoints)


def format_spec(endpoints: tuple[Endpoint, ...] | list[Endpoint]) -> str:
    """The shortest spec for ``endpoints``, runs of equal endpoints folded: ``20ms*9,30s``."""
    parts = []
    for endpoint, run in groupby(endpoints):
        n = len(list(run))
        parts.append(endpoint.label + (f"*{n}" if n > 1 else ""))
    return ",".join(parts)
