"""Scratch folders removed without following a link, opening a FIFO, recursing or crossing a mount.

Each removal runs in a forked child, so that a removal that hangs (on a FIFO, say) fails the test
instead of stalling it, and so that the child can drop to another user or to fewer descriptors.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iolab.homework import scratch

NOBODY = 65534
ROOT = os.geteuid() == 0
SRC = Path(scratch.__file__).resolve().parents[2]


def _remove_in_child(path: Path, uid: int | None = None, max_fds: int | None = None, timeout: float = 30) -> str:
    """remove_tree(path) in a forked child, as ``uid`` and with at most ``max_fds`` descriptors: '' or its error."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read)
            if max_fds is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (max_fds, max_fds))
            if uid is not None:
                os.setgroups([])
                os.setgid(uid)
                os.setuid(uid)
            scratch.remove_tree(path)
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the test as text
            os.write(write, f"{type(exc).__name__}: {exc}".encode()[:60_000])
            code = 1
        os._exit(code)
    os.close(write)
    deadline = time.monotonic() + timeout
    while os.waitpid(pid, os.WNOHANG) == (0, 0):
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            pytest.fail(f"remove_tree({path}) was still running after {timeout} s")
        time.sleep(0.01)
    with os.fdopen(read, "rb") as f:
        return f.read().decode()


def _chown_all(top: Path, uid: int) -> None:
    """``top`` and all under it owned by ``uid``, links themselves and not their targets (chown -R -h)."""
    subprocess.run(["chown", "-R", "-h", f"{uid}:{uid}", str(top)], check=True)


@pytest.fixture(params=["root", "user"])
def who(request: pytest.FixtureRequest) -> int | None:
    """The uid to remove as (None: this process's own): root, and a normal user (nobody, when the tests run as root)."""
    if request.param == "root":
        if not ROOT:
            pytest.skip("needs root")
        return None
    return NOBODY if ROOT else None


@pytest.fixture
def base() -> Iterator[Path]:
    """A folder in the system's temporary folder that user nobody can reach (pytest's tmp_path is 0o700 root's)."""
    path = Path(tempfile.mkdtemp(prefix="iolab-test-scratch-"))
    yield path
    # Not shutil.rmtree: it recurses, and the deep test's tree is deeper than Python allows.
    subprocess.run(["chmod", "-R", "u+rwX", str(path)], check=False)
    subprocess.run(["rm", "-rf", str(path)], check=True)


def _outside(base: Path) -> tuple[Path, Path]:
    """A read-only file and a read-only folder of two files, outside the tree: what a link may point at."""
    secret = base / "outside" / "secret"
    folder = base / "outside" / "folder"
    folder.mkdir(parents=True)
    secret.write_text("the host's")
    for name in ("a", "b"):
        (folder / name).write_text(name)
        (folder / name).chmod(0o444)
    secret.chmod(0o444)
    folder.chmod(0o555)
    return secret, folder


def _snapshot(*paths: Path) -> dict[str, tuple[int, str | None]]:
    """Mode and text of each path and what is in it: what a removal must leave as it was."""
    found = {}
    for path in paths:
        for p in [path, *(sorted(path.rglob("*")) if path.is_dir() else [])]:
            found[str(p)] = (p.stat().st_mode, p.read_text() if p.is_file() else None)
    return found


@pytest.mark.parametrize("locked", [0o000, 0o500])
def test_links_out_of_a_locked_folder_are_removed_and_their_targets_left_as_they_were(base, who, locked):
    secret, folder = _outside(base)
    tree = base / "tree"
    inside = tree / "locked"
    (inside / "deeper").mkdir(parents=True)
    (inside / "deeper" / "file").write_text("x")
    (inside / "to-file").symlink_to(secret)
    (inside / "to-folder").symlink_to(folder)
    (tree / "to-folder").symlink_to(folder)
    os.mkfifo(inside / "fifo")
    (inside / "deeper").chmod(locked)
    inside.chmod(locked)
    if who is not None:
        _chown_all(base, who)  # nobody owns the targets too: a chmod through a link would succeed
    before = _snapshot(secret, folder)
    assert _remove_in_child(tree, who) == ""
    assert not tree.exists() and not tree.is_symlink()
    assert _snapshot(secret, folder) == before


def test_the_old_cleanup_would_have_chmodded_the_target_so_the_test_above_can_fail(base):
    if sys.version_info >= (3, 11, 8) or not ROOT:
        pytest.skip("the CVE-2023-6597 cleanup is gone from this Python, or nobody is not there to run it as")
    secret, _ = _outside(base)
    inside = base / "tree" / "locked"
    inside.mkdir(parents=True)
    (inside / "to-file").symlink_to(secret)
    inside.chmod(0o500)
    _chown_all(base, NOBODY)
    pid = os.fork()
    if pid == 0:
        os.setgroups([])
        os.setgid(NOBODY)
        os.setuid(NOBODY)
        tempfile.TemporaryDirectory._rmtree(str(base / "tree"), ignore_errors=True)  # type: ignore[attr-defined]
        os._exit(0)
    os.waitpid(pid, 0)
    assert stat.S_IMODE(secret.stat().st_mode) != 0o444


def test_a_fifo_is_unlinked_without_being_opened(base, who):
    tree = base / "tree"
    tree.mkdir()
    os.mkfifo(tree / "fifo")
    os.mkfifo(base / "alone")
    if who is not None:
        _chown_all(base, who)
    assert _remove_in_child(tree, who, timeout=10) == ""
    assert _remove_in_child(base / "alone", who, timeout=10) == ""
    assert not tree.exists() and not (base / "alone").exists()


def test_a_tree_deeper_than_the_recursion_limit_and_the_descriptor_limit_is_removed(base, who):
    depth = sys.getrecursionlimit() + 500
    fd = os.open(base, os.O_RDONLY)
    os.mkdir("tree", dir_fd=fd)
    for level in range(depth):
        below = os.open("d" if level else "tree", os.O_RDONLY, dir_fd=fd)
        os.close(fd)
        fd = below
        os.mkdir("d", dir_fd=fd)
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, dir_fd=fd))
    os.close(fd)
    if who is not None:
        _chown_all(base, who)
    assert _remove_in_child(base / "tree", who, max_fds=128, timeout=60) == ""
    assert list(base.iterdir()) == []


@pytest.mark.skipif(not ROOT, reason="chown to another user needs root")
def test_a_folder_of_another_user_is_removed_by_root(base):
    tree = base / "tree"
    (tree / "theirs" / "inner").mkdir(parents=True)
    (tree / "theirs" / "inner" / "file").write_text("x")
    _chown_all(tree / "theirs", NOBODY)
    (tree / "theirs" / "inner").chmod(0o700)
    (tree / "theirs").chmod(0o700)
    assert _remove_in_child(tree) == ""
    assert not tree.exists()


@pytest.mark.skipif(not ROOT, reason="needs two users")
def test_what_cannot_be_removed_is_named_and_the_rest_is_removed(base):
    tree = base / "tree"
    (tree / "roots").mkdir(parents=True)
    (tree / "roots" / "file").write_text("x")
    (tree / "mine").mkdir()
    (tree / "mine" / "file").write_text("x")
    _chown_all(base, NOBODY)
    os.chown(tree / "roots", 0, 0)  # nobody cannot unlink in root's folder, nor chmod it
    error = _remove_in_child(tree, NOBODY)
    assert error.startswith("NotRemoved: not removed: ") and f"{tree / 'roots' / 'file'} (Permission denied)" in error
    assert sorted(str(p.relative_to(base)) for p in base.rglob("*")) == ["tree", "tree/roots", "tree/roots/file"]


MOUNTS = """
import json, os, subprocess, sys
from pathlib import Path
from iolab.homework import scratch
base = Path(sys.argv[1])
(base / "tree" / "tmpfs").mkdir(parents=True)
(base / "tree" / "bind").mkdir()
(base / "tree" / "plain").mkdir()
(base / "source").mkdir()
(base / "source" / "kept").write_text("bound in")
subprocess.run(["mount", "-t", "tmpfs", "none", str(base / "tree" / "tmpfs")], check=True)
(base / "tree" / "tmpfs" / "kept").write_text("on the tmpfs")
subprocess.run(["mount", "--bind", str(base / "source"), str(base / "tree" / "bind")], check=True)
try:
    scratch.remove_tree(base / "tree")
    error = None
except scratch.NotRemoved as exc:
    error = sorted((str(p.relative_to(base)), why) for p, why in exc.left)
print(json.dumps({"error": error, "left": sorted(str(p.relative_to(base)) for p in base.rglob("*"))}))
"""


@pytest.mark.skipif(not ROOT or shutil.which("unshare") is None, reason="mounts need root and unshare")
def test_a_mount_point_inside_is_not_crossed_and_is_named(base):
    done = subprocess.run(["unshare", "--mount", "--propagation", "private", sys.executable, "-c", MOUNTS, str(base)],
                          capture_output=True, text=True, env=os.environ | {"PYTHONPATH": str(SRC)}, timeout=60)
    if done.returncode != 0 and "mount" in done.stderr and "permission" in done.stderr.lower():
        pytest.skip(f"no mounts here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    seen = json.loads(done.stdout)
    assert seen["error"] == [["tree/bind", "a mount point: not crossed"], ["tree/tmpfs", "a mount point: not crossed"]]
    assert seen["left"] == ["source", "source/kept", "tree", "tree/bind", "tree/bind/kept", "tree/tmpfs",
                            "tree/tmpfs/kept"]


def test_open_folder_gives_a_new_folder_and_removes_it_and_its_links_only(base):
    secret, _ = _outside(base)
    with pytest.raises(RuntimeError, match="the body failed"), scratch.open_folder("iolab-test-") as folder:
        assert folder.is_dir() and folder.name.startswith("iolab-test-") and list(folder.iterdir()) == []
        (folder / "sub").mkdir()
        (folder / "sub" / "to-secret").symlink_to(secret)
        (folder / "sub").chmod(0o500)
        raise RuntimeError("the body failed")
    assert not folder.exists()
    assert secret.read_text() == "the host's" and stat.S_IMODE(secret.stat().st_mode) == 0o444


def test_a_missing_path_is_already_removed_and_a_link_is_unlinked_not_followed(base):
    secret, folder = _outside(base)
    scratch.remove_tree(base / "never-made")
    (base / "link").symlink_to(folder)
    before = _snapshot(folder)
    scratch.remove_tree(base / "link")
    assert not (base / "link").is_symlink() and _snapshot(folder) == before
