"""Step 3: a Future (source 004's Promise): a result that is not there yet, and who to call when it is.

Source 004's Promise had a result and a list of callbacks. Two additions make it safe to use:

- a *done* state, so that a callback added after the result arrived still runs (the Promise's would
  never be called), and a second ``set_result`` is an error, not a silent overwrite;
- an exception slot, so that a failed wait (connection refused, too many open files) reaches the
  code that waited instead of vanishing inside a callback.

``__await__`` is what step 5 needs: it lets a coroutine write ``await future`` (or, with a
generator, ``yield from future``). Until then, ignore it.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any


class Future:
    """A result that will be set once, later; callbacks added with :meth:`add_done_callback` run then."""

    def __init__(self, label: str = "") -> None:
        self.label = label  # what the result is waited for, e.g. "readable fd 7": the trace shows it
        self._done = False
        self._result: Any = None
        self._exception: BaseException | None = None
        self._callbacks: list[Callable[[Future], None]] = []

    def done(self) -> bool:
        """True once a result or an exception is set."""
        return self._done

    def result(self) -> Any:
        """The result; raises the exception if one was set, RuntimeError if not done yet."""
        if not self._done:
            raise RuntimeError(f"future {self.label!r} has no result yet")
        if self._exception is not None:
            raise self._exception
        return self._result

    def add_done_callback(self, fn: Callable[[Future], None]) -> None:
        """Call ``fn(self)`` when done (at once if done already)."""
        if self._done:
            fn(self)
        else:
            self._callbacks.append(fn)

    def set_result(self, result: Any) -> None:
        """Store ``result`` and call the callbacks."""
        self._finish(result, None)

    def set_exception(self, exception: BaseException) -> None:
        """Store ``exception`` (raised by :meth:`result`) and call the callbacks."""
        self._finish(None, exception)

    def _finish(self, result: Any, exception: BaseException | None) -> None:
        if self._done:
            raise RuntimeError(f"future {self.label!r} is already done")
        self._done, self._result, self._exception = True, result, exception
        callbacks, self._callbacks = self._callbacks, []
        for fn in callbacks:
            fn(self)

    def __await__(self) -> Generator[Future, None, Any]:
        """Step 5: ``await future`` yields the future to the Task driving us, then returns its result."""
        if not self._done:
            yield self  # the Task sees this future and resumes us when it is done
        return self.result()

    __iter__ = __await__  # ``yield from future`` in a generator-based coroutine

    def __repr__(self) -> str:
        state = "done" if self._done else "pending"
        return f"<Future {self.label!r} {state}>"
