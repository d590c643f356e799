"""``python -m iolab guard|machine|ps``: the tools every chapter uses, not one chapter's instrument."""

from __future__ import annotations

import argparse
import json

from iolab.commands.table import Subparsers, print_table


def add_guard(sub: Subparsers) -> None:
    p = sub.add_parser("guard", help="run a command; fail if it leaves processes behind")
    p.add_argument("argv", nargs=argparse.REMAINDER, help="the command, after --")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.guard import run_guarded

        argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
        if not argv:
            p.error("give the command to run after --")
        return run_guarded(argv)

    p.set_defaults(run=run)


def add_machine(sub: Subparsers) -> None:
    p = sub.add_parser("machine", help="print this machine's fingerprint (CPU, cores, kernel, versions)")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit import machine

        print(json.dumps(machine.fingerprint(), indent=2))
        return 0

    p.set_defaults(run=run)


def add_ps(sub: Subparsers) -> None:
    p = sub.add_parser("ps", help="state, threads and memory of processes, read from /proc")
    p.add_argument("pids", nargs="+", type=int, metavar="PID")
    p.add_argument("--json", action="store_true", help="print JSON")

    def run(args: argparse.Namespace) -> int:
        from dataclasses import asdict

        import pandas as pd

        from iolab.kit import procfs

        rows = [asdict(procfs.status(pid)) | {"cpu_s": procfs.cpu_seconds(pid)} for pid in args.pids]
        print_table(pd.DataFrame(rows), args.json)
        return 0

    p.set_defaults(run=run)
