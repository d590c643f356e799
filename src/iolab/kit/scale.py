"""The one switch that sizes every experiment: ``IOLAB_SCALE=quick|full``.

``full`` (the default) is for readers: smooth figures in a few minutes at most. ``quick`` is for CI
and for a first look: every notebook under a minute on two cores, same code, fewer and shorter runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")
ENV = "IOLAB_SCALE"
SCALES = ("quick", "full")


@dataclass(frozen=True)
class Scale:
    """The chosen scale; ``pick`` chooses between a quick and a full value."""

    name: str

    def pick(self, quick: T, full: T) -> T:
        """``quick`` at quick scale, ``full`` at full scale."""
        return quick if self.name == "quick" else full

    @property
    def quick(self) -> bool:
        """True at quick scale."""
        return self.name == "quick"


def scale() -> Scale:
    """The scale named by ``IOLAB_SCALE`` (default ``full``); ValueError for any other name."""
    name = os.environ.get(ENV, "full").strip().lower() or "full"
    if name not in SCALES:
        raise ValueError(f"{ENV}={name!r}: use one of {', '.join(SCALES)}")
    return Scale(name)
