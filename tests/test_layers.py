"""The lab kit's folders are its layers: imports go only downward, topics stay apart, no cycles.

The rule is the one ``src/iolab/__init__.py`` states. The checker reads every module's imports with
``ast`` (function-level ones too: a cycle through a late import is still a cycle in the design), so it
runs nothing; the last tests plant a violation in a copy of a small tree to show that it catches each.
"""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# What each part may import from (besides itself). Listed downward from the top: a part's row names
# only parts listed below it. The package's own __init__ re-exports from kit; __main__ runs commands.
MAY_IMPORT: dict[str, set[str]] = {
    "commands": {"kit", "web", "scratchloop", "servers", "load", "topics", "homework", "netlab"},
    "homework": {"kit"},
    "topics": {"kit", "web", "scratchloop", "servers", "load", "netlab"},
    "netlab": {"kit"},
    "load": {"kit", "web", "servers"},
    "servers": {"kit", "web", "scratchloop"},
    "web": {"kit"},
    "scratchloop": set(),
    "kit": set(),
    "__init__": {"kit"},
    "__main__": {"commands"},
}
MAX_LINES = 400
# A module may be longer if its docstring says why, in a sentence that starts with these words.
LONG_REASON = "Longer than 400 lines because"


def module_name(path: Path, src: Path) -> str:
    """``iolab.topics.c10k.runner`` for ``src/iolab/topics/c10k/runner.py``; a package for its ``__init__``."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(src: Path) -> dict[str, Path]:
    """Every module of the ``iolab`` package under ``src``, by dotted name."""
    return {module_name(p, src): p for p in sorted((src / "iolab").rglob("*.py"))}


def imports(path: Path, known: set[str]) -> set[str]:
    """The iolab modules ``path`` imports: ``from a.b import c`` names ``a.b.c`` if that is a module, else ``a.b``."""
    found: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    # Imports under ``if TYPE_CHECKING:`` name a type for an annotation and never run: two classes that
    # hold each other (a connection slot and its run) may name each other that way.
    for block in [n for n in ast.walk(tree) if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"]:
        block.body = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "iolab"}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and node.module.split(".")[0] == "iolab":
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if sub in known else node.module)
    return found


def part(module: str) -> str:
    """The layer a module belongs to: ``iolab.topics.c10k.runner`` -> ``topics``; ``iolab`` -> ``__init__``."""
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "__init__"


def topic(module: str) -> str | None:
    """``c10k`` for ``iolab.topics.c10k.runner``; None outside ``topics`` (and for ``iolab.topics`` itself)."""
    pieces = module.split(".")
    return pieces[2] if len(pieces) > 2 and pieces[1] == "topics" else None


def violations(src: Path) -> list[str]:
    """Every import that breaks the layering, as ``importer -> imported: why``."""
    mods = modules(src)
    found = []
    for name, path in mods.items():
        mine = part(name)
        for target in sorted(imports(path, set(mods))):
            theirs = part(target)
            if target == "iolab" and mine != "__init__":
                found.append(f"{name} -> iolab: import the module itself, not the package's re-exports")
            elif theirs != mine and theirs not in MAY_IMPORT[mine]:
                found.append(f"{name} -> {target}: {mine} may not import from {theirs}")
            elif mine == theirs == "topics" and topic(target) not in (None, topic(name)):
                found.append(f"{name} -> {target}: a topic never imports another topic")
    return found


def cycles(src: Path) -> list[list[str]]:
    """The groups of modules that import each other in a circle (strongly connected components, Tarjan)."""
    mods = modules(src)
    graph = {name: imports(path, set(mods)) & set(mods) for name, path in mods.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in graph:
        if v not in index:
            visit(v)
    return groups


def too_long(src: Path) -> list[str]:
    """Modules over MAX_LINES lines whose docstring gives no reason."""
    found = []
    for name, path in modules(src).items():
        lines = len(path.read_text().splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > MAX_LINES and LONG_REASON not in doc:
            found.append(f"{name}: {lines} lines")
    return found


def test_every_import_goes_down_a_layer_and_topics_stay_apart() -> None:
    assert violations(SRC) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert cycles(SRC) == []


def test_no_module_is_over_400_lines_without_a_reason() -> None:
    assert too_long(SRC) == []


def test_every_part_of_the_package_is_a_known_layer() -> None:
    assert {part(name) for name in modules(SRC)} <= set(MAY_IMPORT)


# --- the checker catches what it is for ---------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the kit small enough to plant violations in: the real tree, which passes."""
    shutil.copytree(SRC / "iolab", tmp_path / "iolab")
    return tmp_path


def plant(tree: Path, module: str, code: str) -> None:
    path = tree.joinpath(*module.split(".")).with_suffix(".py")
    path.write_text(path.read_text() + "\n" + code + "\n")


def test_an_upward_import_is_caught(tree: Path) -> None:
    assert violations(tree) == []
    plant(tree, "iolab.kit.procfs", "from iolab.servers import MODELS")
    assert violations(tree) == ["iolab.kit.procfs -> iolab.servers: kit may not import from servers"]


def test_a_late_upward_import_inside_a_function_is_caught(tree: Path) -> None:
    plant(tree, "iolab.web.http", "def f():\n    from iolab.load import run_load\n    return run_load")
    assert violations(tree) == ["iolab.web.http -> iolab.load: web may not import from load"]


def test_a_topic_importing_another_topic_is_caught(tree: Path) -> None:
    plant(tree, "iolab.topics.prefork.balance", "from iolab.topics.locks import counters")
    assert violations(tree) == [
        "iolab.topics.prefork.balance -> iolab.topics.locks.counters: a topic never imports another topic"
    ]


def test_importing_commands_is_caught(tree: Path) -> None:
    plant(tree, "iolab.topics.c10k.runner", "import iolab.commands.table")
    assert violations(tree) == ["iolab.topics.c10k.runner -> iolab.commands.table: topics may not import from commands"]


def test_a_cycle_is_caught(tree: Path) -> None:
    assert cycles(tree) == []
    plant(tree, "iolab.kit.procfs", "from iolab.kit import guard")
    plant(tree, "iolab.kit.guard", "from iolab.kit import procfs")
    assert ["iolab.kit.guard", "iolab.kit.procfs"] in cycles(tree)


def test_a_long_module_needs_a_reason(tree: Path) -> None:
    plant(tree, "iolab.kit.scale", "\n".join(f"X{i} = {i}" for i in range(MAX_LINES)))
    assert too_long(tree) == [f"iolab.kit.scale: {len((tree / 'iolab/kit/scale.py').read_text().splitlines())} lines"]


def test_the_tests_folders_mirror_the_packages() -> None:
    tests = Path(__file__).resolve().parent
    folders = [f for f in tests.rglob("*") if f.is_dir() and not f.name.startswith((".", "__"))]
    assert folders, "tests/ should have a folder per layer"
    for folder in folders:
        assert (SRC / "iolab" / folder.relative_to(tests)).is_dir(), f"tests/{folder.relative_to(tests)} mirrors no package"
