"""A child process's channel to its parent: a typed spec in, progress and one JSON result out.

This is the kit's one way across a process boundary. A child's whole input is a :class:`Spec`: a
frozen dataclass that names the module ``python -m`` runs (``ENTRY``). The parent starts it with
:func:`open_child`, which runs ``python -m ENTRY SPEC_JSON``; the child's ``__main__`` is
``child_main(TheSpec, run)``, which builds the spec back from ``argv[1]`` (a field of the wrong type is
an error that names it) and calls ``run(spec)``. The child prints, on its standard output:

- ``READY``, if it should start on a signal (:func:`send_ready`); it then waits for
  :data:`START_SIGNAL`, which the parent sends to all its children at once (:meth:`Child.start`),
  so that N children start together rather than one Python start-up apart;
- ``TICK n1 n2 ...`` from time to time: whole numbers for a progress bar (:func:`send_progress`);
- ``RESULT {json}`` once, at the end (:func:`send_result`; ``child_main`` sends what ``run`` returns);
- ``listening on http://HOST:PORT`` (:data:`~iolab.kit.sockets.LISTENING`), if it serves: the parent's
  :meth:`Child.wait_listening` gives back a :class:`Listening` (url, port, pid).

Standard output rather than a pipe of its own, as pyperf hands its workers (``pass_fds``): a kit
program's output is already read line by line by :class:`~iolab.kit.procs.ManagedProcess`, which
keeps the last lines, so a child that dies before its result becomes an error quoting what it
printed last, traceback included, in the order it printed it. One stream also needs no descriptor
handed down through whatever wraps the child (``ip netns exec``), and a line outside the protocol
(a warning) is skipped, not misread. The price: a child must print no line of its own that starts
with ``TICK `` or ``RESULT ``, and the kit's programs print nothing else there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, TypeVar

import dacite

from iolab.kit import netns
from iolab.kit.procs import START_SECONDS, ManagedProcess, open_process, python_argv
from iolab.kit.sockets import HOST, LISTENING_PATTERN

READY = "READY"
# SIGUSR1 is free: Python gives it no meaning, and neither do uvloop, trio or the shells.
START_SIGNAL = signal.SIGUSR1
REPORT_PATTERN = r"^(TICK|RESULT) (.*)$"

S = TypeVar("S", bound="Spec")
# JSON has lists, not tuples (a spec's sequences are tuples: frozen, hashable), and writes a float that
# happens to be whole, given as an int (duration_s=5), as 5. Any other mismatch is refused.
_STRICT = dacite.Config(cast=[tuple], strict=True, type_hooks={float: lambda v: float(v) if type(v) is int else v})


# --- the spec: what crosses -----------------------------------------------------------------------


class SpecError(ValueError):
    """A child's argument is not the spec it expects: the message names the field and what was wrong."""


class Spec:
    """A child's whole input: subclass it with a frozen dataclass and set ``ENTRY``, the module ``python -m`` runs.

    ``to_json`` writes the fields (nested dataclasses and tuples included) as one JSON argument;
    ``from_json`` builds the dataclass back, running its ``__post_init__`` checks, and raises
    :class:`SpecError` for a missing, unknown or wrongly typed field.
    """

    ENTRY: ClassVar[str]

    def to_json(self) -> str:
        """The spec as one JSON argument."""
        if not dataclasses.is_dataclass(self):
            raise TypeError(f"{type(self).__name__} is a Spec but not a dataclass")
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls: type[S], text: str) -> S:
        """The spec ``to_json`` wrote; :class:`SpecError` if ``text`` is not one."""
        try:
            raw = json.loads(text)
            if not isinstance(raw, dict):
                raise SpecError(f"a JSON object, not {type(raw).__name__}")
            return dacite.from_dict(cls, raw, config=_STRICT)
        # RecursionError: JSON nested deeper than Python's stack, which a hostile text can be.
        except (json.JSONDecodeError, dacite.DaciteError, TypeError, RecursionError) as error:
            raise SpecError(f"not a {cls.__name__}: {error}") from error

    @classmethod
    def from_argv(cls: type[S], argv: Sequence[str] | None = None) -> S:
        """The spec in ``argv[1]`` (``sys.argv`` by default), the one argument :func:`open_child` passes."""
        argv = sys.argv if argv is None else argv
        if len(argv) != 2:
            raise SpecError(f"usage: python -m {cls.ENTRY} '{cls.__name__} as JSON' (one argument, not {len(argv) - 1})")
        return cls.from_json(argv[1])


# --- the child's side ----------------------------------------------------------------------------


def send_ready() -> None:
    """Tell the parent this child is set up and waits for :data:`START_SIGNAL`."""
    print(READY, flush=True)


def send_progress(*numbers: int) -> None:
    """One ``TICK`` line: the numbers the parent's progress bar shows."""
    print("TICK " + " ".join(str(n) for n in numbers), flush=True)


def send_result(result: Mapping[str, Any]) -> None:
    """The one ``RESULT`` line: ``result`` as JSON."""
    print("RESULT " + json.dumps(dict(result)), flush=True)


def child_main(
    spec_type: type[S], run: Callable[[S], Mapping[str, Any] | int | None], argv: Sequence[str] | None = None
) -> None:
    """A child's ``__main__``: its spec from ``argv[1]``, then ``run(spec)``.

    What ``run`` returns decides the end: a mapping is sent as the RESULT line, an int is the exit
    code (a server's), None is a plain exit.
    """
    result = run(spec_type.from_argv(argv))
    if isinstance(result, int):
        sys.exit(result)
    if result is not None:
        send_result(result)


# --- the parent's side ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Listening:
    """Where a child that serves listens: its address, its port and its process id."""

    port: int
    pid: int
    host: str = HOST

    @property
    def url(self) -> str:
        """The base URL, e.g. ``http://127.0.0.1:41234``."""
        return f"http://{self.host}:{self.port}"


def wait_listening(process: ManagedProcess, timeout: float = START_SECONDS, host: str = HOST) -> Listening:
    """Wait for ``process`` (a kit child, or a Go or Node server) to print that it listens; where it does."""
    match = process.wait_for_line(LISTENING_PATTERN, timeout=timeout)
    return Listening(int(match[1]), process.pid, host)


class Child:
    """A child started by :func:`open_child`; ``result`` holds its result once it has come."""

    def __init__(self, process: ManagedProcess) -> None:
        self.process = process
        self.pid = process.pid
        self.result: dict[str, Any] | None = None

    def wait_ready(self, timeout: float = START_SECONDS) -> None:
        """Wait for the child's READY line (ProcessFailed if it exits first, ProcessTimeout if late)."""
        self.process.wait_for_line(f"^{READY}$", timeout=timeout)

    def wait_listening(self, timeout: float = START_SECONDS, host: str = HOST) -> Listening:
        """Wait for the child's ``listening on`` line; where it listens (ProcessFailed if it exits first)."""
        return wait_listening(self.process, timeout, host)

    def start(self) -> None:
        """Send the start signal to a child that said READY."""
        os.kill(self.pid, START_SIGNAL)

    def wait_progress(self, timeout: float) -> tuple[int, ...] | None:
        """The numbers of the child's next TICK line; None once its RESULT has come (see ``result``).

        ProcessTimeout if neither comes within ``timeout``; ProcessFailed, quoting the child's last
        output, if it exits first.
        """
        if self.result is not None:
            return None
        match = self.process.wait_for_line(REPORT_PATTERN, timeout=timeout)
        if match[1] == "RESULT":
            self.result = json.loads(match[2])
            return None
        return tuple(int(n) for n in match[2].split())

    def wait(self, timeout: float | None = None) -> int:
        """Wait for the child to exit; its exit code (ProcessTimeout if it does not)."""
        return self.process.wait(timeout)


@contextlib.contextmanager
def open_child(spec: Spec, *, namespace: str | None = None, env: dict[str, str] | None = None,
               pass_fds: Sequence[int] = ()) -> Iterator[Child]:
    """Run ``python -m spec.ENTRY`` with ``spec`` (inside network namespace ``namespace``, if given); leaving the block ends it.

    ``pass_fds``: descriptors the child inherits, e.g. the read end of a control pipe its spec names.
    """
    argv = netns.exec_argv(namespace, python_argv("-m", spec.ENTRY, spec.to_json()))
    with open_process(argv, env=env, pass_fds=pass_fds) as process:
        yield Child(process)
