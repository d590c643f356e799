"""``python -m iolab balance``: the instrument of the chapter on pre-fork servers.

Heavy imports happen inside ``run``, so listing the commands stays fast.
"""

from __future__ import annotations

import argparse
import json

from iolab.commands.table import Subparsers, print_table


def add_balance(sub: Subparsers) -> None:
    """Register ``python -m iolab balance``: connections per pre-fork worker, counted from X-Worker."""
    p = sub.add_parser(
        "balance",
        help="start a pre-fork server and count how connections spread over its workers",
        description="Open CONNECTIONS connections to a new pre-fork server, one request each, and count the "
        "answers per worker (X-Worker header); also the workers' voluntary context switches per connection "
        "(about constant: the kernel wakes one worker per connection, not all of them).",
    )
    p.add_argument("--workers", type=int, default=4, help="pre-fork workers (default 4)")
    p.add_argument("--reuseport", action="store_true", help="a SO_REUSEPORT socket per worker instead of one shared socket")
    p.add_argument("--connections", type=int, default=200, help="connections to open (default 200)")
    p.add_argument("--clients", type=int, default=1, help="client threads opening them at once (default 1)")
    p.add_argument("--json", action="store_true", help="print one JSON document")

    def run(args: argparse.Namespace) -> int:
        from iolab.load.comparisons import Variant
        from iolab.topics.prefork.balance import spread, switches_per_connection

        if args.workers < 1 or not 1 <= args.clients <= args.connections:
            p.error("need --workers >= 1 and 1 <= --clients <= --connections")
        with Variant("prefork", "prefork", args.workers, {"reuseport": args.reuseport}).open() as server:
            table = spread(server.url, server.pid, args.connections, args.clients)
            switches = switches_per_connection(server.url, server.pid, args.connections)
        if args.json:
            print(json.dumps({"workers": table.to_dict(orient="records"), "switches_per_connection": switches}))
        else:
            print_table(table, as_json=False)
            print(f"voluntary context switches of all workers, per connection: {switches:.2f}")
        return 0

    p.set_defaults(run=run)
