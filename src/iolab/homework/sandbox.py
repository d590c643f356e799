"""Where a submission runs: a bubblewrap sandbox that shows it the kit and nothing of the course's answers.

``bwrap`` (Debian's ``bubblewrap``, the sandbox Flatpak is built on) starts a program in new
namespaces. What the grader asks of it, and why:

- **files**: a new, empty root with the system (``/usr``), Python, the virtual environment, the
  kit's source and ``data/`` bound read-only; the submission's own scratch folder is the only
  place it can write (and ``/tmp``, a fresh ``tmpfs``). The instructor notebooks, other students'
  submissions, the grades and the private checks are simply not there;
- **processes** (``--unshare-pid``): the program is process 1's child in a PID namespace of its
  own; when the sandbox ends, the kernel kills every process left in it, double-forked daemons
  included, and none of them can see or signal a process outside;
- **network** (``--unshare-net``): a loopback of its own, so two submissions graded at once cannot
  collide on a port or reach each other's servers, and nothing leaves the machine;
- **user** (``--unshare-user``, uid 1000 inside): an unprivileged user, so PostgreSQL (which
  refuses root) starts as it does on a student's laptop, with no capability on the host;
- **environment** (``--clearenv``): only the variables the grader sets, none of the instructor's.

Without ``bwrap`` the grader refuses to grade (``SandboxMissing`` says what to install) unless told
``--no-sandbox``; then submissions run as the grader's user, which is only safe for trusted code.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Literal, Protocol

from iolab.homework.contract import SANDBOX_KINDS, SandboxKind

from iolab.kit.paths import data_dir

INSIDE_UID = 1000
INSTALL_HINT = ("install bubblewrap (Debian/Ubuntu: `apt install bubblewrap`; Fedora: `dnf install bubblewrap`), "
                "or pass --no-sandbox to grade trusted submissions without one")
# The few files of /etc that programs read (certificates, time zone, name resolution of localhost).
ETC_FILES = ("alternatives", "ssl", "ca-certificates", "localtime", "hosts", "nsswitch.conf", "host.conf",
             "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "mime.types", "fonts", "protocols", "services")


class SandboxMissing(RuntimeError):
    """bubblewrap is not installed, or cannot create namespaces here; the message says what to do."""


@cache
def bwrap() -> str | None:
    """The path of ``bwrap``, or None."""
    return shutil.which("bwrap")


@cache
def _probe(path: str) -> str | None:
    """Why ``bwrap`` at ``path`` cannot build a sandbox here, or None if it can (asked once per process).

    The probe makes what :class:`Sandbox` makes, a /proc and a /dev of its own included: in a container,
    bwrap can create the namespaces and still be refused the new /proc (podman and docker mask parts of it).
    """
    probe = subprocess.run([path, "--unshare-all", "--unshare-user", "--ro-bind", "/", "/", "--proc", "/proc",
                            "--dev", "/dev", "true"], capture_output=True, text=True, timeout=30)
    return probe.stderr.strip()[:200] if probe.returncode != 0 else None


def check() -> str:
    """The path of a working ``bwrap``; :class:`SandboxMissing` if there is none or it cannot run."""
    path = bwrap()
    if path is None:
        raise SandboxMissing(f"the grader runs each submission in a sandbox, and bwrap is not installed: {INSTALL_HINT}")
    failure = _probe(path)
    if failure is not None:
        where = ("in a container, run it with --security-opt unmask=ALL (podman) or --security-opt "
                 "systempaths=unconfined (docker); elsewhere, allow unprivileged user namespaces "
                 "(sysctl kernel.unprivileged_userns_clone=1) or run as root")
        raise SandboxMissing(f"bwrap cannot build its sandbox here ({failure}): {where}; or pass --no-sandbox "
                             "for trusted submissions")
    return path


def usable() -> str | None:
    """None if the bwrap sandbox works here; else why not, in words a test can skip with."""
    try:
        check()
    except SandboxMissing as missing:
        return str(missing)
    return None


def kit_source() -> Path:
    """The folder that holds the ``iolab`` package (``src/`` of the course): src/iolab/homework/sandbox.py, two up."""
    return Path(__file__).resolve().parents[2]


def readable_paths() -> list[Path]:
    """What a submission may read: the system, Python and its environment, the kit, the course's data."""
    paths = [Path("/usr"), Path(sys.base_prefix), Path(sys.prefix), kit_source(), data_dir()]
    paths += [Path("/etc") / name for name in ETC_FILES]
    paths += [Path("/sys")]  # CPU topology and frequencies, for machine.describe()
    return [p for p in paths if p.exists()]


@dataclass
class Sandbox:
    """A bwrap command line: ``wrap(argv)`` runs ``argv`` in it, writing only to ``scratch``.

    ``env`` is all the environment the program gets (HOME and TMPDIR point into ``scratch``/``/tmp``);
    ``extra`` folders are bound read-only beside the defaults. With ``nested_root`` the program runs as
    root of a user namespace nested inside the sandbox's (``unshare --map-root-user``), with network and
    mount namespaces of its own and ``/dev/net/tun``: what chapter 12's network lab needs, and root over
    nothing but namespaces that die with the sandbox. ``tmp_bytes`` caps each of its tmpfs mounts
    (``/tmp``, ``/dev/shm``, ``/run``; ``caps.Caps.tmp_bytes``), which are memory; None leaves them at the
    kernel's default, half the machine's memory.
    """

    scratch: Path
    env: Mapping[str, str] = field(default_factory=dict)
    extra: Sequence[Path] = ()
    nested_root: bool = False
    tmp_bytes: int | None = None

    def _binds(self) -> list[str]:
        args: list[str] = []
        for path in [*readable_paths(), *self.extra]:
            args += ["--ro-bind", str(path), str(path)]
            real = path.resolve()
            if real != path:  # a symlinked folder: bind its target as well, so the link resolves
                args += ["--ro-bind", str(real), str(real)]
        for link in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
            top = Path("/") / link
            if top.is_symlink():  # Debian's merged /usr: /bin -> usr/bin
                args += ["--symlink", os.readlink(top), str(top)]
            elif top.is_dir():
                args += ["--ro-bind", str(top), str(top)]
        if Path("/var/run").is_symlink():  # where `ip netns` keeps its names, on most systems
            args += ["--symlink", os.readlink("/var/run"), "/var/run"]
        return args

    def _identity(self) -> list[str]:
        """A passwd and group entry for the user inside (initdb looks itself up), written where the grader owns it."""
        etc = self.scratch.parent / f"{self.scratch.name}-etc"
        etc.mkdir(exist_ok=True)
        (etc / "passwd").write_text(f"root:x:0:0::/root:/bin/sh\nstudent:x:{INSIDE_UID}:{INSIDE_UID}::{self.scratch}:/bin/sh\n"
                                    "nobody:x:65534:65534::/nonexistent:/usr/sbin/nologin\n")
        (etc / "group").write_text(f"root:x:0:\nstudent:x:{INSIDE_UID}:\nnogroup:x:65534:\n")
        return ["--ro-bind", str(etc / "passwd"), "/etc/passwd", "--ro-bind", str(etc / "group"), "/etc/group"]

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run inside the sandbox."""
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "HOME": str(self.scratch), "TMPDIR": "/tmp",
               "LANG": "C.UTF-8", "USER": "student", "LOGNAME": "student", "MPLBACKEND": "Agg",
               "PYTHONPATH": str(kit_source())} | dict(self.env)
        setenv = [arg for key, value in env.items() for arg in ("--setenv", key, value)]
        size = ["--size", str(self.tmp_bytes)] if self.tmp_bytes else []
        nested = []
        if self.nested_root:
            tmpfs_size = f"-o size={self.tmp_bytes}" if self.tmp_bytes else ""
            nested = ["--dev-bind-try", "/dev/net/tun", "/dev/net/tun", "--",
                      shutil.which("unshare") or "unshare", "--user", "--map-root-user", "--mount",
                      "--net", "--propagation", "private",
                      # `ip netns add` bind-mounts below /run/netns, then returns to the namespace it
                      # started in: both must belong to the nested user namespace (a /run and a
                      # loopback of its own)
                      "sh", "-c", f'mount -t tmpfs {tmpfs_size} tmpfs /run && ip link set lo up && exec "$@"', "sh"]
        return [check(), "--unshare-all", "--unshare-user", "--uid", str(INSIDE_UID), "--gid", str(INSIDE_UID),
                "--die-with-parent", "--new-session", "--clearenv", *setenv,
                # The fresh /tmp first, then what is bound into the tree: a course cloned below /tmp
                # (as CI may do) must not be hidden by the sandbox's own /tmp.
                "--proc", "/proc", "--dev", "/dev", *size, "--tmpfs", "/dev/shm", *size, "--tmpfs", "/tmp",
                *size, "--tmpfs", "/run",
                *self._binds(), *self._identity(),
                "--bind", str(self.scratch), str(self.scratch), "--chdir", str(self.scratch),
                *nested, *argv]


NOBODY = 65534
# The checker's user where there is no bwrap: not the submission's, so that the kernel can neither read the
# checker's folder and open files through /proc/PID/cwd and /proc/PID/fd, nor signal or trace it.
CHECKER_UID = 65533
Role = Literal["kernel", "checker"]


@dataclass
class Unprivileged:
    """Where there is no bwrap but the grader is root (Gradescope's container): the program runs as another user.

    ``setpriv`` (util-linux) drops to ``uid`` (``nobody`` for the submission's kernel,
    :data:`CHECKER_UID` for the checker) with no capabilities and no way to regain them
    (``--no-new-privs``), and the environment is replaced by ``env``. ``scratch`` becomes that user's
    alone (mode 0700), and its parent folder, the grader's, can be crossed but not listed. The caller
    makes what the submission must not read (the instructor notebooks, the results) readable by root
    only. It shares the host's network and PID space: the container is the sandbox, and the two users
    keep the key and the checker out of the student's reach inside it.
    """

    scratch: Path
    env: Mapping[str, str] = field(default_factory=dict)
    uid: int = NOBODY

    def wrap(self, argv: Sequence[str]) -> list[str]:
        """``argv`` as run by ``uid`` (who is given ``scratch`` and what the grader wrote there)."""
        parent = self.scratch.parent
        if parent.stat().st_uid == os.geteuid():
            os.chmod(parent, 0o711)
        for path in [self.scratch, *self.scratch.rglob("*")]:
            os.chown(path, self.uid, self.uid, follow_symlinks=False)
        os.chmod(self.scratch, 0o700)
        env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(self.scratch), "LANG": "C.UTF-8",
               "MPLBACKEND": "Agg", "PYTHONPATH": str(kit_source())} | dict(self.env)
        return [shutil.which("setpriv") or "setpriv", f"--reuid={self.uid}", f"--regid={self.uid}", "--clear-groups",
                "--inh-caps=-all", "--bounding-set=-all", "--no-new-privs", "--pdeathsig=KILL",
                "env", "-i", *(f"{key}={value}" for key, value in env.items()), *argv]


KINDS = SANDBOX_KINDS


class Confinement(Protocol):
    """What the grader needs of a sandbox: the folder the program may write, its environment, and its command line."""

    scratch: Path
    env: Mapping[str, str]

    def wrap(self, argv: Sequence[str]) -> list[str]: ...


def confine(kind: SandboxKind, scratch: Path, env: Mapping[str, str] | None = None,
            nested_root: bool = False, role: Role = "kernel") -> Confinement | None:
    """The confinement called ``kind`` for the ``role`` (the submission's kernel, or the checker) writing to
    ``scratch``; None for ``"none"``.

    ``nested_root`` asks bwrap for a root of its own (see :class:`Sandbox`); the others ignore it. Each
    bwrap sandbox has namespaces of its own; without bwrap, kernel and checker run as different users.
    """
    if kind == "bwrap":
        return Sandbox(scratch, dict(env or {}), nested_root=nested_root)
    if kind == "nobody":
        return Unprivileged(scratch, dict(env or {}), uid=NOBODY if role == "kernel" else CHECKER_UID)
    if kind == "none":
        return None
    raise ValueError(f"no sandbox called {kind!r}: one of {', '.join(KINDS)}")
