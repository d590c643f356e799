"""``python -m iolab networks rtt|far|tls``: chapter 12's measurements across a netlab link, from a terminal.

Kept apart from :mod:`iolab.topics.networks` so that building the command line imports neither pandas nor
the experiments.
"""

from __future__ import annotations

import argparse

from iolab.commands.table import Subparsers, print_table

MODELS = ["iterative", "threaded", "prefork", "asyncio", "uvloop", "trio", "scratch"]


def add_networks(sub: Subparsers) -> None:
    """Register ``python -m iolab networks``."""
    p = sub.add_parser(
        "networks",
        help="across a simulated link (needs root): the link's round trip, models against distance, TLS's cost",
        description="Open a netlab (two namespaces joined by an impaired link), measure, and remove it.",
    )
    what = p.add_subparsers(dest="what", required=True)
    rtt = what.add_parser("rtt", help="the round trip connect() measures, against the link's setting")
    rtt.add_argument("--rtt-ms", type=float, nargs="+", default=[10, 50, 150], metavar="MS")
    rtt.add_argument("--samples", type=int, default=20)
    far = what.add_parser("far", help="requests/s of closed-loop clients against server models as the round trip grows")
    far.add_argument("--models", nargs="+", default=["prefork", "threaded", "asyncio"], choices=MODELS, metavar="MODEL")
    far.add_argument("--rtt-ms", type=float, nargs="+", default=[0, 10, 50], metavar="MS")
    far.add_argument("--clients", type=int, default=50)
    far.add_argument("--seconds", type=float, default=2.0)
    far.add_argument("--close", action="store_true", help="a new connection per request (default: keep-alive)")
    far.add_argument("--loss", type=float, default=0.0, help="packet loss per direction, 0..1 (default 0)")
    tls = what.add_parser("tls", help="the phases of a request on a new connection: plain, TLS 1.2, TLS 1.3")
    tls.add_argument("--rtt-ms", type=float, default=50.0, metavar="MS")
    tls.add_argument("--samples", type=int, default=10)
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from iolab.netlab import available
        from iolab.topics.networks import distance, link
        from iolab.topics.networks import tls as tls_phases

        missing = available()
        if missing:
            p.error(missing)
        if args.what == "rtt":
            table = link.in_lab(lambda lab: link.rtt_accuracy(lab, args.rtt_ms, args.samples))
        elif args.what == "far":
            load = {"connections": args.clients, "duration_s": args.seconds, "keepalive": not args.close}
            links = [{"rtt_ms": r, "loss": args.loss} for r in args.rtt_ms]
            runs = link.in_lab(lambda lab: distance.across_links(lab, [{"model": m} for m in args.models], links, [load]))
            table = runs[["model", "rtt_ms", "loss", "rps", "never_served", "p50_ms", "p99_ms", "errors"]]
        else:
            runs = link.in_lab(lambda lab: tls_phases.request_phases(tls_phases.KINDS, args.samples, lab),
                               delay_ms=args.rtt_ms / 2)
            table = runs.groupby("kind")[["connect_ms", "handshake_ms", "request_ms", "total_ms"]].median().reset_index()
        print_table(table, args.json, digits=2)
        return 0

    p.set_defaults(run=run)
