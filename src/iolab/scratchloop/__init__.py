"""An event loop from scratch, built in the steps of chapter 5; each step is a module of its own.

1. ``callbacks``: callbacks on a selector;
2. ``coroutines``: generators as coroutines, resumed with ``send``;
3. ``future``: a Future (source 004's Promise);
4. ``task``: a Task that steps a coroutine when the future it waits on is done;
5. ``nesting``: coroutines calling coroutines, with ``yield from`` and then ``async def``/``await``;
6. ``timers``: a timer heap, for ``sleep``;
7. ``loop``: the whole loop, with a ready queue and a trace of task switches (``trace`` draws it).

This file only re-exports the final loop's public names.
"""

from iolab.scratchloop.future import Future
from iolab.scratchloop.loop import EventLoop, Semaphore, Switch, Task, gather, run

__all__ = ["EventLoop", "Future", "Semaphore", "Switch", "Task", "gather", "run"]
