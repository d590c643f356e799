"""``python -m iolab.topics.c10k.launch [--as-mb N] -- PROGRAM ...``: run a program under the runner's limits.

The runner puts this in front of every sleepers program. It makes the program the kernel's first
choice for the OOM killer, turns off core dumps (a crash of 20,000 threads would write a large one),
optionally caps the address space (``ulimit -v``, to meet a limit on purpose), then replaces itself
with the program: same process, same pid, so the runner watches the program itself.

Its start-up counts in every program's wall time, so it needs the standard library only, and the
runner starts it as a script (``python -I -S .../launch.py``) rather than as a module of ``iolab``.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
from pathlib import Path

# oom_score_adj of a sleepers program: 1000 makes it the OOM killer's first victim, before the
# notebook's kernel or anything else on the machine. Raising it needs no privilege.
OOM_FIRST = 1000


def launcher_argv(address_space_mb: float | None = None) -> list[str]:
    """The command line prefix that runs a program under these limits (end it with the program)."""
    # -I: isolated, so this file's folder (with its asyncio.py and trio.py) is not on sys.path; -S:
    # no site, as nothing outside the standard library is imported. Started as ``-m iolab...``, the
    # launcher imported the iolab package first and took about 30 ms on the course machine (issue
    # 18); this way about 10 ms, and every wall time is 20 ms shorter.
    argv = [sys.executable, "-I", "-S", str(Path(__file__).resolve())]
    if address_space_mb is not None:
        argv += ["--as-mb", str(address_space_mb)]
    return [*argv, "--"]


def main(argv: list[str] | None = None) -> None:
    """Apply the limits to this process, then replace it with the program."""
    parser = argparse.ArgumentParser(prog="python -m iolab.topics.c10k.launch", description=main.__doc__)
    parser.add_argument("--as-mb", type=float, help="cap the address space (ulimit -v), MiB")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("give the program to run after --")
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if args.as_mb is not None:
        cap = int(args.as_mb * 2**20)
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    Path("/proc/self/oom_score_adj").write_text(str(OOM_FIRST))
    os.execvp(program[0], program)


if __name__ == "__main__":
    main()
