"""``python -m iolab``: see :mod:`iolab.commands`."""

import sys

from iolab.commands import main

if __name__ == "__main__":
    sys.exit(main())
