"""The tests mirror the kit: a folder per package both ways, and a file named after what it tests.

``tests/kit/test_procfs.py`` tests ``iolab.kit.procfs``: a reader who opens a module finds its tests
by the same path, and a test file's name says what it tests. The rule, checked both ways:

- every package of the kit has a folder under ``tests/`` at the same path, and every folder under
  ``tests/`` is a package's;
- a test file in such a folder is ``test_<module>.py`` for a module or subpackage of that package,
  or ``test_<package>.py`` for what spans the package (``tests/servers/test_servers.py`` is the
  conformance suite every model runs). Helpers a folder's tests share carry no ``test_`` prefix.

The files directly in ``tests/`` test the course as a whole (the layers, the book, the prose).
pytest imports test files with ``--import-mode=importlib`` (``pyproject.toml``), so two folders may
each have a ``test_asyncio.py``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
SRC = TESTS.parent / "src"


def packages(src: Path) -> set[Path]:
    """The kit's packages as paths relative to ``src/iolab`` (``kit``, ``topics/c10k``), without the root."""
    root = src / "iolab"
    return {init.parent.relative_to(root) for init in root.rglob("__init__.py")} - {Path(".")}


def folders_of(tests: Path) -> set[Path]:
    """The folders under ``tests`` as relative paths (caches and hidden folders left out)."""
    return {
        folder.relative_to(tests)
        for folder in tests.rglob("*")
        if folder.is_dir() and not any(part.startswith((".", "__")) for part in folder.relative_to(tests).parts)
    }


def mirror_gaps(src: Path, tests: Path) -> list[str]:
    """Where ``tests`` does not mirror the kit under ``src``, one line each, sorted."""
    root = src / "iolab"
    kit, folders = packages(src), folders_of(tests)
    found = [f"src/iolab/{p}: a package with no tests/{p} folder" for p in kit - folders]
    found += [f"tests/{f}: a folder that mirrors no package" for f in folders - kit]
    for folder in folders & kit:
        names = {p.stem for p in (root / folder).glob("*.py")} | {
            d.name for d in (root / folder).iterdir() if (d / "__init__.py").is_file()}
        allowed = (names - {"__init__"}) | {folder.name}
        for test in sorted((tests / folder).glob("test_*.py")):
            if test.stem.removeprefix("test_") not in allowed:
                found.append(f"tests/{folder}/{test.name}: names no module of iolab.{'.'.join(folder.parts)} "
                             f"(test_<module>.py, or test_{folder.name}.py for the package as a whole)")
    return sorted(found)


def test_the_tests_mirror_the_kit() -> None:
    assert mirror_gaps(SRC, TESTS) == []


# --- the check catches what it is for -----------------------------------------------------------


@pytest.fixture
def trees(tmp_path: Path) -> tuple[Path, Path]:
    """A small kit and its tests that mirror each other, to break."""
    src, tests = tmp_path / "src", tmp_path / "tests"
    for package in ["kit", "topics/c10k"]:
        (src / "iolab" / package).mkdir(parents=True)
        (src / "iolab" / package / "__init__.py").write_text("")
        (tests / package).mkdir(parents=True)
    (src / "iolab" / "__init__.py").write_text("")
    (src / "iolab" / "topics" / "__init__.py").write_text("")
    (tests / "topics").mkdir(exist_ok=True)
    (src / "iolab" / "kit" / "procfs.py").write_text("")
    (tests / "kit" / "test_procfs.py").write_text("")
    (tests / "kit" / "test_kit.py").write_text("")
    (tests / "topics" / "test_c10k.py").write_text("")  # a subpackage tested from its parent's folder
    (tests / "kit" / "cheats.py").write_text("")  # a helper, not a test file
    (tests / "test_layers.py").write_text("")  # the course as a whole
    return src, tests


def test_a_mirrored_tree_passes(trees: tuple[Path, Path]) -> None:
    assert mirror_gaps(*trees) == []


def test_a_package_without_a_tests_folder_is_caught(trees: tuple[Path, Path]) -> None:
    src, tests = trees
    (src / "iolab" / "topics" / "measuring").mkdir()
    (src / "iolab" / "topics" / "measuring" / "__init__.py").write_text("")
    assert mirror_gaps(src, tests) == ["src/iolab/topics/measuring: a package with no tests/topics/measuring folder"]


def test_a_tests_folder_without_a_package_is_caught(trees: tuple[Path, Path]) -> None:
    src, tests = trees
    (tests / "wordfreq").mkdir()
    assert mirror_gaps(src, tests) == ["tests/wordfreq: a folder that mirrors no package"]


def test_a_test_file_named_after_no_module_is_caught(trees: tuple[Path, Path]) -> None:
    src, tests = trees
    (tests / "topics" / "c10k" / "test_sleepers.py").write_text("")
    assert mirror_gaps(src, tests) == [
        "tests/topics/c10k/test_sleepers.py: names no module of iolab.topics.c10k "
        "(test_<module>.py, or test_c10k.py for the package as a whole)"
    ]
