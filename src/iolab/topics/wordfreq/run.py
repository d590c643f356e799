"""Run the word-frequency experiment: start the word server, run one client version, measure it.

- :func:`run_client` runs a version *in this process* and measures it (run time, CPU, peak memory);
  ``python -m iolab wordfreq`` calls it, so that each measurement is one fresh process.
- :func:`measure` runs that command as a child process and returns its JSON; :func:`sweep` runs it
  over versions and connection counts and returns a tidy DataFrame.
"""

from __future__ import annotations

import contextlib
import errno
import importlib
import json
import os
import resource
import time
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from iolab.kit import procfs, procs
from iolab.kit.sockets import BACKLOG, LISTENING_PATTERN
from iolab.servers import START_SECONDS
from iolab.topics.wordfreq.counting import TopWords
from iolab.topics.wordfreq.limits import descriptor_limit

if TYPE_CHECKING:
    import pandas as pd

# The client versions and the module of each; a module is imported only to run its version.
CLIENTS = {
    "threads": "iolab.topics.wordfreq.threads",
    "scratch": "iolab.topics.wordfreq.scratchloop",
    "asyncio": "iolab.topics.wordfreq.asyncio",
    "trio": "iolab.topics.wordfreq.trio",
}
WORDS = 20  # words per connection, each followed by a 50-150 ms wait: about 2 s of waiting
TIMEOUT_S = 300.0  # a run longer than this is stuck, not slow


def _memory_mb() -> tuple[float, float]:
    """This process's resident memory now and its peak so far, in MB (from /proc/self/status)."""
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
            raise descriptor_limit(connections, len(connected_at), error) from error
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


def server_argv(words: int = WORDS, backlog: int = BACKLOG, port: int = 0) -> list[str]:
    """The command line of the word server."""
    return procs.python_argv("-m", "iolab", "wordfreq", "--serve", "--words", str(words),
                             "--backlog", str(backlog), "--port", str(port))


@contextlib.contextmanager
def open_word_server(words: int = WORDS, backlog: int = BACKLOG) -> Iterator[int]:
    """Start the word server and wait until it listens; its port. Leaving the block stops it."""
    with procs.open_process(server_argv(words, backlog)) as process:
        yield int(process.wait_for_line(LISTENING_PATTERN, timeout=START_SECONDS)[1])


def client_argv(model: str, connections: int, words: int = WORDS, *, backlog: int | None = None,
                open_files: int | None = None, stack_kib: int | None = None, timeout: float = TIMEOUT_S) -> list[str]:
    """The command line ``python -m iolab wordfreq ... --json`` for these settings."""
    argv = procs.python_argv("-m", "iolab", "wordfreq", "--model", model, "--connections", str(connections),
                             "--words", str(words), "--timeout", str(timeout), "--json")
    for flag, value in (("--backlog", backlog), ("--open-files", open_files), ("--stack-kib", stack_kib)):
        if value is not None:
            argv += [flag, str(value)]
    return argv


def measure(model: str, connections: int, words: int = WORDS, **options: Any) -> dict[str, Any]:
    """Run one client version in a fresh process (with its own server); its JSON, or ``{"error": ...}`` if it failed."""
    timeout = options.get("timeout", TIMEOUT_S)
    with procs.open_process(client_argv(model, connections, words, **options)) as process:
        code = process.wait(timeout + 2 * START_SECONDS)
        lines = list(process.lines)
    for line in reversed(lines):
        if line.startswith("{"):
            return json.loads(line)
    return {"model": model, "connections": connections, "error": f"exit code {code}: " + "\n".join(lines[-5:])}


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
