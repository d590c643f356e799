"""``python -m iolab upstreams``: source 001's modelling tool, with real upstreams and real sockets."""

from __future__ import annotations

import argparse
import json
import sys

from iolab.commands.argtypes import duration, positive_int
from iolab.commands.table import Subparsers, add_with_examples

EPILOG = """\
The latency spec lists the upstream endpoints, called in turn (round robin):
  20ms*10        ten endpoints answering in 20 ms
  20ms*9,30s     nine in 20 ms, one in 30 s (any call of --late or more counts as failed)
  20ms*9,hang    one endpoint never answers (a black hole): only --timeout ends its calls
  20ms*8,refuse,reset   one refuses connections, one resets them
Examples:
  python -m iolab upstreams --rate 1000 --num-req 10000 --latency "20ms*9,30s" sync --threads 50
  python -m iolab upstreams --rate 1000 --num-req 10000 --latency "20ms*9,30s" async
  python -m iolab upstreams --rate 1000 --num-req 10000 --latency "20ms*9,30s" async --loop trio
  python -m iolab upstreams --rate 1000 --num-req 5000 --latency "20ms*9,hang" --timeout 0.1 sync --threads 50
Run the upstreams alone (to poke them with curl):
  python -m iolab.topics.upstreams.endpoints '{"latency": "20ms*9,hang"}'
"""


def format_report(summary: dict) -> str:
    """The source's two lines (rate, overhead percentiles) and the counts, as text."""
    overhead = summary["overhead_ms"]
    kinds = ", ".join(f"{k} {n}" for k, n in sorted(summary["failed_by_kind"].items(), key=lambda kv: -kv[1]))
    lines = [
        f"Model:      {summary['model']}" + (f", {summary['threads']} threads" if summary["model"] == "sync" else f", {summary['loop']}"),
        f"Upstreams:  {summary['latency']}, {summary['rate']:g} req/s, {summary['num_req']} requests",
        f"Avg rate: {summary['avg_rate']:.3f}, StdDev: {summary['stddev_rate']:.3f}",
        f"Succeeded: {summary['succeeded']}   Failed: {summary['failed']}" + (f" ({kinds})" if kinds else "")
        + (f"   Unfinished: {summary['unfinished']}" if summary["unfinished"] else ""),
        f"Seconds:    {summary['seconds']:.3f} (service CPU {summary['service_cpu_s']:.2f} s, peak RSS {summary['peak_rss_mb']} MiB)",
        "Latency overhead (ms):",
    ]
    for key, value in overhead.items():
        lines.append(f"  {key.replace('_', '.'):<8} {value:>12.3f}")
    return "\n".join(lines)


def add_upstreams(sub: Subparsers) -> None:
    p = add_with_examples(
        sub, "upstreams", EPILOG, "a service calling slow or failing upstreams: a thread pool (sync) vs an event loop (async)",
        description="Requests arrive at --rate; each calls one upstream endpoint (round robin) and the service "
        "reports source 001's figures: average rate and its standard deviation per second, and the latency "
        "it added on top of the upstream's own (overhead) from p0 to p100.",
    )
    p.add_argument("--rate", type=float, required=True, metavar="R", help="requests per second")
    p.add_argument("--num-req", "--num_req", type=positive_int, required=True, metavar="N", help="requests in all")
    p.add_argument("--latency", required=True, metavar="SPEC", help='the upstreams, e.g. "20ms*9,30s" (see below)')
    p.add_argument("--timeout", type=duration, metavar="S", help="client timeout per upstream call (default: none)")
    p.add_argument("--late", type=duration, default=1.0, metavar="S", help="answers this slow count as failed (default 1 s, as in the source)")
    p.add_argument("--max-seconds", type=float, default=120.0, metavar="S", help="stop the run after S seconds (default 120)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    models = p.add_subparsers(dest="model", required=True, metavar="MODEL")
    sync = models.add_parser("sync", help="a fixed pool of threads doing blocking calls")
    sync.add_argument("--threads", "-t", type=positive_int, required=True, help="threads in the pool")
    asynchronous = models.add_parser("async", help="one event loop, a task per request")
    asynchronous.add_argument("--loop", choices=["asyncio", "uvloop", "trio"], default="asyncio", help="the event loop (default asyncio)")
    asynchronous.add_argument("--limit", type=positive_int, metavar="N", help="at most N calls in flight; more are rejected at once")
    asynchronous.add_argument("--limit-scope", choices=["upstream", "service"], default="upstream", help="count the limit per upstream (default) or for the whole service")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.machine import DescriptorLimit
        from iolab.topics.upstreams.run import RunSpec, run_upstreams

        try:
            spec = RunSpec(
                rate=args.rate,
                num_req=args.num_req,
                latency=args.latency,
                model=args.model,
                threads=getattr(args, "threads", 50),
                loop=getattr(args, "loop", "asyncio"),
                timeout_s=args.timeout,
                limit=getattr(args, "limit", None),
                limit_scope=getattr(args, "limit_scope", "upstream"),
                late_s=args.late,
                max_seconds=args.max_seconds,
            )
        except (ValueError, DescriptorLimit) as exc:
            p.error(str(exc))
        result = run_upstreams(spec, progress=not args.json and sys.stderr.isatty())
        summary = result.summary()
        print(json.dumps(summary) if args.json else format_report(summary))
        return 0

    p.set_defaults(run=run)
