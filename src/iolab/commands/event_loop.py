"""``python -m iolab wordfreq``: source 004's word-frequency experiment from a terminal."""

from __future__ import annotations

import argparse
import json
import sys

from iolab.commands.argtypes import positive_int
from iolab.commands.table import Subparsers
from iolab.kit.sockets import BACKLOG
# The topic's registry and specs: importing them loads no client version (each module is imported
# only to run it) and no uvloop, so ``--help`` stays fast.
from iolab.topics.event_loop.run import CLIENTS, TIMEOUT_S, WORDS, Measurement, WordServer, measure_here


def add_wordfreq(sub: Subparsers) -> None:
    p = sub.add_parser(
        "wordfreq",
        help="source 004's experiment: count words arriving over N connections, with threads or an event loop",
        description="Start the word server, read N connections to the end with one client version, and print "
        "the top-10 words, the run time, the peak memory and the CPU time of the client.",
    )
    p.add_argument("--model", choices=list(CLIENTS), default="scratch", help="the client version (default scratch)")
    p.add_argument("--connections", type=positive_int, default=100, help="concurrent connections (default 100)")
    p.add_argument("--words", type=positive_int, default=WORDS,
                   help=f"words per connection, 50-150 ms apart (default {WORDS})")
    p.add_argument("--backlog", type=positive_int, default=BACKLOG, help=f"the server's accept queue (default {BACKLOG})")
    p.add_argument("--open-files", type=positive_int, metavar="N",
                   help="set this process's ulimit -n to N first (to reproduce source 004's crash); "
                   "default: raise it as far as the connections need")
    p.add_argument("--stack-kib", type=positive_int, help="threads: each thread's stack size (default: ulimit -s)")
    p.add_argument("--timeout", type=float, default=TIMEOUT_S,
                   help=f"give up after this many seconds (default {TIMEOUT_S:g})")
    p.add_argument("--serve", action="store_true", help="only run the word server, until Ctrl-C")
    p.add_argument("--port", type=int, default=0, help="--serve: the port (default 0: a free one, printed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    def run(args: argparse.Namespace) -> int:
        if args.serve:
            from iolab.topics.event_loop import server  # imports uvloop: only the server needs it

            return server.run(WordServer(args.words, args.backlog, args.port))
        try:
            spec = Measurement(args.model, args.connections, args.words, args.backlog, args.open_files,
                               args.stack_kib, args.timeout)
        except ValueError as exc:  # a setting that does not apply to this version
            p.error(str(exc))
        result = measure_here(spec)
        if result is None:
            print("stopped by a signal", file=sys.stderr)
            return 1
        if "error" in result:
            print(json.dumps(result) if args.json else f"{args.model} failed: {result['error']}")
            return 1
        if args.json:
            print(json.dumps(result))
            return 0
        for rank, (word, count) in enumerate(result["top10"], 1):
            print(f"{rank:2d}. {word:<10} {count:>8,d}")
        print(f"{args.model}, {args.connections:,d} connections, {result['words']:,d} words: "
              f"{result['seconds']:.2f} s, peak RSS {result['peak_rss_mb']:.1f} MB, CPU {result['cpu_s']:.2f} s")
        return 0

    p.set_defaults(run=run)
