import errno
import signal

import pytest

from iolab.topics.completion import support


def test_forcing_not_there_names_the_switch(monkeypatch):
    monkeypatch.setenv(support.FORCE_ENV, "1")
    for use in support.NEEDS:
        reason = support.unavailable(use)
        assert reason is not None and support.FORCE_ENV in reason
    with pytest.raises(support.Unavailable, match=support.FORCE_ENV):
        support.require("files")


def test_zero_does_not_force_not_there(monkeypatch):
    monkeypatch.setenv(support.FORCE_ENV, "0")
    monkeypatch.setattr(support, "_probe", lambda: {op: True for _, ops in support.NEEDS.values() for op in ops})
    monkeypatch.setattr(support, "kernel_version", lambda: (6, 18))
    assert support.unavailable("sockets") is None


def test_kernel_version_reads_distribution_suffixes():
    assert support.kernel_version("6.18.44-fc-v669") == (6, 18)
    assert support.kernel_version("5.4.0-150-generic") == (5, 4)
    assert support.kernel_version("6.1") == (6, 1)


def test_an_old_kernel_is_named_with_the_version_it_needs(monkeypatch):
    monkeypatch.delenv(support.FORCE_ENV, raising=False)
    monkeypatch.setattr(support, "kernel_version", lambda: (5, 15))
    assert support.unavailable("files") != support.unavailable("sockets")
    reason = support.unavailable("sockets")
    assert reason is not None and "5.15" in reason and "6.0" in reason


@pytest.mark.parametrize(("code", "setting", "words"), [
    (errno.EPERM, 2, "io_uring_disabled = 2"),
    (errno.EPERM, 1, "io_uring_group"),
    (errno.EPERM, 0, "seccomp"),
    (errno.ENOSYS, 0, "ENOSYS"),
])
def test_a_refused_setup_names_the_case(monkeypatch, code, setting, words):
    monkeypatch.setattr(support, "_sysctl_disabled", lambda: setting)
    assert words in support._setup_refused(OSError(code, "refused"))


def test_a_missing_binding_says_how_to_install_it(monkeypatch):
    import builtins

    real_import = builtins.__import__

    def no_liburing(name, *args, **kwargs):
        if name == "liburing":
            raise ImportError("No module named 'liburing'")
        return real_import(name, *args, **kwargs)

    monkeypatch.delenv(support.FORCE_ENV, raising=False)
    monkeypatch.setattr(builtins, "__import__", no_liburing)
    support._probe.cache_clear()
    try:
        reason = support.unavailable("files")
    finally:
        support._probe.cache_clear()
    assert reason is not None and "liburing" in reason and "make env" in reason


def test_a_lacking_operation_is_named(monkeypatch):
    monkeypatch.delenv(support.FORCE_ENV, raising=False)
    monkeypatch.setattr(support, "kernel_version", lambda: (6, 18))
    monkeypatch.setattr(support, "_probe", lambda: {"IORING_OP_READ": False})
    assert "IORING_OP_READ" in (support.unavailable("files") or "")


def test_the_probe_makes_its_ring_in_a_child_so_a_crashing_binding_is_a_reason_here(monkeypatch):
    monkeypatch.delenv(support.FORCE_ENV, raising=False)
    support._probe.cache_clear()
    try:
        probed = support._probe()  # on a processor the wheel's AVX-512 code kills, this process lives on
    finally:
        support._probe.cache_clear()
    assert isinstance(probed, str) or "IORING_OP_READ" in probed
    assert "SIGILL" in support._crashed(-signal.SIGILL) and "instruction this processor lacks" in support._crashed(-4)
    assert "exit code 1" in support._crashed(1)
