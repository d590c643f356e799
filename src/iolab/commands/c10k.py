"""``python -m iolab sleepers``: run N sleepers of one runtime in a child process and report what it cost."""

from __future__ import annotations

import argparse
import json

from iolab.commands.argtypes import non_negative_int, seconds_between
from iolab.commands.table import Subparsers


def add_sleepers(sub: Subparsers) -> None:
    p = sub.add_parser(
        "sleepers",
        help="N concurrent sleepers in threads, asyncio, trio, Go or Node.js: wall time, memory, OS threads",
        description=(
            "Start COUNT sleepers of one runtime in a child process, watch it through /proc, and report its "
            "wall time, peak memory and OS threads; if it fails, the limit it met (vm.max_map_count, "
            "kernel.pid_max, ulimit -u, memory...). Modes pipe/socket block each sleeper in a read instead."
        ),
    )
    # Written out, not read from iolab.topics.c10k.runtimes, whose programs (and hashlib, tempfile) would add
    # about 13 ms to the 100 that `--help` spends importing; tests/commands/test_c10k.py holds it to RUNTIMES.
    p.add_argument("--runtime", required=True, choices=["threads", "asyncio", "trio", "go", "node", "ruby"])
    p.add_argument("--count", type=non_negative_int, default=10_000, help="sleepers (default 10,000)")
    p.add_argument("--seconds", type=seconds_between(0, 3600), default=10.0, help="how long each sleeps (default 10)")
    p.add_argument("--mode", choices=["sleep", "pipe", "socket", "fed"], default="sleep",
                   help="sleep (default), or block each in a read of a pipe / a socket that never gets data, "
                        "or (node) read a pipe kept full, as source 003's `yes | node` did")
    p.add_argument("--no-gc", action="store_true",
                   help="threads, asyncio, trio: switch CPython's cyclic garbage collector off (gc.disable())")
    p.add_argument("--timeout", type=float, help="stop the program after this many seconds (default: generous)")
    p.add_argument("--json", action="store_true", help="print one JSON object")

    def run(args: argparse.Namespace) -> int:
        from iolab.kit.machine import DescriptorLimit
        from iolab.topics.c10k.runner import run as run_sleepers

        try:
            result = run_sleepers(
                args.runtime, args.count, args.seconds, mode=args.mode, timeout_s=args.timeout, gc=not args.no_gc
            )
        except (ValueError, DescriptorLimit) as exc:  # a bad combination, said in one line
            p.error(str(exc))
        summary = result.summary()
        phases = None
        if result.marks and result.status == "completed":  # the asyncio program's sleep mode
            from iolab.topics.c10k.phases import breakdown

            phases = breakdown(result)
        if args.json:
            if phases is not None:
                summary["phases"] = phases[["phase", "seconds", "collector_s"]].round(4).to_dict("records")
            print(json.dumps(summary))
        else:
            width = max(map(len, summary))
            for key, value in summary.items():
                shown = f"{value:,.2f}" if isinstance(value, float) else value
                print(f"{key:>{width}}  {shown}")
            if phases is not None:
                print("\nwhere the wall time went (the last sleeper's path):")
                print(phases.round(3).to_string(index=False))
        return 0 if result.status in ("completed", "held", "skipped") else 1

    p.set_defaults(run=run)
