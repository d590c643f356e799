"""``python -m iolab netlab up|status|down``: chapter 12's network between two namespaces."""

from __future__ import annotations

import argparse
from typing import Any

from iolab.commands.table import Subparsers, add_action, print_table


def add_netlab(sub: Subparsers) -> None:
    """Register ``python -m iolab netlab`` and its actions."""
    p = sub.add_parser("netlab", help="a server and a client namespace joined by a slow, lossy link (root)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")
    for add in (add_up, add_status, add_down):
        add(actions)


def add_up(actions: Subparsers) -> None:
    up = add_action(actions, "up", run_up, help="create a lab and keep it until Ctrl-C",
                    description="Create a lab and keep it until Ctrl-C; run commands in it with ip netns exec.")
    up.add_argument("--delay-ms", type=float, default=0.0, help="one-way delay in ms (RTT is twice it; default 0)")
    up.add_argument("--jitter-ms", type=float, default=0.0, help="random delay variation, +-ms, order kept (default 0)")
    up.add_argument("--loss", type=float, default=0.0, help="probability of a drop per packet and direction (default 0)")
    up.add_argument("--rate-mbit", type=float, help="bandwidth of each direction in Mbit/s (default: no limit)")
    up.add_argument("--queue", type=int, default=1000, help="packets that may wait for a rate-limited link (default 1000)")
    up.add_argument("--seed", type=int, help="make the drops and the jitter repeatable")


def run_up(args: argparse.Namespace) -> int:
    import sys

    from iolab.netlab import Impairments, available

    settings = dict(delay_ms=args.delay_ms, jitter_ms=args.jitter_ms, loss=args.loss, rate_mbit=args.rate_mbit,
                    queue_packets=args.queue)
    try:
        Impairments(**settings)
    except ValueError as exc:
        args.parser.error(str(exc))
    missing = available()
    if missing:
        print(missing, file=sys.stderr)
        return 1
    _keep_lab(settings, args.seed)
    return 0


def _keep_lab(settings: dict[str, Any], seed: int | None) -> None:
    """Make a lab with the link ``settings``, say how to use it, and keep it until a signal ends it."""
    import signal

    from iolab.netlab import open_netlab

    # A closed terminal or a kill ends the lab as Ctrl-C does: through the ``with``, which cleans up.
    # SIGINT too: a program started with SIGINT ignored (a background job of a script, some test
    # runners' children) inherits that, and Python then leaves Ctrl-C ignored.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.default_int_handler)
    try:
        with open_netlab(**settings, seed=seed) as lab:
            print(f"server namespace {lab.server_ns}, address {lab.server_ip}")
            print(f"client namespace {lab.client_ns}, address {lab.client_ip}")
            print(f"link, each way: {settings}")
            print(f"run a server:  ip netns exec {lab.server_ns} COMMAND  (listening on {lab.server_ip} or 0.0.0.0)")
            print(f"run a client:  ip netns exec {lab.client_ns} COMMAND  (connecting to {lab.server_ip})")
            print("Ctrl-C removes the lab and everything running in it", flush=True)
            while True:
                signal.pause()
    except KeyboardInterrupt:
        print("lab removed")


def add_status(actions: Subparsers) -> None:
    status = add_action(actions, "status", run_status, help="list the labs' namespaces and whether their creator lives",
                        description="List the labs' namespaces and whether the process that made each lives.")
    status.add_argument("--json", action="store_true", help="print JSON")


def run_status(args: argparse.Namespace) -> int:
    import pandas as pd

    from iolab.netlab import namespaces

    rows = [{"namespace": name, "creator": namespaces.creator(name),
             "creator_alive": namespaces.alive(namespaces.creator(name) or 0),
             "processes": len(namespaces.pids(name))} for name in namespaces.list_namespaces()]
    if not rows and not args.json:
        print("no lab namespaces")
        return 0
    print_table(pd.DataFrame(rows, columns=["namespace", "creator", "creator_alive", "processes"]), args.json)
    return 0


def add_down(actions: Subparsers) -> None:
    add_action(actions, "down", run_down, help="remove the namespaces of labs whose creator is dead",
               description="Remove the namespaces, and what runs in them, of labs whose creator is dead.")


def run_down(args: argparse.Namespace) -> int:
    from iolab.netlab import cleanup_leftovers

    removed = cleanup_leftovers()
    print("\n".join(f"removed {name}" for name in removed) or "nothing to remove")
    return 0
