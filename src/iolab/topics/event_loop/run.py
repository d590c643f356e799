"""Run the word-frequency experiment: start the word server, run one client version, measure it.

- :class:`WordServer` and :class:`Measurement` describe the two processes of a run (the server, and
  a client version with its settings): each is a :class:`~iolab.kit.channel.Spec`, whose ``ENTRY`` is
  the child that runs it (``server``'s ``__main__``, and this package's).
- :func:`run_client` runs a version *in this process* and measures it (run time, CPU, peak memory);
  :func:`measure_here` adds the descriptor limit and a word server of its own around it.
- :func:`measure` runs a measurement as a fresh child process and returns its JSON; :func:`sweep`
  runs it over versions and connection counts and returns a tidy DataFrame; :func:`phases` splits each
  run into connecting and the rest.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import math
import os
import resource
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from iolab.kit import channel, platforms, procfs, procs, sockets
from iolab.kit.machine import DescriptorLimit
from iolab.kit.procs import START_SECONDS
from iolab.kit.sockets import BACKLOG
from iolab.topics.event_loop import limits
from iolab.topics.event_loop.counting import TopWords

if TYPE_CHECKING:
    import pandas as pd

# The client versions and the module of each; a module is imported only to run its version.
CLIENTS = {
    "threads": "iolab.topics.event_loop.threads",
    "scratch": "iolab.topics.event_loop.scratchloop",
    "asyncio": "iolab.topics.event_loop.asyncio",
    "trio": "iolab.topics.event_loop.trio",
}
WORDS = 20  # words per connection, each followed by a 50-150 ms wait: about 2 s of waiting
TIMEOUT_S = 300.0  # a run longer than this is stuck, not slow


@dataclass(frozen=True)
class WordServer(channel.Spec):
    """How to run the word server: words per connection, its accept queue, its port (0: a free one)."""

    ENTRY: ClassVar[str] = "iolab.topics.event_loop.server"

    words: int = WORDS
    backlog: int = BACKLOG
    port: int = 0


@dataclass(frozen=True)
class Measurement(channel.Spec):
    """One measured run: client version ``model`` over ``connections`` connections to a word server of its own."""

    ENTRY: ClassVar[str] = "iolab.topics.event_loop"  # this package's ``__main__``

    model: str
    connections: int
    words: int = WORDS
    backlog: int = BACKLOG  # the word server's accept queue
    open_files: int | None = None  # ulimit -n for the run (source 004's crash); None: raised as far as needed
    stack_kib: int | None = None  # threads: each thread's stack size (None: ulimit -s)
    timeout: float = TIMEOUT_S

    def __post_init__(self) -> None:
        if self.model not in CLIENTS:
            raise ValueError(f"unknown client version {self.model!r}; the versions are: {', '.join(CLIENTS)}")
        if self.stack_kib is not None and self.model != "threads":
            raise ValueError("a stack size (stack_kib, --stack-kib) applies to the threads version")


def _memory_mb() -> tuple[float, float]:
    """This process's resident memory now and its peak so far, in MB (from /proc/self/status); NaN without /proc.

    getrusage's ru_maxrss is no stand-in (see :func:`run_client`), so a run on macOS measures no memory.
    """
    if platforms.missing("procfs") is not None:
        return math.nan, math.nan
    reading = procfs.status(os.getpid())
    return reading.vm_rss_kb / 1024, reading.vm_hwm_kb / 1024


def _innermost(error: BaseException) -> BaseException:
    """The first leaf of an exception group (TaskGroup and nursery errors), else the error itself."""
    while isinstance(error, BaseExceptionGroup):
        error = error.exceptions[0]
    return error


def run_client(model: str, port: int, connections: int, timeout: float = TIMEOUT_S, stack_kib: int | None = None) -> dict[str, Any]:
    """Run client version ``model`` over ``connections`` connections to the word server on ``port``; what it measured."""
    if model not in CLIENTS:
        raise ValueError(f"unknown client version {model!r}; the versions are: {', '.join(CLIENTS)}")
    module = importlib.import_module(CLIENTS[model])
    extra = {"stack_kib": stack_kib} if model == "threads" else {}
    top = TopWords()
    connected_at: list[float] = []
    rss_before, _ = _memory_mb()
    before = resource.getrusage(resource.RUSAGE_SELF)
    start = time.perf_counter()
    try:
        module.count_words(port, connections, top, connected_at, timeout, **extra)
    except BaseException as raised:
        error = _innermost(raised)
        if isinstance(error, OSError) and error.errno == errno.EMFILE:
            raise limits.descriptor_limit(connections, len(connected_at), error) from error
        if error is not raised:
            raise error from raised
        raise
    seconds = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_SELF)
    return {
        "model": model,
        "connections": connections,
        "top10": top.ranked(),
        "words": top.words,
        "seconds": seconds,
        "connect_s": max(connected_at) - start,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        # VmHWM, not getrusage's ru_maxrss: Linux carries ru_maxrss over exec(), so a client started by
        # a 165 MB notebook kernel would report at least 165 MB.
        "peak_rss_mb": _memory_mb()[1],
        "rss_before_mb": rss_before,
    }


@contextlib.contextmanager
def open_word_server(words: int = WORDS, backlog: int = BACKLOG) -> Iterator[channel.Listening]:
    """Start the word server and wait until it listens; where (``.port``, ``.url``, ``.pid``). Leaving the block stops it."""
    with channel.open_child(WordServer(words, backlog)) as child:
        yield child.wait_listening(START_SECONDS)


def measure_here(spec: Measurement) -> dict[str, Any] | None:
    """Run ``spec`` in this process: set the descriptor limit, start a word server, run the client version.

    What :func:`run_client` measured; ``{"error": ..., "cause": ...}`` if the run failed (too few
    descriptors, a timeout...); None if SIGTERM or SIGINT stopped it.
    """
    if spec.open_files:
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        resource.setrlimit(resource.RLIMIT_NOFILE, (spec.open_files, hard))
    else:
        limits.raise_open_files(spec.connections)
    result = None
    # SIGTERM raises Stop in here, so that leaving the block stops the server (in its own group).
    with sockets.stopped_by_signals():
        try:
            with open_word_server(spec.words, spec.backlog) as server:
                result = run_client(spec.model, server.port, spec.connections, spec.timeout, spec.stack_kib)
        except (DescriptorLimit, RuntimeError, OSError, TimeoutError) as error:
            cause = error.__cause__ or error
            return {"model": spec.model, "connections": spec.connections, "error": str(error),
                    "cause": f"{type(cause).__name__}: {cause}"}
    return result


def measure(model: str, connections: int, words: int = WORDS, **options: Any) -> dict[str, Any]:
    """Run one client version in a fresh process (with its own server); its JSON, or ``{"error": ...}`` if it failed.

    ``options`` are the other fields of :class:`Measurement` (``open_files=300``, ``timeout=60``...).
    """
    spec = Measurement(model, connections, words, **options)
    with channel.open_child(spec) as child:
        code = child.wait(spec.timeout + 2 * START_SECONDS)
        # It has exited: its RESULT line, if it sent one, is already in the pipe's last lines.
        with contextlib.suppress(procs.ProcessFailed):
            child.wait_progress(START_SECONDS)
        if child.result is not None:
            return child.result
        return {"model": model, "connections": connections, "error": f"exit code {code}: {child.process.tail(5)}"}


def sweep(models: Sequence[str], counts: Iterable[int], words: int = WORDS, progress: bool = True,
          **options: Any) -> pd.DataFrame:
    """:func:`measure` every version at every connection count; one row per run (top10 as text)."""
    import pandas as pd
    from tqdm.auto import tqdm

    runs = [(n, model) for n in counts for model in models]
    rows = []
    for n, model in tqdm(runs, desc="wordfreq runs", disable=not progress):
        result = measure(model, n, words, **options)
        result["top10"] = " ".join(f"{w}:{c}" for w, c in result.get("top10", []))
        rows.append(result)
    return pd.DataFrame(rows)


def phases(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` with two columns more: ``after_s``, the run time after the last connection had its first word
    (``seconds - connect_s``), and ``kb_per_connection``, the memory the run added per connection.

    A run's time is connecting (up to 1,000 connections pending at once, each one a thread or a task)
    and then the words: splitting the two shows which one the versions differ in.
    """
    return runs.assign(after_s=runs.seconds - runs.connect_s,
                       kb_per_connection=(runs.peak_rss_mb - runs.rss_before_mb) * 1024 / runs.connections)
