"""Reading a file whose kind a submission chose: as data, never as a path to follow.

A student's notebook, and the answers file a submission's kernel writes, are files the student
controls. A FIFO makes ``open`` wait for a writer forever; a symbolic link to ``/dev/zero`` never
ends; one to a classmate's or the instructor's notebook reads *that* file, with the grader's rights.
:func:`read` takes only a regular file: checked with ``lstat`` before it is opened (so that no device
is ever opened), opened without following a link or waiting for a writer, checked again on the open
descriptor (the name may have been swapped in between), and read to at most one byte over its
limit, so that a file that grows while it is read is caught too.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

CHUNK = 1 << 20
KINDS = {stat.S_IFLNK: "a symbolic link (not followed)", stat.S_IFIFO: "a FIFO (named pipe)",
         stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFDIR: "a folder"}


class Refused(Exception):
    """A file that is not read: not a regular file, or over its limit; the message says which."""


class TooBig(Refused):
    """A regular file over its limit."""


def _check(info: os.stat_result, limit: int) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise Refused(f"not a regular file: {KINDS.get(stat.S_IFMT(info.st_mode), 'of an unknown kind')}")
    if info.st_size > limit:
        raise TooBig(f"{info.st_size:,} bytes, over the limit of {limit:,}")


def read(path: Path | str, limit: int) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    :class:`Refused` if it is anything else (a link, a FIFO, a device...), :class:`TooBig` if it is
    bigger; ``OSError`` if the file system says no (``FileNotFoundError`` for no file).
    """
    _check(os.lstat(path), limit)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # it became a link since lstat
            raise Refused(f"not a regular file: {KINDS[stat.S_IFLNK]}") from None
        raise
    try:
        _check(os.fstat(fd), limit)
        chunks, size = [], 0
        while size <= limit and (chunk := os.read(fd, min(CHUNK, limit + 1 - size))):
            chunks.append(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    if size > limit:
        raise TooBig(f"over the limit of {limit:,} bytes (it grew while it was read)")
    return b"".join(chunks)
