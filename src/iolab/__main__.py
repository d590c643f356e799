"""``python -m iolab``: see :mod:`iolab.cli`."""

import sys

from iolab.cli import main

if __name__ == "__main__":
    sys.exit(main())
