"""One server process: ``python -m iolab.servers OPTIONS_JSON``, what :func:`iolab.servers.open_server` starts.

The argument is an :class:`~iolab.servers.Options` (a :class:`~iolab.kit.channel.Spec`), as a load
worker takes its share (:mod:`iolab.load.worker`): the library starts its servers without going
through the command line, whose ``python -m iolab serve`` builds the same options and calls the same
:func:`~iolab.servers.run`.
"""

from __future__ import annotations

from iolab.kit import channel
from iolab.servers import Options, run

if __name__ == "__main__":
    channel.child_main(Options, run)
