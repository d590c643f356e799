"""``python -m iolab attack slowloris|idle|slowread HOST:PORT``: bad clients against a server, from a terminal.

Runs one attack of :mod:`iolab.load.hostile` for ``--seconds`` and prints what it saw: connections
held, closed by the server, the answers' statuses (408s for slowloris against a header timeout).
Run ``python -m iolab load`` from another terminal meanwhile to see what legitimate clients get.
"""

from __future__ import annotations

import argparse
import json

from iolab.commands.argtypes import positive_int, seconds
from iolab.commands.table import Subparsers, add_with_examples

EPILOG = """\
slowloris: each client trickles a request head, a byte every --byte-every-ms, and never ends it.
idle:      each client sends one request (unless --no-request), reads the answer, then says nothing.
slowread:  each client asks for --pipelined large answers at once and reads them at --bytes-per-s.
Example: python -m iolab attack slowloris --count 500 --seconds 10 127.0.0.1:8000
"""


def add_attack(sub: Subparsers) -> None:
    p = add_with_examples(sub, "attack", EPILOG,
                          "slow and hostile clients (slowloris, idle holders, slow readers) against a server")
    p.add_argument("kind", choices=["slowloris", "idle", "slowread"])
    p.add_argument("--count", type=positive_int, default=100, metavar="N", help="connections (default 100)")
    p.add_argument("--seconds", type=seconds, default=10.0, metavar="S", help="how long, at most (default 10)")
    p.add_argument("--byte-every-ms", type=seconds, default=100.0, metavar="MS", help="slowloris: pace (default 100)")
    p.add_argument("--finish-after", type=seconds, metavar="S", help="slowloris: complete the head after S seconds")
    p.add_argument("--no-request", action="store_true", help="idle: connect and say nothing at all")
    p.add_argument("--bytes-per-s", type=seconds, default=4096.0, metavar="B", help="slowread: rate (default 4096)")
    p.add_argument("--pipelined", type=positive_int, default=64, metavar="K", help="slowread: requests sent at once")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("target", metavar="HOST:PORT", help="the server, e.g. 127.0.0.1:8000 (a URL works too)")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.machine import DescriptorLimit
        from iolab.load import hostile

        common = {"count": args.count, "seconds": args.seconds}
        try:
            if args.kind == "slowloris":
                attack = hostile.slowloris(args.target, byte_every_ms=args.byte_every_ms,
                                           finish_after_s=args.finish_after, **common)
            elif args.kind == "idle":
                attack = hostile.idle(args.target, request=not args.no_request, **common)
            else:
                attack = hostile.slowread(args.target, bytes_per_s=args.bytes_per_s, pipelined=args.pipelined, **common)
            report = attack.run()
        except (ValueError, DescriptorLimit) as exc:
            p.error(str(exc))
        d = report.to_dict()
        if args.json:
            print(json.dumps(d))
            return 0
        statuses = ", ".join(f"{n} x {s}" for s, n in d["statuses"].items()) or "none"
        median = d["closed_after_s_median"]
        print(f"{d['kind']}: {d['connected']} of {d['count']} connected ({d['failed']} failed) for {d['elapsed_s']:.1f} s")
        print(f"  held to the end:   {d['held']}  (at most {d['max_held']} at once)")
        print(f"  closed by server:  {d['closed_by_server']}" + (f", after {median:.2f} s (median)" if median else ""))
        print(f"  first answers:     {statuses}")
        print(f"  bytes sent / recv: {d['bytes_sent']} / {d['bytes_received']}")
        return 0

    p.set_defaults(run=run)
