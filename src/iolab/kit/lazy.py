"""Re-exports imported on first use (PEP 562), for packages whose own processes import them too.

A server or sleepers program started by a notebook imports its package first; if the package's
``__init__`` imported everything a notebook uses (pandas, numpy), every program would pay for it at
every start, inside the time being measured.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(package: str, exports: dict[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``package.<module>`` when ``exports`` maps a name used to it."""

    def __getattr__(name: str) -> Any:
        if name not in exports:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{exports[name]}"), name)

    return __getattr__
