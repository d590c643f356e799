import os
import shutil
from pathlib import Path

import pytest

from iolab.topics.completion import files, support

SIZE = 8 << 20  # 2,048 blocks: enough for random offsets, quick to write
COUNT = 200


@pytest.fixture(scope="module")
def data_file():
    with files.open_test_file(SIZE) as path:
        yield path
    assert not path.exists()


def needs_uring():
    if (reason := support.unavailable("files")) is not None:
        pytest.skip(reason)


def test_the_test_file_is_written_with_real_blocks_not_holes(data_file):
    st = os.stat(data_file)
    assert st.st_size == SIZE
    assert st.st_blocks * 512 >= SIZE  # a sparse file would have fewer blocks than bytes


def test_aligned_buffers_start_on_a_page_and_have_the_size_asked():
    import ctypes

    buffer = files.aligned_buffer(files.BLOCK)
    assert len(buffer) == files.BLOCK
    assert ctypes.addressof((ctypes.c_char * len(buffer)).from_buffer(buffer)) % files.ALIGN == 0


def test_tmpfs_is_refused_for_direct_reads():
    if files.filesystem_type(Path("/dev/shm")) != "tmpfs":
        pytest.skip("/dev/shm is not tmpfs here")
    problem = files.direct_io_problem(Path("/dev/shm"))
    assert problem is not None and "tmpfs" in problem
    with pytest.raises(RuntimeError, match="tmpfs"), files.open_test_file(SIZE, Path("/dev/shm")):
        pass


@pytest.mark.parametrize("way", [
    lambda path: files.read_blocking(path, COUNT, 10),
    lambda path: files.read_threads(path, COUNT, 10, threads=4),
], ids=["one thread", "thread pool"])
def test_threads_do_the_reads_asked_and_report_a_rate(data_file, way):
    result = way(data_file)
    assert result.reads == COUNT
    assert result.iops > 0 and 0 < result.p50_us <= result.p99_us


@pytest.mark.parametrize("batch", [True, False], ids=["batched", "one by one"])
@pytest.mark.parametrize("depth", [1, 8])
def test_uring_does_the_reads_asked_at_each_depth(data_file, depth, batch):
    needs_uring()
    result = files.read_uring(data_file, COUNT, 10, depth, batch=batch)
    assert (result.reads, result.depth) == (COUNT, depth)
    assert result.iops > 0 and 0 < result.p50_us <= result.p99_us


def test_a_batch_holds_its_reads_in_the_program_longer_than_a_call_per_read(data_file):
    needs_uring()
    batched = files.read_uring(data_file, COUNT, 10, 16, batch=True)
    one_by_one = files.read_uring(data_file, COUNT, 10, 16, batch=False)
    assert batched.held_us > one_by_one.held_us >= 0


def test_the_disk_under_the_cache_is_described_with_its_flags_and_whether_the_machine_is_virtual(tmp_path):
    line = files.describe_disk(tmp_path)
    assert line.startswith(files.filesystem_type(tmp_path))
    assert "hypervisor" in line


def test_a_deadline_stops_the_reads_before_the_count(data_file):
    result = files.read_blocking(data_file, 10**9, 0.05)
    assert 0 < result.reads < 10**9 and result.seconds < 1


def test_uring_refuses_clearly_when_not_there(data_file, monkeypatch):
    monkeypatch.setenv(support.FORCE_ENV, "1")
    with pytest.raises(support.Unavailable, match=support.FORCE_ENV):
        files.read_uring(data_file, COUNT, 1, 4)
    assert files.read_fio(data_file, COUNT, 1, 4) is None
    assert support.FORCE_ENV in (files.fio_missing() or "")


def test_fio_reads_the_same_file_or_says_why_not(data_file):
    if (reason := files.fio_missing()) is not None:
        assert files.read_fio(data_file, COUNT, 5, 4) is None
        pytest.skip(reason)
    result = files.read_fio(data_file, COUNT, 5, 4)
    assert result is not None and result.reads == COUNT and result.iops > 0


def test_fio_version_is_named_where_fio_is_installed_and_none_where_not(monkeypatch):
    if shutil.which("fio") is None:
        assert files.fio_version() is None
    else:
        assert (files.fio_version() or "").startswith("fio-")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    assert files.fio_version() is None


@pytest.mark.solo  # compares rates: needs the cores and the disk to itself
def test_more_reads_in_flight_read_faster_than_one():
    needs_uring()
    with files.open_test_file(64 << 20) as path:
        one = files.read_uring(path, 3000, 2, 1)
        many = files.read_uring(path, 3000, 2, 16)
    assert many.iops > 1.5 * one.iops


def test_every_way_reads_through_the_page_cache_when_not_direct(data_file):
    files.warm(data_file)
    assert files.read_blocking(data_file, COUNT, 5, direct=False).reads == COUNT
    assert files.read_threads(data_file, COUNT, 5, threads=4, direct=False).reads == COUNT
    if support.unavailable("files") is None:
        assert files.read_uring(data_file, COUNT, 5, 8, direct=False).reads == COUNT
    if files.fio_missing() is None:
        assert "--direct=0" in files.fio_argv(data_file, COUNT, 1, 4, direct=False)
        result = files.read_fio(data_file, COUNT, 5, 4, direct=False)
        assert result is not None and result.reads == COUNT
