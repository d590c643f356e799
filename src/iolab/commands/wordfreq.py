"""``python -m iolab wordfreq``: source 004's word-frequency experiment from a terminal."""

from __future__ import annotations

import argparse
import json
import sys

from iolab.commands.argtypes import positive_int
from iolab.commands.table import Subparsers
from iolab.kit import sockets
from iolab.kit.sockets import BACKLOG

# Written out, not read from iolab.topics.wordfreq.run, so that building the command line imports nothing.
VERSIONS = ["threads", "scratch", "asyncio", "trio"]


def add_wordfreq(sub: Subparsers) -> None:
    p = sub.add_parser(
        "wordfreq",
        help="source 004's experiment: count words arriving over N connections, with threads or an event loop",
        description="Start the word server, read N connections to the end with one client version, and print "
        "the top-10 words, the run time, the peak memory and the CPU time of the client.",
    )
    p.add_argument("--model", choices=VERSIONS, default="scratch", help="the client version (default scratch)")
    p.add_argument("--connections", type=positive_int, default=100, help="concurrent connections (default 100)")
    p.add_argument("--words", type=positive_int, default=20, help="words per connection, 50-150 ms apart (default 20)")
    p.add_argument("--backlog", type=positive_int, default=BACKLOG, help=f"the server's accept queue (default {BACKLOG})")
    p.add_argument("--open-files", type=positive_int, metavar="N",
                   help="set this process's ulimit -n to N first (to reproduce source 004's crash); "
                   "default: raise it as far as the connections need")
    p.add_argument("--stack-kib", type=positive_int, help="threads: each thread's stack size (default: ulimit -s)")
    p.add_argument("--timeout", type=float, default=300.0, help="give up after this many seconds (default 300)")
    p.add_argument("--serve", action="store_true", help="only run the word server, until Ctrl-C")
    p.add_argument("--port", type=int, default=0, help="--serve: the port (default 0: a free one, printed)")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    def run(args: argparse.Namespace) -> int:
        import resource

        from iolab.kit.machine import DescriptorLimit
        from iolab.topics.wordfreq import limits
        from iolab.topics.wordfreq import run as wordfreq

        if args.serve:
            from iolab.topics.wordfreq.server import serve

            return serve(args.port, args.words, args.backlog)
        if args.stack_kib and args.model != "threads":
            p.error("--stack-kib applies to --model threads")
        if args.open_files:
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (args.open_files, hard))
        else:
            limits.raise_open_files(args.connections)
        result = None
        # SIGTERM raises Stop in here, so that leaving the block stops the server (in its own group).
        with sockets.stopped_by_signals():
            try:
                with wordfreq.open_word_server(args.words, args.backlog) as port:
                    result = wordfreq.run_client(args.model, port, args.connections, args.timeout, args.stack_kib)
            except (DescriptorLimit, RuntimeError, OSError, TimeoutError) as error:
                cause = error.__cause__ or error
                failure = {"model": args.model, "connections": args.connections, "error": str(error),
                           "cause": f"{type(cause).__name__}: {cause}"}
                print(json.dumps(failure) if args.json else f"{args.model} failed: {error}")
                return 1
        if result is None:
            print("stopped by a signal", file=sys.stderr)
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
