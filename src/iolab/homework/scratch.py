"""Scratch folders for the grader, removed without following a single link a submission left in them.

A submission writes what it likes into its scratch folder: symbolic links to the grader's files,
FIFOs, folders it made unreadable. ``tempfile.TemporaryDirectory`` before Python 3.11.8
(CVE-2023-6597) meets a permission error during its cleanup by chmod-ing the path, which follows
a link: a link left in the folder could make the grader chmod a file of the host.

:func:`remove_tree` walks with file descriptors instead. Each directory is opened relative to its
parent's descriptor with ``O_NOFOLLOW | O_DIRECTORY``, so that a name is never resolved through a
link; everything that is not a directory (links, FIFOs, sockets, devices) is unlinked, never
opened; a directory the grader cannot read or write is made so through its own descriptor, never
through its name. A mount point inside (a bind a sandbox left) is not crossed. The walk keeps its
own stack, not Python's, and at most ``WINDOW`` descriptors, so that thousands of nested folders
need neither a deep recursion nor a descriptor per level.
"""

from __future__ import annotations

import os
import re
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

FLAGS = os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # O_NONBLOCK: a FIFO swapped in never blocks
MOUNTINFO = Path("/proc/self/mountinfo")
OWNER_ALL = 0o700  # what the owner needs on a directory to list it and unlink in it
# Descriptors held at once down a deep tree: a submission can nest folders deeper than a process may
# hold descriptors (ulimit -n), so folders further up are closed and reopened through "..", checked
# to be the same inode.
WINDOW = 32


class NotRemoved(OSError):
    """Part of a tree could not be removed; ``left`` holds each path and why."""

    def __init__(self, left: list[tuple[Path, str]]) -> None:
        self.left = left
        super().__init__("not removed: " + "; ".join(f"{path} ({why})" for path, why in left))


class _Skip(Exception):
    """A directory not to enter, with why."""


@dataclass
class _Frame:
    """A directory being emptied: its descriptor, which inode it is, where it is, and what is left in it."""

    fd: int  # -1 while closed, deep in a tree, to save descriptors
    ident: tuple[int, int]  # (st_dev, st_ino), to know it again when reopened through ".."
    name: str
    path: str  # text, not a Path: joining Paths down thousands of levels costs more than removing them
    entries: list[tuple[str, bool]]  # (name, is a directory)


@contextmanager
def open_folder(prefix: str) -> Iterator[Path]:
    """A new private folder (``mkdtemp``), removed with :func:`remove_tree` when the block ends.

    A NotRemoved from the removal is raised from the block's end, as TemporaryDirectory's errors are.
    """
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        remove_tree(path)


def remove_tree(path: Path) -> None:
    """Remove ``path`` and all under it, following no link and crossing no mount; NotRemoved names what is left.

    Whatever can be removed is, before NotRemoved is raised. A ``path`` that does not exist is
    already removed; a ``path`` that is a link is unlinked, its target untouched.
    """
    path = Path(os.path.abspath(path))
    left: list[tuple[Path, str]] = []
    # The caller names the folder: links on the way to it are the caller's, only what is in it is suspect.
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        try:
            top = os.stat(path.name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(top.st_mode):
            os.unlink(path.name, dir_fd=parent)
            return
        real = os.path.join(os.path.realpath(path.parent), path.name)
        _remove_directory(parent, str(path), top.st_dev, _mounts_under(real), real, left)
    finally:
        os.close(parent)
    if left:
        raise NotRemoved(left)


def _mounts_under(root: str) -> frozenset[str]:
    """The mount points strictly under ``root``, as this process sees them (none when /proc is not mounted)."""
    try:
        lines = MOUNTINFO.read_text().splitlines()
    except OSError:
        return frozenset()
    # The fifth field is the mount point, with space, tab, newline and backslash as octal escapes.
    points = (re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4]) for line in lines)
    return frozenset(p for p in points if p.startswith(root.rstrip("/") + "/"))


def _remove_directory(parent: int, path: str, dev: int, mounts: frozenset[str], real: str,
                      left: list[tuple[Path, str]]) -> None:
    """Empty and remove the directory ``path`` (its last part in ``parent``), depth first, with a stack of our own.

    ``real`` is ``path`` with its parent's links resolved, to compare with the mount points.
    """
    top = _open_frame(parent, os.path.basename(path), path, dev, False, left)  # the top is never a mount to skip
    stack = [top] if top else []
    try:
        while stack:
            frame = stack[-1]
            if frame.entries:
                name, is_dir = frame.entries.pop()
                if not is_dir:
                    _unlink(frame, name, left)
                elif child := _open_frame(frame.fd, name, f"{frame.path}/{name}", dev,
                                          bool(mounts) and f"{real}{frame.path[len(path):]}/{name}" in mounts, left):
                    stack.append(child)
                    if len(stack) > WINDOW:
                        _close(stack[-WINDOW - 1])
                continue
            above = stack[-2] if len(stack) > 1 else None
            if above is not None and above.fd < 0:
                above.fd = _reopen_parent(frame.fd, above)
            stack.pop()
            _close(frame)
            try:
                os.rmdir(frame.name, dir_fd=above.fd if above else parent)
            except OSError as exc:
                if not any(Path(frame.path) in p.parents for p, _ in left):  # else it is full of what is left
                    left.append((Path(frame.path), exc.strerror or str(exc)))
    except _Skip as exc:  # a folder was moved during the walk: stop rather than follow it
        left.append((Path(stack[-2].path), str(exc)))  # the folder above the one emptied last
    finally:
        for frame in stack:
            _close(frame)


def _unlink(frame: _Frame, name: str, left: list[tuple[Path, str]]) -> None:
    """Unlink ``name`` (anything but a directory) in ``frame``'s directory, or say in ``left`` why not."""
    try:
        os.unlink(name, dir_fd=frame.fd)
    except FileNotFoundError:
        pass  # gone already, which is what was wanted
    except OSError as exc:
        left.append((Path(frame.path, name), exc.strerror or str(exc)))


def _close(frame: _Frame) -> None:
    """Close ``frame``'s descriptor if it is open."""
    if frame.fd >= 0:
        os.close(frame.fd)
        frame.fd = -1


def _reopen_parent(fd: int, frame: _Frame) -> int:
    """A descriptor of ``frame``'s directory, the parent of the directory ``fd``; _Skip if it is another one now."""
    try:
        up = os.open("..", os.O_RDONLY | FLAGS, dir_fd=fd)
    except OSError as exc:
        raise _Skip(f"cannot be reopened: {exc.strerror}") from None
    status = os.fstat(up)
    if (status.st_dev, status.st_ino) != frame.ident:
        os.close(up)
        raise _Skip("moved while being removed: not followed")
    return up


def _open_frame(parent: int, name: str, path: str, dev: int, mount: bool,
                left: list[tuple[Path, str]]) -> _Frame | None:
    """The directory ``name`` in ``parent``, opened and listed for emptying, or None with why in ``left``.

    ``mount``: ``path`` is a mount point this process knows of (a bind on the same device).
    """
    try:
        fd = _open_directory(parent, name, dev, mount)
    except FileNotFoundError:
        return None
    except (_Skip, OSError) as exc:
        left.append((Path(path), str(exc) if isinstance(exc, _Skip) else exc.strerror or str(exc)))
        return None
    try:
        status = os.fstat(fd)
        with os.scandir(fd) as entries:
            names = [(entry.name, entry.is_dir(follow_symlinks=False)) for entry in entries]
    except OSError as exc:
        os.close(fd)
        left.append((Path(path), exc.strerror or str(exc)))
        return None
    return _Frame(fd, (status.st_dev, status.st_ino), name, path, names)


def _open_directory(parent: int, name: str, dev: int, mount: bool) -> int:
    """A descriptor of the directory ``name`` in ``parent`` that its owner can list and unlink in.

    _Skip when it is a mount point (another device, or ``mount``) or was replaced while opening it.
    """
    try:
        fd: int | None = os.open(name, os.O_RDONLY | FLAGS, dir_fd=parent)
    except PermissionError:  # unreadable to us (0o000, 0o300): pin it with O_PATH, which needs no permission on it
        fd = None
    pinned = fd if fd is not None else os.open(name, os.O_PATH | FLAGS, dir_fd=parent)
    try:
        status = os.fstat(pinned)
        if status.st_dev != dev or mount:
            raise _Skip("a mount point: not crossed")
        if status.st_mode & OWNER_ALL != OWNER_ALL and status.st_uid == os.geteuid():
            if fd is not None:
                os.fchmod(fd, OWNER_ALL)
            else:
                # fchmod refuses an O_PATH descriptor (EBADF); its /proc link is the same inode, not a name.
                os.chmod(f"/proc/self/fd/{pinned}", OWNER_ALL)
        if fd is None:
            fd = os.open(name, os.O_RDONLY | FLAGS, dir_fd=parent)
            again = os.fstat(fd)
            if (again.st_dev, again.st_ino) != (status.st_dev, status.st_ino):
                raise _Skip("replaced while being removed")
        return fd
    except BaseException:
        if fd is not None:
            os.close(fd)
        raise
    finally:
        if pinned != fd:
            os.close(pinned)
