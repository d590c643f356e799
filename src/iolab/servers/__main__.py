"""One server process: ``python -m iolab.servers OPTIONS_JSON``, what :func:`iolab.servers.open_server` starts.

The argument is an :class:`~iolab.servers.Options` as JSON (``Options.to_json``), as a load worker
takes its share (:mod:`iolab.load.worker`): the library starts its servers without going through
the command line, whose ``python -m iolab serve`` builds the same options and calls the same
:func:`~iolab.servers.run`.
"""

from __future__ import annotations

import sys

from iolab.servers import Options, run


def main(argv: list[str]) -> int:
    """Run the server described by ``argv[1]`` (an ``Options`` as JSON) until SIGTERM or SIGINT; the exit code."""
    return run(Options.from_json(argv[1]))


if __name__ == "__main__":
    sys.exit(main(sys.argv))
