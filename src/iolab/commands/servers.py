"""``python -m iolab serve MODEL``: run one server model from a terminal until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse

from iolab.commands.argtypes import positive_int
from iolab.commands.table import Subparsers
from iolab.kit.machine import raise_open_files_limit
from iolab.kit.sockets import BACKLOG, HOST, LAB_NETWORK, check_host


def seconds(text: str) -> float:
    """``text`` as a duration in seconds, above 0 (for timeouts)."""
    value = float(text)
    if not value > 0:  # also refuses nan
        raise argparse.ArgumentTypeError(f"{text} is not a positive number of seconds")
    return value


def add_serve(sub: Subparsers) -> None:
    p = sub.add_parser(
        "serve",
        help="run an HTTP server of one concurrency model on 127.0.0.1",
        description="Serve the course's app; the first line printed is 'listening on http://127.0.0.1:PORT'.",
    )
    # The names are written out here, not read from iolab.servers, so that building the command
    # line of every other command does not import the servers.
    p.add_argument("model", choices=["iterative", "threaded", "prefork", "asyncio", "uvloop", "trio", "scratch"])
    p.add_argument("--port", type=int, default=0, help="TCP port (default 0: a free one, printed)")
    p.add_argument("--host", default=HOST, metavar="ADDRESS",
                   help=f"the address to listen on: {HOST} (default), or inside a netlab's server namespace "
                        f"an address of {LAB_NETWORK} (chapter 12)")
    p.add_argument("--backlog", type=positive_int, default=BACKLOG, help=f"accept queue length (default {BACKLOG})")
    p.add_argument(
        "--workers",
        type=positive_int,
        help="prefork: processes (default: one per core); asyncio/uvloop: N processes, one loop each",
    )
    p.add_argument("--reuseport", action="store_true", help="prefork: a SO_REUSEPORT socket per worker")
    p.add_argument("--offload", action="store_true", help="asyncio/uvloop: compute Julia sets in a process pool")
    # Chapter 12: off by default, so that the earlier chapters' servers wait for ever, as they did.
    p.add_argument("--header-timeout", type=seconds, metavar="S",
                   help="a request begun must be complete within S seconds, or 408 and close")
    p.add_argument("--keepalive-timeout", type=seconds, metavar="S",
                   help="close a connection idle (no request begun) for S seconds")
    p.add_argument("--max-connections", type=positive_int, metavar="N",
                   help="threaded and event loops: close new connections at once beyond N per process")

    def run(args: argparse.Namespace) -> int:
        from iolab.servers import MODELS, Options

        model = MODELS[args.model]
        if args.workers is not None and not model.workers:
            p.error(f"--workers applies to {', '.join(m.name for m in MODELS.values() if m.workers)}, not {model.name}")
        if args.reuseport and model.name != "prefork":
            p.error("--reuseport applies to prefork (asyncio/uvloop with --workers always use it)")
        if args.offload and model.name not in ("asyncio", "uvloop"):
            p.error("--offload applies to asyncio and uvloop")
        if args.max_connections is not None and model.name in ("iterative", "prefork"):
            p.error(f"--max-connections does not apply to {model.name}: it serves one connection per process "
                    "(its cap is --workers; later clients wait in the backlog)")
        try:
            host = check_host(args.host)
        except ValueError as exc:
            p.error(str(exc))
        options = Options(model.name, args.port, args.backlog, args.workers, args.reuseport, args.offload,
                          args.header_timeout, args.keepalive_timeout, args.max_connections, host)
        # A server holding thousands of clients should meet its hard limit (ulimit -Hn), a limit the
        # chapters name, not a shell's soft default of often 1,024 that fails accept() with EMFILE.
        # Pre-forked children inherit the raised limit.
        raise_open_files_limit()
        return model.serve(options)

    p.set_defaults(run=run)
