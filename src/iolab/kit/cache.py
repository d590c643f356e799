"""The kit's folder for build caches and scratch files, outside the course's repository."""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """The kit's folder for build caches and scratch files: ``$XDG_CACHE_HOME/iolab`` (``~/.cache/iolab``).

    Outside the course's repository on purpose: Go's build cache and the slow stream's file must
    not land in the reader's working tree, and the stream must be on a real disk (not tmpfs).
    """
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    folder = Path(base) / "iolab"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
