"""``python -m iolab serve MODEL``: run one server model from a terminal until Ctrl-C or SIGTERM."""

from __future__ import annotations

import argparse
import dataclasses

from iolab.commands.argtypes import positive_int, seconds
from iolab.commands.table import Subparsers
from iolab.kit.sockets import BACKLOG, HOST, LAB_NETWORK
# The registry itself: importing it loads no server module (``Model.module`` is imported only to
# run one), so listing the models here keeps ``--help`` fast.
from iolab.servers import MODELS, Options, run


def add_serve(sub: Subparsers) -> None:
    p = sub.add_parser(
        "serve",
        help="run an HTTP server of one concurrency model on 127.0.0.1",
        description="Serve the course's app; the first line printed is 'listening on http://127.0.0.1:PORT'.",
    )
    p.add_argument("model", choices=list(MODELS))
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

    def serve(args: argparse.Namespace) -> int:
        try:
            # Each flag's destination is the name of an Options field: the command line is the options.
            options = Options(**{field.name: getattr(args, field.name) for field in dataclasses.fields(Options)})
        except ValueError as exc:  # a setting that does not apply to this model, or a host out of bounds
            p.error(str(exc))
        return run(options)

    p.set_defaults(run=serve)
