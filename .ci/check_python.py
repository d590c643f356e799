"""Exit 1, saying what to do, if the Python that `make env` builds .venv from is older than the course needs.

Run by the system's python3 before any environment exists, so it is kept to what any Python 3 parses
(no f-strings).
"""

import platform
import sys

NEEDED = (3, 11)  # pyproject.toml's requires-python

if sys.version_info < NEEDED:
    print("Python %d.%d+ is needed (found: Python %s). Set PYTHON=python%d.%d or newer."
          % (NEEDED + (platform.python_version(),) + NEEDED))
    sys.exit(1)
