"""Every package's face is what it says it is: its ``__all__`` and its docstring (as trio's ``test_exports``).

Each package of the kit opens with a docstring that is its index, and some re-export names for the
notebooks. For every package: the index names each of its modules and subpackages, and ``__all__``
(where there is one, else nothing) is exactly the public names the package exports: what it
defines, the iolab names it imports and does not use itself (an import it uses is its own tool,
not an export), and the names of its lazy export table (``kit.lazy``). Both are read with ``ast``.
"""

from __future__ import annotations

import ast
import importlib
import re
import shutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def packages(src: Path) -> dict[str, Path]:
    """Every package of the kit under ``src``, by dotted name: its folder."""
    inits = sorted((src / "iolab").rglob("__init__.py"))
    found = {".".join(init.parent.relative_to(src).parts): init.parent for init in inits}
    assert len(found) > 15, f"only {len(found)} packages under {src / 'iolab'}: is SRC the kit's folder?"
    return found


def children(folder: Path) -> list[str]:
    """The modules and subpackages of the package in ``folder`` (not ``__init__`` or ``__main__``)."""
    modules = [path.stem for path in folder.glob("*.py") if not path.stem.startswith("__")]
    subpackages = [path.name for path in folder.iterdir() if (path / "__init__.py").is_file()]
    return sorted(modules + subpackages)


def named(doc: str, child: str) -> bool:
    """Whether a docstring names a module: as ``child``, ``child.py``, ``a.b.child`` or :mod:`~a.b.child`."""
    return re.search(rf"``(?:[\w.]*\.)?{child}(?:\.py)?``|:mod:`~?(?:[\w.]*\.)?{child}`", doc) is not None


def unnamed(src: Path) -> list[str]:
    """The modules and subpackages that their package's docstring does not name, as ``package: module``."""
    found = []
    for package, folder in packages(src).items():
        doc = ast.get_docstring(ast.parse((folder / "__init__.py").read_text())) or ""
        found += [f"{package}: {child}" for child in children(folder) if not named(doc, child)]
    return found


def lazy_table(tree: ast.Module) -> set[str]:
    """The names of a lazy export table: the keys of the dict passed to ``lazy_exports(__name__, TABLE)``."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
             and node.func.id == "lazy_exports" and len(node.args) == 2 and isinstance(node.args[1], ast.Name)]
    tables = {call.args[1].id for call in calls}  # type: ignore[attr-defined]
    keys: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and any(
            isinstance(target, ast.Name) and target.id in tables for target in node.targets
        ):
            keys |= {key.value for key in node.value.keys if isinstance(key, ast.Constant)}
    return keys


def exported(init: Path, src: Path) -> set[str]:
    """The public names the package ``init`` exports: defined there, imported from iolab and unused, lazy."""
    tree = ast.parse(init.read_text())
    used = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    names = lazy_table(tree)
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "iolab":
            folder = src.joinpath(*(node.module or "").split("."))
            for alias in node.names:
                submodule = (folder / alias.name).is_dir() or (folder / f"{alias.name}.py").is_file()
                if not submodule and (alias.asname or alias.name) not in used:
                    names.add(alias.asname or alias.name)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
    return {name for name in names if not name.startswith("_")}


PACKAGES = packages(SRC)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_all_is_exactly_what_the_package_exports(package: str) -> None:
    module = importlib.import_module(package)
    declared = getattr(module, "__all__", [])
    assert len(declared) == len(set(declared)), f"{package}.__all__ names a name twice"
    assert set(declared) == exported(PACKAGES[package] / "__init__.py", SRC), (
        f"{package}: __all__ and the names it exports differ (a name it imports for its own use is not an export)"
    )
    for name in declared:
        getattr(module, name)  # a lazy export's module exists and defines it


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_the_package_docstring_names_every_module(package: str) -> None:
    doc = importlib.import_module(package).__doc__ or ""
    assert [child for child in children(PACKAGES[package]) if not named(doc, child)] == []


# --- the checks catch what they are for ---------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the real tree, which passes, to plant omissions in."""
    shutil.copytree(SRC / "iolab", tmp_path / "iolab", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def test_a_module_missing_from_its_package_docstring_is_caught(tree: Path) -> None:
    assert unnamed(tree) == []
    (tree / "iolab/kit/planted.py").write_text('"""A module nobody listed."""\n')
    (tree / "iolab/topics/planted").mkdir()
    (tree / "iolab/topics/planted/__init__.py").write_text('"""A topic nobody listed."""\n')
    assert unnamed(tree) == ["iolab.kit: planted", "iolab.topics: planted"]


def test_a_name_exported_but_not_in_all_is_caught(tree: Path) -> None:
    init = tree / "iolab/load/__init__.py"
    before = exported(init, tree)
    init.write_text(init.read_text() + "\nfrom iolab.load.sweeps import sweep\nfrom iolab.load import worker\n"
                    "from iolab.kit.machine import cores\nLIMIT = cores()\n\ndef helper():\n    return LIMIT\n")
    # An exported function, a constant and a re-export; not a submodule, nor a name it uses itself.
    assert exported(init, tree) - before == {"sweep", "LIMIT", "helper"}
