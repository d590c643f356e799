"""The book's incremental build: what its execution cache is keyed on, which pages it reads again, and how
long it says the rest will take."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "book" / "_ext"))
import build_progress  # noqa: E402
import execution_key  # noqa: E402


@pytest.fixture
def book(tmp_path: Path) -> Path:
    """A tiny book root with one kit module, one reference file, a lock, a prose page and a notebook."""
    (tmp_path / "src/iolab").mkdir(parents=True)
    (tmp_path / "src/iolab/kit.py").write_text("SCALE = 1\n")
    (tmp_path / "data/reference").mkdir(parents=True)
    (tmp_path / "data/reference/runs.csv").write_text("a,b\n1,2\n")
    (tmp_path / "requirements.lock").write_text("numpy==2.0\n")
    (tmp_path / "book").mkdir()
    (tmp_path / "book/01.md").write_text("# One\n")
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks/01.ipynb").write_text("{}")
    return tmp_path


ENV = {"IOLAB_SCALE": "quick"}


def test_the_key_follows_the_kit_the_data_and_the_lock(book: Path) -> None:
    before = execution_key.key(book, ENV)
    assert execution_key.key(book, ENV) == before
    for path, text in [("src/iolab/kit.py", "SCALE = 2\n"), ("data/reference/runs.csv", "a,b\n1,3\n"),
                       ("requirements.lock", "numpy==2.1\n")]:
        original = (book / path).read_text()
        (book / path).write_text(text)
        assert execution_key.key(book, ENV) != before, path
        (book / path).write_text(original)
        assert execution_key.key(book, ENV) == before, path
    (book / "src/iolab/new.py").write_text("")
    assert execution_key.key(book, ENV) != before


def test_the_key_ignores_prose_notebooks_and_bytecode(book: Path) -> None:
    before = execution_key.key(book, ENV)
    (book / "book/01.md").write_text("# One, edited\n")
    (book / "notebooks/01.ipynb").write_text('{"cells": []}')  # jupyter-cache keys on the code itself
    (book / "src/iolab/__pycache__").mkdir()
    (book / "src/iolab/__pycache__/kit.cpython-311.pyc").write_bytes(b"\0")
    assert execution_key.key(book, ENV) == before


@pytest.mark.parametrize("name", execution_key.ENVIRONMENT)
def test_the_key_follows_the_environment_the_notebooks_read(book: Path, name: str) -> None:
    assert execution_key.key(book, {**ENV, name: "something else"}) != execution_key.key(book, ENV)


def test_the_key_covers_the_data_folder_switch_and_the_scale_is_the_kits(monkeypatch) -> None:
    assert {"IOLAB_SCALE", "IOLAB_DATA", "IOLAB_STUDENT"} <= set(execution_key.ENVIRONMENT)
    monkeypatch.setenv("IOLAB_SCALE", " Quick ")
    assert execution_key.scale() == "quick"
    monkeypatch.setenv("IOLAB_SCALE", "qiuck")  # a typo fails the build instead of caching a "qiuck" book
    with pytest.raises(ValueError, match="quick, full"):
        execution_key.scale()


def test_a_new_key_replaces_the_old_cache_of_its_scale_only(book: Path, monkeypatch) -> None:
    build = book / "_build"
    monkeypatch.setenv("IOLAB_SCALE", "quick")
    first = execution_key.cache_folder(build, book)
    first.mkdir(parents=True)
    full = build / ".jupyter_cache" / "full-0123456789ab"
    full.mkdir()
    assert execution_key.cache_folder(build, book) == first and first.is_dir()
    (book / "src/iolab/kit.py").write_text("SCALE = 3\n")
    second = execution_key.cache_folder(build, book)
    assert second != first and second.name.startswith("quick-")
    assert not first.exists() and full.is_dir()


def _env(key: str | None) -> SimpleNamespace:
    env = SimpleNamespace(found_docs={"book/01", "book/02", "notebooks/01", "notebooks/02"})
    if key is not None:
        env.iolab_execution_key = key
    return env


def test_pages_read_again(tmp_path: Path) -> None:
    app = SimpleNamespace(iolab_execution_key="quick-aaaa", doctreedir=str(tmp_path))
    everything = sorted(_env(None).found_docs)
    assert execution_key._outdated(app, _env(None), set(), set(), set()) == everything  # first build
    assert execution_key._outdated(app, _env("quick-bbbb"), set(), set(), set()) == everything  # new key
    assert execution_key._outdated(app, _env("quick-aaaa"), set(), {"book/01"}, set()) == []  # prose
    # an edited notebook: the prose pages that glue its figures are read again too
    assert execution_key._outdated(app, _env("quick-aaaa"), set(), {"notebooks/02"}, set()) == ["book/01", "book/02"]


def test_a_build_with_warnings_makes_the_next_read_everything(tmp_path: Path) -> None:
    app = SimpleNamespace(iolab_execution_key="quick-aaaa", doctreedir=str(tmp_path), _warncount=3)
    execution_key._finished(app, None)
    everything = sorted(_env("quick-aaaa").found_docs)
    assert execution_key._outdated(app, _env("quick-aaaa"), set(), set(), set()) == everything
    assert execution_key._outdated(app, _env("quick-aaaa"), set(), set(), set()) == []  # once
    execution_key._finished(SimpleNamespace(doctreedir=str(tmp_path), _warncount=0), None)
    assert execution_key._outdated(app, _env("quick-aaaa"), set(), set(), set()) == []
    execution_key._finished(SimpleNamespace(doctreedir=str(tmp_path), _warncount=0), RuntimeError("failed"))
    assert execution_key._outdated(app, _env("quick-aaaa"), set(), set(), set()) == everything


def test_the_time_to_go_is_the_record_at_the_pace_so_far_and_a_cached_page_sets_no_pace():
    recorded = {"n/01": 60.0, "n/02": 120.0, "n/03": 300.0, "n/04": None}
    # A record twice too short (an older notebook, a slower machine): the rest is told at twice its record.
    told = build_progress.to_go({"n/01": 120.0}, recorded)
    assert told == "about 14.0 min to go, at the pace so far (2.0x the recorded times)"
    assert build_progress.pace({"n/01": 120.0, "n/02": 180.0}, recorded) == 300 / 180
    # Read from the cache in a second: no pace yet, the record as it is.
    assert build_progress.pace({"n/01": 1.0}, recorded) is None
    assert build_progress.to_go({"n/01": 1.0}, recorded) == "about 7.0 min to go, as recorded"
    assert build_progress.to_go({"n/01": 60.0, "n/02": 120.0, "n/03": 300.0}, recorded) == ""  # n/04 has no record


def test_each_notebook_read_logs_its_time_and_the_time_to_go(monkeypatch, caplog):
    monkeypatch.setenv("IOLAB_SCALE", "full")
    recorded = {"01.ipynb": 60.0, "02.ipynb": 120.0}
    monkeypatch.setattr(build_progress.times, "run_seconds", lambda name, scale, table: recorded[name])
    clock = iter([0.0, 150.0])
    monkeypatch.setattr(build_progress.time, "monotonic", lambda: next(clock))
    app = SimpleNamespace(env=SimpleNamespace(docname="notebooks/01"))
    with caplog.at_level("INFO"):
        build_progress._before_read(app, app.env, ["intro", "notebooks/01", "notebooks/02"])
        build_progress._source_read(app, "notebooks/01", [""])
        build_progress._doctree_read(app, None)
    lines = [r.getMessage() for r in caplog.records]
    assert lines == ["[iolab] 2 notebooks to read at full scale; about 3.0 min if none is cached, as recorded",
                     "[iolab] [1/2] notebooks/01: 2.5 min (recorded: 60 s); about 5.0 min to go, at the pace so far "
                     "(2.5x the recorded times)"]
