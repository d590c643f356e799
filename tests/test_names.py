"""Names that follow the kit's rules (``iolab``'s docstring, "where new code goes"), read with ``ast``.

- No two public classes of the kit share a name: a reader who meets ``Run`` or ``Connection`` in a
  notebook must not have to ask which one.
- A context manager that owns a resource is named ``open_*``; the few scopes that only change
  something for the block are listed here, each with why it is one, so that a new context manager
  is either ``open_*`` or added to the list on purpose.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "iolab"

# The one name two classes may share: the from-scratch loop's steps (chapter 5), where step 7's Task
# (in ``loop``) is step 4's (in ``task``) rewritten, and the reader compares the two.
SHARED_CLASS_NAMES = {"Task": {"scratchloop/loop.py", "scratchloop/task.py"}}
# Context managers that own nothing: each changes or observes something only for the block.
SCOPES = {
    "entered": "kit/netns.py",  # the calling thread is in a network namespace
    "on_cpus": "kit/placement.py",  # this process runs on some CPUs
    "changes": "kit/procnet.py",  # the TCP counters' rise over the block
    "stopped_by_signals": "kit/sockets.py",  # SIGTERM and SIGINT end the block
    "stalled": "load/stall.py",  # the caller's server is stopped for part of the block
    "capture_slow_callbacks": "topics/asyncio_trio/looplag.py",  # a log handler is attached
}


def modules() -> dict[str, ast.Module]:
    """Every module of the kit, by path relative to ``src/iolab``, parsed."""
    found = {str(path.relative_to(SRC)): ast.parse(path.read_text()) for path in sorted(SRC.rglob("*.py"))}
    assert len(found) > 100, f"only {len(found)} modules under {SRC}"
    return found


def test_no_two_public_classes_share_a_name() -> None:
    where: dict[str, set[str]] = defaultdict(set)
    for path, tree in modules().items():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].add(path)
    shared = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert shared == SHARED_CLASS_NAMES


def test_a_context_manager_is_open_something_unless_it_is_a_listed_scope() -> None:
    named: dict[str, str] = {}
    for path, tree in modules().items():
        for node in tree.body:
            if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_")
                    and any("contextmanager" in ast.unparse(d) for d in node.decorator_list)):
                named[node.name] = path
    assert len(named) > 20, f"only {len(named)} context managers found: is the decorator still contextmanager?"
    others = {name: path for name, path in named.items() if not name.startswith("open_")}
    assert others == SCOPES
