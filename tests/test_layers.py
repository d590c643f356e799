"""The lab kit's folders are its layers: imports point down, topics stay apart, no cycles.

The rule is the table in ``src/iolab/__init__.py``'s docstring, and only there: this file reads it
(:func:`layer_table`) and has no copy of its own. The checker reads every module with ``ast``, so it
runs nothing. It counts every import: inside functions (a cycle through a late import is still a
cycle in the design), under ``if TYPE_CHECKING:`` (a type named in an annotation is a dependency
too) and relative ones (resolved to the module they name). It also reads string constants, for a
module below ``commands`` that starts ``python -m iolab COMMAND``: that is a dependency on the top
layer's command line which no import shows. And it reads every program below ``commands`` (a module
with ``if __name__ == "__main__":``, or a ``__main__.py``): a child takes its whole input as one
typed spec, so its program must call ``kit.channel.child_main``, unless :data:`OWN_PROGRAMS` says why
not. The last tests plant each kind of violation in a copy of the tree and show that it is caught.
"""

from __future__ import annotations

import ast
import itertools
import re
import shutil
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"

# The package's own two files stand outside the table, as the sentence under it says: its
# ``__init__`` re-exports from kit, its ``__main__`` runs the commands.
OWN_FILES: dict[str, set[str]] = {"__init__": {"kit"}, "__main__": {"commands"}}
# The parts that may start the command line: it is theirs.
COMMAND_LINE_PARTS = {"commands", "__main__"}
# The kit has about 190 modules: a checker that finds fewer is reading the wrong folder, and would
# pass every test for want of anything to check.
MIN_MODULES = 100
MAX_LINES = 400
# A module may be longer if its docstring says why, in a sentence that starts with these words.
LONG_REASON = "Longer than 400 lines because"

# The table: a header line, then one row per package until a blank line.
TABLE_HEADER = re.compile(r"^\s+level\s+package\s+may import from\s*$")
TABLE_ROW = re.compile(r"^\s+(\d+)\s+([a-z_]+)\s+(\S.*?)\s*$")
IMPORTS_NOTHING = "nothing in iolab"

# ``python -m iolab serve ...`` in one string (``-m iolab.load.worker``, a module's own entry point,
# is fine); as argv items it is "-m" then "iolab", or "iolab" (the console script) then a word.
COMMAND_LINE_TEXT = re.compile(r"-m\s+iolab(?![\w.])")

# The programs that do not go through ``kit.channel.child_main``, each with the reason. Every other
# module that runs as a program is a child of the kit and takes one Spec (see ``iolab.kit.channel``).
OWN_PROGRAMS: dict[str, str] = {
    "iolab.__main__": "runs the commands: the command line for people",
    "iolab.homework.gradescope": "Gradescope's run_autograder script starts it with a folder; no parent in the kit",
    "iolab.topics.databases.postgres": "a tool for people (start a throwaway server, print its URL); no parent starts it",
    # Chapter 10's shoot-out: the Python programs stand beside the Go, Node.js and Ruby ones, which the
    # runner starts with the same ``MODE COUNT SECONDS [FIFO]`` (runtimes.Runtime.argv); a reader compares
    # them side by side, and their start-up and memory are measured, so they import no kit beyond their own.
    "iolab.topics.c10k.threads": "a shoot-out program: the same argv as the Go, Node.js and Ruby programs",
    "iolab.topics.c10k.asyncio": "a shoot-out program: the same argv as the Go, Node.js and Ruby programs",
    "iolab.topics.c10k.trio": "a shoot-out program: the same argv as the Go, Node.js and Ruby programs",
    "iolab.topics.c10k.launch": "run as a script (python -I -S launch.py), standard library only, then exec()s the program",
}


class LayerTableError(ValueError):
    """The layer table in ``iolab/__init__.py`` is missing, or says something that cannot be a layering."""


def layer_table(src: Path) -> dict[str, set[str]]:
    """What each package may import, as the table in ``iolab/__init__.py``'s docstring says.

    Raises :class:`LayerTableError` when there is no table, a row cannot be read, or a row names a
    package that is not on a lower level (rows go bottom to top, so those are the rows above it).
    """
    init = src / "iolab" / "__init__.py"
    lines = (ast.get_docstring(ast.parse(init.read_text())) or "").splitlines()
    where = f"{init}'s layer table"
    start = next((i for i, line in enumerate(lines) if TABLE_HEADER.match(line)), None)
    if start is None:
        raise LayerTableError(f"{where} is missing: no header line 'level  package  may import from'")
    levels: dict[str, int] = {}
    table: dict[str, set[str]] = {}
    for line in itertools.takewhile(str.strip, lines[start + 1:]):
        row = TABLE_ROW.match(line)
        if row is None:
            raise LayerTableError(f"{where}: cannot read {line.strip()!r}: a row is 'LEVEL PACKAGE A, B, ...' "
                                  f"or 'LEVEL PACKAGE {IMPORTS_NOTHING}'")
        level, package, allowed = int(row[1]), row[2], row[3]
        if package in table:
            raise LayerTableError(f"{where}: {package} has two rows")
        if levels and level < max(levels.values()):
            raise LayerTableError(f"{where}: {package} is on level {level} after level {max(levels.values())}: "
                                  "the rows go bottom to top")
        names = set() if allowed == IMPORTS_NOTHING else {name.strip() for name in allowed.split(",")}
        below = {name for name, at in levels.items() if at < level}
        if names - below:
            wrong = ", ".join(sorted(names - below))
            raise LayerTableError(f"{where}: {package} (level {level}) may import from {wrong}: not a package on a "
                                  "lower level (imports point down)")
        levels[package], table[package] = level, names
    if not table:
        raise LayerTableError(f"{where} has a header and no rows")
    return table


def may_import(src: Path) -> dict[str, set[str]]:
    """The table of ``src``'s kit, with the package's own two files."""
    return layer_table(src) | OWN_FILES


MAY_IMPORT = may_import(SRC)


def module_name(path: Path, src: Path) -> str:
    """``iolab.topics.c10k.runner`` for ``src/iolab/topics/c10k/runner.py``; a package for its ``__init__``."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(src: Path) -> dict[str, Path]:
    """Every module of the ``iolab`` package under ``src``, by dotted name (more than MIN_MODULES of them)."""
    found = {module_name(p, src): p for p in sorted((src / "iolab").rglob("*.py"))}
    assert len(found) > MIN_MODULES, f"only {len(found)} modules under {src / 'iolab'}: is SRC the kit's folder?"
    return found


def absolute(node: ast.ImportFrom, package: str) -> str:
    """The module a ``from`` import names: ``from ..servers import X`` in ``iolab.kit.procfs`` is ``iolab.servers``."""
    if node.level == 0:
        return node.module or ""
    parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
    return ".".join(parts + [node.module] if node.module else parts)


def imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The iolab modules module ``name`` (at ``path``) imports: ``from a.b import c`` names ``a.b.c`` if that
    is a module, else ``a.b``."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "iolab"}
        elif isinstance(node, ast.ImportFrom):
            module = absolute(node, package)
            if module.split(".")[0] != "iolab":
                continue
            for alias in node.names:
                sub = f"{module}.{alias.name}"
                found.add(sub if sub in known else module)
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
    """Every import that breaks the layering of ``src``'s own table, as ``importer -> imported: why``."""
    table = may_import(src)
    mods = modules(src)
    found = []
    for name, path in mods.items():
        mine = part(name)
        for target in sorted(imports(path, name, set(mods))):
            theirs = part(target)
            if target == "iolab" and mine != "__init__":
                found.append(f"{name} -> iolab: import the module itself, not the package's re-exports")
            elif theirs != mine and theirs not in table[mine]:
                found.append(f"{name} -> {target}: {mine} may not import from {theirs}")
            elif mine == theirs == "topics" and topic(target) not in (None, topic(name)):
                found.append(f"{name} -> {target}: a topic never imports another topic")
            elif private_elsewhere(name, target):
                found.append(f"{name} -> {target}: a module whose name starts with _ is its package's own")
    return found


def private_elsewhere(importer: str, target: str) -> bool:
    """Whether ``target`` is a ``_module`` of a package that ``importer`` is not in (``iolab.load._run``
    from ``iolab.topics.c10k``); a package's own modules and its subpackages' may use it."""
    package, _, leaf = target.rpartition(".")
    return leaf.startswith("_") and not leaf.startswith("__") and not (importer + ".").startswith(package + ".")


def text_for_people(tree: ast.AST) -> set[int]:
    """The ids of the string constants that are docstrings or what a ``raise`` says: text for people."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
        elif isinstance(node, ast.Raise):
            found |= {id(inner) for inner in ast.walk(node) if isinstance(inner, ast.Constant)}
    return found


def command_line_starts(src: Path) -> list[str]:
    """Every place below ``commands`` that starts ``python -m iolab COMMAND``, as ``module:line: why``.

    A docstring or an error message may tell a person to run a command; code that runs one makes its
    layer depend on the top layer's argument grammar, an upward dependency no import shows.
    """
    found = []
    for name, path in modules(src).items():
        if part(name) in COMMAND_LINE_PARTS:
            continue
        tree = ast.parse(path.read_text(), str(path))
        for_people = text_for_people(tree)
        for node in ast.walk(tree):
            if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
                items = node.elts
            elif isinstance(node, ast.Call):
                items = node.args
            else:
                items = []
            words = [item.value if isinstance(item, ast.Constant) and isinstance(item.value, str) else None
                     for item in items]
            pairs = list(zip(words, words[1:]))
            if ("-m", "iolab") in pairs or any(first == "iolab" and second is not None for first, second in pairs):
                found.append(f"{name}:{node.lineno}: runs iolab's command line (argv {words[:4]}...)")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in for_people:
                for offset, line in enumerate(node.value.splitlines()):
                    if COMMAND_LINE_TEXT.search(line):
                        found.append(f"{name}:{node.lineno + offset}: runs iolab's command line ({line.strip()[:60]!r})")
    return [f"{place}: below commands, start the layer's own `python -m iolab.<module>` entry point"
            for place in found]


def _program_part(tree: ast.Module, name: str) -> list[ast.stmt] | None:
    """What runs when the module is a program: its ``if __name__ == "__main__":`` blocks, the whole of a
    ``__main__.py`` that has none; None for a module that is no program."""
    blocks = [node for node in tree.body if isinstance(node, ast.If) and isinstance(node.test, ast.Compare)
              and isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"
              and any(isinstance(c, ast.Constant) and c.value == "__main__" for c in node.test.comparators)]
    if blocks:
        return list(blocks)
    return list(tree.body) if name.endswith(".__main__") else None


def _calls_child_main(statements: list[ast.stmt]) -> bool:
    """Whether ``statements`` call ``child_main`` (``channel.child_main(...)`` or the bare name)."""
    calls = [node.func for stmt in statements for node in ast.walk(stmt) if isinstance(node, ast.Call)]
    return any((isinstance(f, ast.Attribute) and f.attr == "child_main") or (isinstance(f, ast.Name) and f.id == "child_main")
               for f in calls)


def children_off_the_channel(src: Path) -> list[str]:
    """Every program below ``commands`` that does not call ``kit.channel.child_main``, and every entry of
    :data:`OWN_PROGRAMS` that names no program (a stale exemption), as ``module:line: why``."""
    found, programs = [], set()
    for name, path in modules(src).items():
        if part(name) == "commands":
            continue
        program = _program_part(ast.parse(path.read_text(), str(path)), name)
        if program is None:
            continue
        programs.add(name)
        if name not in OWN_PROGRAMS and not _calls_child_main(program):
            found.append(f"{name}:{program[0].lineno}: a program that does not call kit.channel.child_main: "
                         "take one Spec, `channel.child_main(TheSpec, run)`, or say why not in OWN_PROGRAMS")
    found += [f"{name}: in OWN_PROGRAMS but not a program" for name in sorted(set(OWN_PROGRAMS) - programs)]
    return found


def cycles(src: Path) -> list[list[str]]:
    """The groups of modules that import each other in a circle (strongly connected components, Tarjan)."""
    mods = modules(src)
    graph = {name: imports(path, name, set(mods)) & set(mods) for name, path in mods.items()}
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


def test_no_module_below_commands_starts_the_command_line() -> None:
    assert command_line_starts(SRC) == []


def test_every_child_below_commands_goes_through_the_channel() -> None:
    assert children_off_the_channel(SRC) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert cycles(SRC) == []


def test_no_module_is_over_400_lines_without_a_reason() -> None:
    assert too_long(SRC) == []


def test_every_package_has_a_row_in_the_table_and_every_row_a_package() -> None:
    assert {part(name) for name in modules(SRC)} == set(MAY_IMPORT)


# --- the checker catches what it is for ---------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the real tree, which passes, to plant violations in."""
    shutil.copytree(SRC / "iolab", tmp_path / "iolab", ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path


def plant(tree: Path, module: str, code: str) -> int:
    """Append ``code`` to ``module`` in ``tree``; the line it starts on."""
    path = tree.joinpath(*module.split("."))
    path = path / "__init__.py" if path.is_dir() else path.with_suffix(".py")
    text = path.read_text()
    path.write_text(text + "\n" + code + "\n")
    return len(text.splitlines()) + 2


def test_an_upward_import_is_caught(tree: Path) -> None:
    assert violations(tree) == []
    plant(tree, "iolab.kit.procfs", "from iolab.servers import MODELS")
    assert violations(tree) == ["iolab.kit.procfs -> iolab.servers: kit may not import from servers"]


def test_a_relative_upward_import_is_caught(tree: Path) -> None:
    plant(tree, "iolab.kit.procfs", "from ..servers import MODELS")
    plant(tree, "iolab.topics.prefork", "from ..locks import counters")  # a package's __init__
    assert violations(tree) == [
        "iolab.kit.procfs -> iolab.servers: kit may not import from servers",
        "iolab.topics.prefork -> iolab.topics.locks.counters: a topic never imports another topic",
    ]


def test_an_upward_import_for_type_checking_only_is_caught(tree: Path) -> None:
    plant(tree, "iolab.web.http",
          "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from iolab.load import run_load")
    assert violations(tree) == ["iolab.web.http -> iolab.load: web may not import from load"]


def test_a_late_upward_import_inside_a_function_is_caught(tree: Path) -> None:
    plant(tree, "iolab.web.http", "def f():\n    from iolab.load import run_load\n    return run_load")
    assert violations(tree) == ["iolab.web.http -> iolab.load: web may not import from load"]


def test_a_topic_importing_another_topic_is_caught(tree: Path) -> None:
    plant(tree, "iolab.topics.prefork.balance", "from iolab.topics.locks import counters")
    assert violations(tree) == [
        "iolab.topics.prefork.balance -> iolab.topics.locks.counters: a topic never imports another topic"
    ]


def test_importing_another_packages_private_module_is_caught(tree: Path) -> None:
    plant(tree, "iolab.topics.prefork.balance", "from iolab.load._run import Run")
    plant(tree, "iolab.load.sweeps", "from iolab.load._run import Run")  # its own package: allowed
    assert violations(tree) == [
        "iolab.topics.prefork.balance -> iolab.load._run: a module whose name starts with _ is its package's own"
    ]


def test_importing_commands_is_caught(tree: Path) -> None:
    plant(tree, "iolab.topics.c10k.runner", "import iolab.commands.table")
    assert violations(tree) == ["iolab.topics.c10k.runner -> iolab.commands.table: topics may not import from commands"]


def test_the_rule_is_the_table_in_the_package_docstring(tree: Path) -> None:
    init = tree / "iolab" / "__init__.py"
    init.write_text(init.read_text().replace("    3      servers      kit, web, scratchloop",
                                             "    3      servers      kit, web"))
    assert violations(tree) == [
        "iolab.servers.scratchloop -> iolab.scratchloop.loop: servers may not import from scratchloop"
    ]


LOAD_ROW = "    4      load         kit, web, servers"


@pytest.mark.parametrize(("row", "error"), [
    (f"{LOAD_ROW}, topics", "load \\(level 4\\) may import from topics: not a package on a lower level"),
    ("    4      load         kit, web, server", "may import from server: not a package on a lower level"),
    ("    2      load         kit", "load is on level 2 after level 3: the rows go bottom to top"),
    ("    4      load", "cannot read '4      load'"),
    ("    four   load         kit", "cannot read 'four   load         kit'"),
])
def test_a_table_that_cannot_be_a_layering_fails_clearly(tree: Path, row: str, error: str) -> None:
    init = tree / "iolab" / "__init__.py"
    init.write_text(init.read_text().replace(LOAD_ROW, row))
    with pytest.raises(LayerTableError, match=error):
        violations(tree)


def test_a_missing_table_fails_clearly(tree: Path) -> None:
    init = tree / "iolab" / "__init__.py"
    init.write_text(init.read_text().replace("level  package      may import from", "level  package"))
    with pytest.raises(LayerTableError, match="layer table is missing"):
        violations(tree)


def test_starting_the_command_line_below_commands_is_caught(tree: Path) -> None:
    assert command_line_starts(tree) == []
    at = plant(tree, "iolab.kit.procfs", 'ARGV = "python -m iolab serve asyncio"')
    then = plant(tree, "iolab.load.stall", 'def f():\n    return ["python", "-m", "iolab", "load", "http://x/"]')
    # Text for people is not a command line run: a docstring, an error message.
    plant(tree, "iolab.kit.scale", 'def g():\n    """Try ``python -m iolab serve``."""\n    raise OSError("see python -m iolab ps")')
    plant(tree, "iolab.kit.guard", 'ARGV = ["python", "-m", "iolab.load.worker", "{}"]')
    advice = "below commands, start the layer's own `python -m iolab.<module>` entry point"
    assert command_line_starts(tree) == [
        f"iolab.kit.procfs:{at}: runs iolab's command line ('python -m iolab serve asyncio'): {advice}",
        f"iolab.load.stall:{then + 1}: runs iolab's command line (argv ['python', '-m', 'iolab', 'load']...): "
        f"{advice}",
    ]


def test_a_child_off_the_channel_is_caught(tree: Path) -> None:
    assert children_off_the_channel(tree) == []
    at = plant(tree, "iolab.kit.procfs", 'if __name__ == "__main__":\n    import sys\n    print(sys.argv[1])')
    # A __main__.py with no guard is a program as a whole; this one reads argparse flags.
    main = tree / "iolab" / "load" / "__main__.py"
    main.write_text("import argparse\nargparse.ArgumentParser().parse_args()\n")
    # The ways that pass: child_main called on the channel module, or imported by name.
    plant(tree, "iolab.kit.guard", 'if __name__ == "__main__":\n    from iolab.kit import channel\n'
          '    channel.child_main(Spec, run)')
    plant(tree, "iolab.kit.scale", 'if __name__ == "__main__":\n    from iolab.kit.channel import child_main\n'
          '    child_main(Spec, run)')
    advice = "take one Spec, `channel.child_main(TheSpec, run)`, or say why not in OWN_PROGRAMS"
    assert children_off_the_channel(tree) == [
        f"iolab.kit.procfs:{at}: a program that does not call kit.channel.child_main: {advice}",
        f"iolab.load.__main__:1: a program that does not call kit.channel.child_main: {advice}",
    ]
    # An exemption outlives its program: it must go too.
    (tree / "iolab" / "topics" / "c10k" / "launch.py").write_text('"""No longer a program."""\n')
    assert children_off_the_channel(tree)[-1] == "iolab.topics.c10k.launch: in OWN_PROGRAMS but not a program"


def test_a_cycle_is_caught(tree: Path) -> None:
    assert cycles(tree) == []
    plant(tree, "iolab.kit.procfs", "from iolab.kit import guard")
    plant(tree, "iolab.kit.guard", "from iolab.kit import procfs")
    assert ["iolab.kit.guard", "iolab.kit.procfs"] in cycles(tree)


def test_a_long_module_needs_a_reason(tree: Path) -> None:
    plant(tree, "iolab.kit.scale", "\n".join(f"X{i} = {i}" for i in range(MAX_LINES)))
    assert too_long(tree) == [f"iolab.kit.scale: {len((tree / 'iolab/kit/scale.py').read_text().splitlines())} lines"]


def test_a_missing_tree_is_not_a_clean_one(tmp_path: Path) -> None:
    with pytest.raises(AssertionError, match="only 0 modules"):
        modules(tmp_path)
