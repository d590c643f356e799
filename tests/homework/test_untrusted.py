"""Reading a file whose kind a submission chose: a regular file within its limit, or a refusal that says why.

The FIFO tests carry a timeout: the hang they guard against would otherwise hang the test run.
"""

from __future__ import annotations

import os
import socket
import stat

import pytest

from iolab.homework import untrusted


def test_a_regular_file_is_read_whole_up_to_its_limit(tmp_path):
    path = tmp_path / "hw.ipynb"
    path.write_bytes(b"x" * 100)
    assert untrusted.read(path, 100) == b"x" * 100


def test_a_file_one_byte_over_the_limit_is_refused_with_its_size(tmp_path):
    path = tmp_path / "hw.ipynb"
    path.write_bytes(b"x" * 101)
    with pytest.raises(untrusted.TooBig, match="101 bytes, over the limit of 100"):
        untrusted.read(path, 100)


def test_a_file_bigger_than_its_size_says_is_cut_one_byte_past_the_limit():
    # /proc files say 0 bytes and hold more: the same as a file that grows while it is read.
    with pytest.raises(untrusted.TooBig, match="grew while it was read"):
        untrusted.read("/proc/self/status", 10)


@pytest.mark.timeout(10)
def test_a_fifo_is_refused_without_waiting_for_a_writer(tmp_path):
    path = tmp_path / "hw.ipynb"
    os.mkfifo(path)
    with pytest.raises(untrusted.Refused, match="not a regular file: a FIFO"):
        untrusted.read(path, 100)


@pytest.mark.parametrize("target", ["/dev/zero", "other.ipynb", "missing.ipynb"])
def test_a_symbolic_link_is_refused_whatever_it_points_to(tmp_path, target):
    (tmp_path / "other.ipynb").write_text("{}")
    path = tmp_path / "hw.ipynb"
    path.symlink_to(target)
    with pytest.raises(untrusted.Refused, match="a symbolic link"):
        untrusted.read(path, 100)


def test_a_socket_a_folder_and_a_device_are_refused(tmp_path):
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "sock.ipynb"))
    (tmp_path / "dir.ipynb").mkdir()
    try:
        os.mknod(tmp_path / "null.ipynb", stat.S_IFCHR | 0o600, os.makedev(1, 3))
        device = [("null.ipynb", "a character device")]
    except PermissionError:  # no CAP_MKNOD here: the other kinds still run
        device = []
    try:
        for name, kind in [("sock.ipynb", "a socket"), ("dir.ipynb", "a folder"), *device]:
            with pytest.raises(untrusted.Refused, match=kind):
                untrusted.read(tmp_path / name, 100)
    finally:
        server.close()


def test_no_file_is_the_file_systems_error_not_a_refusal(tmp_path):
    with pytest.raises(FileNotFoundError):
        untrusted.read(tmp_path / "absent.ipynb", 100)
