"""``python -m iolab COMMAND``: every instrument of the lab kit, from a terminal.

The top layer of the kit. A command parses its arguments, calls the layers below, which do the work,
and prints the result (a table by default, one JSON document with ``--json``). Heavy imports happen
inside each command's ``run``, so that ``--help`` is fast. Nothing in the kit imports this package
or starts ``python -m iolab COMMAND``: the processes the kit starts have entry points of their own
(``python -m iolab.servers``, ``python -m iolab.load.worker``).

A module per chapter's instruments or per group of tools, each with the ``add_*`` functions that
register its commands (``CHAPTERS`` lists them for ``--help``, by chapter, a row for every chapter of
``book/``):

- the chapters, in the order of the course: ``processes`` (``costs``, ``cow``, ``julia``),
  ``blocking_io`` (``readiness``), ``sockets`` (``backlog``), ``prefork`` (``balance``),
  ``event_loop`` (``wordfreq``), ``asyncio_trio`` (``looplag``), ``upstreams``, ``locks``,
  ``databases`` (``db``), ``c10k`` (``sleepers``), chapter 11's ``load`` and ``compare`` (in
  ``tools``), chapter 12's ``netlab`` and ``networks``, and chapter 13's ``completion``;
- the tools every chapter uses: ``servers`` (``serve``), ``attack`` (bad clients against a
  server), ``tools`` (``guard``, ``machine``, ``ps``, ``claims``) and ``homework``;
- what the commands share: ``argtypes`` (argument types that refuse a bad number with a reason) and
  ``table`` (the registry's type, and one way to print a table).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from iolab.commands.asyncio_trio import add_looplag
from iolab.commands.attack import add_attack
from iolab.commands.blocking_io import add_readiness
from iolab.commands.c10k import add_sleepers
from iolab.commands.completion import add_completion
from iolab.commands.databases import add_db
from iolab.commands.event_loop import add_wordfreq
from iolab.commands.homework import add_homework
from iolab.commands.load import add_load
from iolab.commands.locks import add_locks
from iolab.commands.netlab import add_netlab
from iolab.commands.networks import add_networks
from iolab.commands.prefork import add_balance
from iolab.commands.processes import add_costs, add_cow, add_julia
from iolab.commands.servers import add_serve
from iolab.commands.sockets import add_backlog
from iolab.commands.table import Subparsers
from iolab.commands.tools import add_claims, add_compare, add_guard, add_machine, add_ps
from iolab.commands.upstreams import add_upstreams

# The commands as ``--help`` lists them: the tools first, then each chapter's instruments in the
# order of the course.
CHAPTERS: list[tuple[str, list[Callable[[Subparsers], None]]]] = [
    ("tools: servers, bad clients, process checks, claims, homework", [add_serve, add_attack, add_guard, add_machine,
                                                                      add_ps, add_claims, add_homework]),
    ("1  processes and fork", [add_costs, add_cow, add_julia]),
    ("2  blocking and non-blocking I/O", [add_readiness]),
    ("3  sockets", [add_backlog]),
    ("4  pre-fork servers", [add_balance]),
    ("5  an event loop from scratch", [add_wordfreq]),
    ("6  asyncio and trio", [add_looplag]),
    ("7  threads vs async under upstream latency", [add_upstreams]),
    ("8  locking costs", [add_locks]),
    ("9  databases", [add_db]),
    ("10 the c10k shoot-out", [add_sleepers]),
    # Every chapter measures with these two; chapter 11 is where they are explained, so they are listed there.
    ("11 measuring servers", [add_load, add_compare]),
    ("12 slow clients and real networks", [add_netlab, add_networks]),
    ("13 completion-based I/O: io_uring", [add_completion]),
]


class _Listing:
    """Stands in for argparse's subparsers while commands register, to list them by chapter.

    argparse lists subcommands in one flat block; taking each one's ``help`` here (it becomes the
    command's own description) lets ``main`` print them under their chapters instead.
    """

    def __init__(self, sub: Subparsers) -> None:
        self.sub = sub
        self.helps: dict[str, str] = {}

    def add_parser(self, name: str, **kwargs: object) -> argparse.ArgumentParser:
        self.helps[name] = str(kwargs.pop("help", ""))
        kwargs.setdefault("description", self.helps[name])
        return self.sub.add_parser(name, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    """The ``python -m iolab`` parser, with every command registered and listed by chapter."""
    parser = argparse.ArgumentParser(prog="python -m iolab", description="The lab kit of the I/O course.",
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="one of the commands below; COMMAND --help for its options")
    lines = ["commands, by chapter:"]
    for heading, adders in CHAPTERS:
        listing = _Listing(sub)
        for add in adders:
            add(listing)  # type: ignore[arg-type]
        lines.append(f"  {heading}")
        lines += [f"    {name:<11} {help_}" for name, help_ in listing.helps.items()]
    parser.epilog = "\n".join(lines)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` and run the command; its exit code."""
    args = build_parser().parse_args(argv)
    try:
        return args.run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


__all__ = ["CHAPTERS", "build_parser", "main"]
