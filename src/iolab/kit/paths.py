"""Where the course's files are: the repository's ``data/`` folder, found from this file's place."""

from pathlib import Path

# src/iolab/kit/paths.py -> the repository's root is three folders up from this one.
COURSE_DATA = Path(__file__).resolve().parents[3] / "data"
