"""``python -m iolab db``: source 002's six services, each against a throwaway PostgreSQL, under load."""

from __future__ import annotations

import argparse

from iolab.commands.table import Subparsers, add_with_examples, print_table

EPILOG = """\
variants (source 002): 1 sync, new connection per request; 2 async, new connection per request;
3 sync, one shared connection; 4 async, one shared connection behind a queue; 5 async pool of 5;
6 async pool of prepared statements. The database is started for the run and removed after it,
unless IOLAB_DATABASE_URL names a server to use. Example:
  python -m iolab db --variants 1-6 --requests 2000 --concurrency 5
"""


def add_db(sub: Subparsers) -> None:
    p = add_with_examples(sub, "db", EPILOG,
                          "serve a catalog query six ways (source 002) against PostgreSQL and measure each")
    p.add_argument("--variants", default="1-6", help="which variants, e.g. 1-6 or 1,6 (default 1-6)")
    p.add_argument("--requests", type=int, default=2000, metavar="N", help="requests per variant (default 2000)")
    p.add_argument("--concurrency", type=int, default=5, metavar="C", help="closed-loop clients (default 5, as ab -c 5)")
    p.add_argument("--query", choices=["catalog", "ten"], default="catalog",
                   help="catalog: ~19 KB of JSON (default); ten: the 10-row, ~1 KB variant")  # fmt: skip
    p.add_argument("--json", action="store_true", help="print a JSON list, one object per variant")

    def run(args: argparse.Namespace) -> int:
        from iolab.topics.databases.postgres import open_postgres
        from iolab.topics.databases.queries import QUERIES
        from iolab.topics.databases.runner import compare_variants, parse_variants

        try:
            variants = parse_variants(args.variants)
        except ValueError as exc:
            p.error(str(exc))
        if args.requests < 1 or args.concurrency < 1:
            p.error("--requests and --concurrency must be at least 1")
        with open_postgres() as db:
            df = compare_variants(db, QUERIES[args.query], variants, concurrency=args.concurrency,
                                  requests=args.requests, progress=not args.json)  # fmt: skip
        columns = ["variant", "label", "rps", "p50_ms", "p99_ms", "response_bytes", "errors", "service_cpu_ms",
                   "db_cpu_ms", "published_rps"]  # fmt: skip
        print_table(df if args.json else df[columns], args.json, digits=2)
        return 0

    p.set_defaults(run=run)
