"""The chapter's queries, and the one way every service turns rows into JSON.

Source 002 serves ``select * from rdb$relations``, Firebird's table of tables, as about 19 KB of
JSON, and mentions a 10-row variant of about 1 KB. The PostgreSQL counterpart of that catalog table
is ``pg_catalog.pg_class``; the columns below make about 115 bytes of JSON per row, so 170 rows are
about 19 KB and 10 rows about 1 KB. Only columns that do not change while the server runs are
chosen (no page or tuple counts), and rows are ordered by ``oid``, so that every variant of every
service answers the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

_CATALOG = (
    "select oid, relname, relkind, relnatts, relhasindex, relpersistence "
    "from pg_catalog.pg_class order by oid limit {rows}"
)
CATALOG_ROWS = 170  # ~19 KB of JSON, the size of source 002's answer
TEN_ROWS = 10  # source 002's small variant, ~1 KB

QUERIES: dict[str, str] = {
    "catalog": _CATALOG.format(rows=CATALOG_ROWS),
    "ten": _CATALOG.format(rows=TEN_ROWS),
}


def catalog(rows: int = CATALOG_ROWS) -> str:
    """The catalog query returning ``rows`` rows (at most the number of relations, ~415 in PostgreSQL 18)."""
    return _CATALOG.format(rows=int(rows))


def slow(ms: float) -> str:
    """A query that waits ``ms`` milliseconds in the server (``pg_sleep``), then returns one small row."""
    return f"select pg_sleep({float(ms) / 1000:.6f}) is null as slept, {float(ms):g} as ms"


def cpu(n: int) -> str:
    """A query that keeps one server process busy (a sum over ``n`` generated numbers) and returns one row."""
    return f"select sum(i) as total from generate_series(1, {int(n)}) as i"


def mixed(n: int, sleep_ms: float) -> str:
    """A query that computes (like ``cpu(n)``) and also waits ``sleep_ms`` without the CPU, as a
    query waiting for a disk would; one row."""
    return f"select sum(i) as total, pg_sleep({float(sleep_ms) / 1000:.6f}) is null as waited from generate_series(1, {int(n)}) as i"


def series(rows: int) -> str:
    """A query returning ``rows`` generated rows of about 60 bytes of JSON each: a result too big to buffer lightly."""
    return f"select i as id, md5(i::text) as digest from generate_series(1, {int(rows)}) as i"


def encode_row(columns: Sequence[str], row: Sequence[Any]) -> bytes:
    """One row as a JSON object, compact."""
    return json.dumps(dict(zip(columns, row)), separators=(",", ":"), default=str).encode()


def encode(columns: Sequence[str], rows: Iterable[Sequence[Any]]) -> bytes:
    """The rows as a JSON array of objects: the body every service answers."""
    return b"[" + b",".join(encode_row(columns, row) for row in rows) + b"]"
