"""Where the course's files are: the repository's ``data/`` folder, or the one ``IOLAB_DATA`` names.

Every user of the data folder asks :func:`data_dir`. Modules that name a file in it once, at import
(``web.app.STATIC_DIR``), see ``IOLAB_DATA`` as it was when the process started.
"""

import os
from pathlib import Path

DATA_ENV = "IOLAB_DATA"
# src/iolab/kit/paths.py -> the repository's root is three folders up from this one.
COURSE_DATA = Path(__file__).resolve().parents[3] / "data"


def data_dir() -> Path:
    """The course's ``data/`` folder: ``IOLAB_DATA`` if set, else the repository's."""
    if env := os.environ.get(DATA_ENV):
        return Path(env)
    return COURSE_DATA
