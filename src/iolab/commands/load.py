"""``python -m iolab load``: the load generator from a terminal, with a summary like ab's."""

from __future__ import annotations

import argparse
import sys

from iolab.commands.table import Subparsers, add_with_examples
from iolab.load.model import DEFAULT_POOL, LoadResult, LoadSpec

EPILOG = """\
closed loop (--connections C): C clients, each sends, waits for the answer, sends again (ab -c, wrk).
open loop (--rate R): requests leave on a fixed schedule of R per second whatever the server does
(wrk2); latency is reported from the scheduled time (corrected) and from the actual send
(uncorrected). Example: python -m iolab load --rate 2000 --duration 5 http://127.0.0.1:8000/
"""


def format_report(result: LoadResult) -> str:
    """The human summary: totals, latency percentiles, and how the connections were served."""
    spec, d = result.spec, result.to_dict()
    loop = (
        f"open loop, {spec.rate:g} req/s over a pool of {spec.connections} connections"
        if spec.mode == "open"
        else f"closed loop, {spec.connections} connections"
    )
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(result.errors.items(), key=lambda kv: -kv[1]))
    lines = [
        f"Server:                 {spec.host}:{spec.port}",
        f"Document path:          {spec.target}",
        f"Load:                   {loop}, {'keep-alive' if spec.keepalive else 'new connection per request'}",
        f"Time taken for tests:   {result.duration_s:.3f} seconds",
        f"Complete requests:      {result.requests}  (2xx answers)",
        f"Failed requests:        {result.error_count}" + (f"  ({kinds})" if kinds else ""),
        f"Requests per second:    {result.rps:.1f} [#/sec]",
        f"Transfer rate:          {result.bytes_received / 1024 / max(result.duration_s, 1e-9):.1f} [Kbytes/sec] received",
        f"Client CPU:             {result.cpu_s:.2f} s ({result.cpu_percent:.0f}% of one core) in {result.workers} worker(s)",
    ]
    if spec.mode == "open":
        lines += [
            f"Scheduled / sent:       {d['sent'] + d['unsent']} / {d['sent']}  ({d['unsent']} never sent: no free connection)",
            f"Achieved send rate:     {d['sent'] / max(result.duration_s, 1e-9):.1f} [#/sec] of {spec.rate:g}",
            f"Schedule slip:          p50 {d['slip_p50_ms']:.3f} ms, p99 {d['slip_p99_ms']:.3f} ms, max {d['slip_max_ms']:.3f} ms",
        ]
    lines += ["", _latency_table(result), ""]
    lines.append(
        f"Answers per connection: min {d['served_min']}, median {d['served_median']}, max {d['served_max']}; "
        f"never served: {result.never_served} of {len(result.per_connection)} connections"
    )
    return "\n".join(lines)


def _latency_table(result: LoadResult) -> str:
    corrected = result.percentiles("corrected")
    latency = result.percentiles("latency") or {}
    if corrected is None:
        header, columns = "Latency (ms)", [latency]
    else:
        header, columns = "Latency (ms)     corrected  uncorrected", [corrected, latency]
    rows = [header]
    for key in latency:
        label = "100% (max)" if key == "max" else key[1:].replace("_", ".") + "%"
        rows.append(f"  {label:<12}" + "".join(f"{c[key]:>11.3f}" for c in columns))
    return "\n".join(rows)


def add_load(sub: Subparsers) -> None:
    p = add_with_examples(sub, "load", EPILOG,
                          "generate HTTP load: N clients (closed loop) or R requests/s (open loop)")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--rate", type=float, metavar="R", help="open loop: R requests per second")
    how.add_argument("--connections", type=int, metavar="C", help="closed loop: C concurrent clients")
    p.add_argument("--pool", type=int, default=DEFAULT_POOL, help=f"open loop: connections to send on (default {DEFAULT_POOL})")
    p.add_argument("--duration", type=float, default=5.0, metavar="S", help="seconds of load (default 5)")
    p.add_argument("--requests", type=int, metavar="N", help="stop after N requests, if before the duration")
    p.add_argument("--workers", type=int, metavar="W",
                   help="client processes (default: half the cores, at least one, at most one per connection)")
    p.add_argument("--no-keepalive", action="store_true", help="a new connection for every request")
    p.add_argument("--timeout", type=float, default=5.0, metavar="S", help="per request (default 5 s)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("url", metavar="URL", help="http://HOST:PORT/PATH")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.machine import DescriptorLimit
        from iolab.load.manager import run_load

        try:
            spec = LoadSpec(
                url=args.url,
                mode="open" if args.rate is not None else "closed",
                connections=args.pool if args.rate is not None else args.connections,
                rate=args.rate,
                duration_s=args.duration,
                max_requests=args.requests,
                keepalive=not args.no_keepalive,
                timeout_s=args.timeout,
                workers=args.workers,
            )
            result = run_load(spec, progress=not args.json and sys.stderr.isatty())
        except (ValueError, DescriptorLimit) as exc:
            p.error(str(exc))
        if args.json:
            print(result.to_json())
        else:
            print(format_report(result))
        return 0

    p.set_defaults(run=run)
