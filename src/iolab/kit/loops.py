"""The event loops an asyncio program can run on, by name: the standard one and uvloop.

Each name maps to a ``loop_factory`` for ``asyncio.Runner`` (None: the standard loop). The kit's
asyncio server and :mod:`iolab.kit.runners` both choose from this table. It is a module of its own so
that a server process imports uvloop without the runners' trio.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import uvloop

LOOPS: dict[str, Callable[[], asyncio.AbstractEventLoop] | None] = {"asyncio": None, "uvloop": uvloop.new_event_loop}
