"""Chapter 13's servers in C (``c/epoll.c``, ``c/uring.c``), built on first use with the system's C compiler.

They answer as the Python servers do (the same bytes, 400 and close on a malformed request) and count
their own system calls the same way, so that the Python servers' cost per request can be split into
what the way of waiting costs and what Python costs. A program is built into the kit's cache folder
(:func:`iolab.kit.cache.cache_dir`) under a name that carries its sources' hash: editing a source
builds it again, and an unchanged one is built once. Without a C compiler :func:`missing` says so, and
the chapter leaves the C rows out with that note, as it does fio's.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from iolab.kit import platforms
from iolab.kit.cache import cache_dir

SOURCES = Path(__file__).with_name("c")
COMPILERS = ("cc", "gcc", "clang")
FLAGS = ("-std=c11", "-O2", "-Wall", "-Wextra", "-Werror")
BUILD_SECONDS = 60.0  # a small file builds in well under a second; this only catches a hung compiler


class BuildFailed(RuntimeError):
    """The C compiler refused a program: the message quotes what it said."""


def compiler() -> str | None:
    """The path of the system's C compiler (``cc``, else ``gcc``, else ``clang``), or None."""
    return next((found for name in COMPILERS if (found := shutil.which(name))), None)


def missing() -> str | None:
    """Why the C servers cannot be built here, or None."""
    if (elsewhere := platforms.missing("epoll")) is not None:  # both include Linux's headers (epoll, io_uring)
        return elsewhere
    if compiler() is None:
        return ("no C compiler (cc, gcc or clang) is on PATH (apt install gcc):"
                " the servers in C are left out")
    return None


def _hash(program: str) -> str:
    digest = hashlib.sha256()
    for source in (SOURCES / f"{program}.c", SOURCES / "tiny_http.h"):
        digest.update(source.read_bytes())
    digest.update(" ".join(FLAGS).encode())
    return digest.hexdigest()[:16]


def binary(program: str) -> Path:
    """The built program ``program`` ("epoll", "uring"), built now if its sources changed or it was never built."""
    cc = compiler()
    if (reason := missing()) is not None or cc is None:
        raise BuildFailed(reason)
    target = cache_dir() / "c" / f"{program}-{_hash(program)}"
    if target.exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f"{target.name}.{os.getpid()}.part")  # two builds at once each write their own
    done = subprocess.run([cc, *FLAGS, "-o", str(partial), str(SOURCES / f"{program}.c")],
                          capture_output=True, text=True, timeout=BUILD_SECONDS, check=False)
    if done.returncode != 0:
        partial.unlink(missing_ok=True)
        raise BuildFailed(f"{cc} could not build {program}.c:\n{done.stderr.strip()}")
    partial.replace(target)
    return target
