"""``python -m iolab backlog``: chapter 3's instrument (a listen backlog nobody accepts from)."""

from __future__ import annotations

import argparse

from iolab.commands.table import Subparsers, print_table


def add_backlog(sub: Subparsers) -> None:
    p = sub.add_parser("backlog", help="fill a listen backlog nobody accepts from; or time a client that met a full one")
    p.add_argument("--backlog", type=int, default=4, help="listen(backlog) of the listener (default 4)")
    p.add_argument("--clients", type=int, default=8, help="clients connecting one after another (default 8)")
    p.add_argument("--timeout", type=float, default=0.3, help="seconds a client waits to connect (default 0.3)")
    p.add_argument("--free-after", type=float, nargs="+", metavar="S",
                   help="instead: with the queue full, accept after S seconds; time the waiting client's connect()")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.topics.sockets import listen_backlog

        if args.free_after:
            if not all(0 < s <= 10 for s in args.free_after):
                p.error("--free-after takes delays 0 < S <= 10 seconds")
            print_table(listen_backlog.overflow_staircase(args.free_after, max(1, args.backlog)), args.json)
            return 0
        if args.backlog < 0 or not 1 <= args.clients <= 200 or not 0 < args.timeout <= 10:
            p.error("give --backlog >= 0, 1 <= --clients <= 200, 0 < --timeout <= 10")
        print_table(listen_backlog.fill_backlog(args.backlog, args.clients, args.timeout), args.json)
        return 0

    p.set_defaults(run=run)
