"""Every command of ``python -m iolab`` is run by some test, and every server model by the conformance suite.

pyperf's ``tests/test_examples.py`` fails when a documented example was not run; here the list to
cover is the CLI's own registry (``build_parser``, which reads ``commands.CHAPTERS``) and
``servers.MODELS``, so a new command or model without a test fails this file, not a reader.

Which commands the tests run is read statically, with ``ast``, from every ``.py`` under ``tests/``:
an argv is the list passed to ``main([...])``, or whatever follows ``"-m", "iolab"`` in a list or a
call's arguments (``[sys.executable, "-m", "iolab", ...]``, ``python_argv("-m", "iolab", ...)``).
Comments are not in the tree and a docstring is one string, so neither counts. A runtime record
(a hook that notes each command a test runs) was the alternative; it was not chosen because the
suite runs in two stages and on xdist workers, often only a folder at a time, and because half the
commands run in a child ``python -m iolab`` that no hook in the test process sees.

The second half runs the six commands no other test ran when this file was written: ``cow``,
``julia``, ``machine``, ``ps``, ``networks far`` and ``homework times``.
"""

from __future__ import annotations

import argparse
import ast
import functools
import json
import os
import platform
import stat
import subprocess
import sys
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from iolab import servers
from iolab.commands import CHAPTERS, build_parser, main
from iolab.netlab import available, namespaces

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
# The one conformance suite that every server model must run (CPython's test_selectors idea).
CONFORMANCE = TESTS / "servers" / "test_servers.py"

Invocation = tuple[str, str | None]  # a command and its action ("networks", "far"), or (command, None)


# --- what is registered --------------------------------------------------------------------------


def _choices(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The sub-commands a parser registered, by name (argparse keeps them in a private action)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def registered() -> dict[str, set[str]]:
    """Each command of the CLI, with the names of its actions (``networks``: rtt, far, tls; most: none)."""
    return {name: set(_choices(parser)) for name, parser in _choices(build_parser()).items()}


# --- what the tests invoke -----------------------------------------------------------------------


def _parametrized(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, set[str]]:
    """The string values each argument of ``function`` takes in its ``@pytest.mark.parametrize`` lines."""
    values: dict[str, set[str]] = defaultdict(set)
    for decorator in function.decorator_list:
        if not (isinstance(decorator, ast.Call) and ast.unparse(decorator.func).endswith("parametrize")
                and len(decorator.args) >= 2):
            continue
        try:
            names, rows = ast.literal_eval(decorator.args[0]), ast.literal_eval(decorator.args[1])
        except ValueError:  # values computed at import time: not resolvable by reading
            continue
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        for row in rows:
            for name, value in zip(names, row if len(names) > 1 else [row]):
                if isinstance(value, str):
                    values[name].add(value)
    return values


def _argvs(tree: ast.AST) -> Iterator[tuple[list[ast.expr], dict[str, set[str]]]]:
    """Each CLI argv in ``tree`` (the elements after ``iolab``), with the parametrized values in scope."""

    def visit(node: ast.AST, scope: dict[str, set[str]]) -> Iterator[tuple[list[ast.expr], dict[str, set[str]]]]:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            scope = {**scope, **_parametrized(node)}
        if isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee == "main" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                yield node.args[0].elts, scope
        sequence = (node.elts if isinstance(node, (ast.List, ast.Tuple))
                    else node.args if isinstance(node, ast.Call) else [])
        words = [e.value if isinstance(e, ast.Constant) else None for e in sequence]
        for i in range(len(words) - 1):
            if words[i:i + 2] == ["-m", "iolab"]:
                yield sequence[i + 2:], scope
        for child in ast.iter_child_nodes(node):
            yield from visit(child, scope)

    yield from visit(tree, {})


def invocations(source: str, commands: dict[str, set[str]]) -> set[Invocation]:
    """The commands (and their actions) that the argvs in ``source`` invoke."""
    found: set[Invocation] = set()
    for argv, scope in _argvs(ast.parse(source)):

        def words(element: ast.expr) -> set[str]:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                return {element.value}
            return scope.get(element.id, set()) if isinstance(element, ast.Name) else set()

        for command in (words(argv[0]) & set(commands)) if argv else set():
            found.add((command, None))
            # The action is the first word after the command that names one (options may come first).
            for element in argv[1:]:
                if actions := words(element) & commands[command]:
                    found |= {(command, action) for action in actions}
                    break
    return found


def invoked_by_tests(commands: dict[str, set[str]]) -> set[Invocation]:
    """The commands that some ``.py`` file under ``tests/`` invokes."""
    return set().union(*(invocations(path.read_text(), commands) for path in sorted(TESTS.rglob("*.py"))))


def test_the_scanner_finds_argvs_and_ignores_comments_and_docstrings() -> None:
    commands = {"cow": set(), "ps": set(), "julia": set(), "networks": {"rtt", "far"}, "homework": {"times"}}
    source = '''
"""python -m iolab cow: a docstring names a command but runs nothing."""
import pytest
# main(["ps", "1"]) in a comment runs nothing either
NAMES = ["ps", "cow"]  # nor does a list that is no argv
def test_a(capsys):
    main(NAMES)
    main(["networks", "--json", "far", "--models", "asyncio"])
@pytest.mark.parametrize("what", ["times"])
def test_b(what):
    subprocess.run([sys.executable, "-m", "iolab", "homework", what])
def test_c():
    procs.python_argv("-m", "iolab", "julia", "--ms", "5")
'''
    assert invocations(source, commands) == {("networks", None), ("networks", "far"), ("homework", None),
                                             ("homework", "times"), ("julia", None)}


def test_every_registered_command_is_invoked_by_some_test() -> None:
    commands = registered()
    assert len(commands) >= 20 and commands["networks"] == {"rtt", "far", "tls"}, "the registry was not read"
    invoked = invoked_by_tests(commands)
    missing = [f"{command} {action}" if action else command
               for command, actions in commands.items() for action in sorted(actions) or [None]
               if (command, action) not in invoked]
    assert not missing, f"no test runs these commands: {missing}; call main([...]) on each in a test"


# Chapters of book/ with no row in CHAPTERS yet, each with why.
CHAPTERS_WITHOUT_A_ROW: set[int] = set()


def test_every_chapter_of_the_book_has_a_row_of_commands() -> None:
    chapters = {int(page.name[:2]) for page in (ROOT / "book").glob("[0-9][0-9]-*.md")}
    assert len(chapters) >= 13, f"only chapters {sorted(chapters)} in book/: is ROOT the course?"
    rows = {int(heading.split()[0]): adders for heading, adders in CHAPTERS if heading.split()[0].isdigit()}
    assert all(rows.values()), "a chapter's row lists no command"
    assert chapters - set(rows) == CHAPTERS_WITHOUT_A_ROW, "a chapter of book/ has no row in commands.CHAPTERS"
    assert set(rows) <= chapters, "commands.CHAPTERS has a row for a chapter book/ does not have"


def test_every_server_model_runs_the_conformance_suite() -> None:
    # Collected, not read: the suite's parameters are computed from MODELS at import time.
    collected = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
                                str(CONFORMANCE)], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert collected.returncode == 0, collected.stdout[-2000:]
    runs: dict[str, set[str]] = defaultdict(set)  # test function -> the parameter ids it runs with
    for line in collected.stdout.splitlines():
        name, bracket, param = line.partition("[")
        if bracket and "::" in name:
            runs[name].add(param.removesuffix("]"))
    missing = [model for model in servers.MODELS if not any(model in params for params in runs.values())]
    assert not missing, f"the conformance suite ({CONFORMANCE.name}) runs nothing against: {missing}"
    everywhere = [name for name, params in runs.items() if set(servers.MODELS) <= params]
    assert len(everywhere) >= 5, f"only {everywhere} run against every model"


# --- the commands no other test ran --------------------------------------------------------------


def test_machine_prints_the_fingerprint_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["machine"]) == 0
    fingerprint = json.loads(capsys.readouterr().out)
    assert {"cpu", "cores", "memory_gib", "kernel", "python", "packages"} <= set(fingerprint)
    assert 1 <= fingerprint["cores"] <= os.cpu_count()
    assert fingerprint["memory_gib"] > 0
    assert (fingerprint["kernel"], fingerprint["python"]) == (platform.release(), platform.python_version())


def test_ps_reads_state_threads_and_memory_of_each_pid_from_proc(capsys: pytest.CaptureFixture[str]) -> None:
    me, parent = os.getpid(), os.getppid()
    assert main(["ps", str(me), str(parent), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["pid"] for r in rows] == [me, parent] and rows[0]["ppid"] == parent
    assert {"state", "threads", "vm_size_kb", "vm_rss_kb", "rss_anon_kb", "cpu_s"} <= set(rows[0])
    assert rows[0]["state"] == "R", "this process is running: it is the one reading /proc"
    assert rows[0]["threads"] >= 1 and 0 < rows[0]["vm_rss_kb"] <= rows[0]["vm_size_kb"]
    assert rows[0]["cpu_s"] > 0


def test_cow_shows_the_child_copying_the_array_it_writes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cow", "16", "--repeats", "1", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert sorted(r["pages"] for r in rows) == ["2 MiB (huge)", "4 KiB"] and {r["array_mb"] for r in rows} == {16}
    assert {"parent_rss_mb", "parent_page_tables_kb", "fork_ms", "child_private_before_mb"} <= set(rows[0])
    for row in rows:
        # Kernel behaviour, not timing: fork shares the array's pages, and the child's write to all
        # of it copies all of it (anything else the child touched only adds to "after").
        assert row["child_private_after_mb"] - row["child_private_before_mb"] >= 0.9 * 16, row
        assert row["parent_rss_mb"] >= 16 and row["fork_ms"] > 0


def test_julia_times_one_job_per_process_count(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["julia", "--processes", "1", "2", "--ms", "20", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["processes"] for r in rows] == [1, 2]
    assert all(set(r) == {"processes", "job_s", "wall_s"} for r in rows)
    # Each job is timed inside the run the parent times from outside: wall_s bounds job_s.
    assert all(0 < r["job_s"] <= r["wall_s"] for r in rows)


needs_root = pytest.mark.skipif(available() is not None, reason=available() or "")


@needs_root
def test_networks_far_prints_a_row_per_model_and_round_trip(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["networks", "--json", "far", "--models", "asyncio", "--rtt-ms", "0", "40",
                 "--clients", "4", "--seconds", "1"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["model"], r["rtt_ms"]) for r in rows] == [("asyncio", 0), ("asyncio", 40)]
    assert {"loss", "rps", "never_served", "p50_ms", "p99_ms", "errors"} <= set(rows[0])
    assert all(r["errors"] == 0 and r["never_served"] == 0 and r["rps"] > 0 for r in rows)
    # A request waits at least one round trip of the link: a floor set by the link's delay, not a timing.
    assert rows[1]["p50_ms"] >= 40
    assert not [n for n in namespaces.list_namespaces() if namespaces.creator(n) == os.getpid()]


def _notebook(path: Path, source: str) -> Path:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(source)]
    nbformat.write(nb, path)
    return path


@pytest.fixture
def run_times(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The run-times CSV ``homework times`` writes, moved to ``tmp_path`` (not the course's data/)."""
    from iolab.homework import times

    csv = tmp_path / "run-times.csv"
    monkeypatch.setattr(times, "RUN_TIMES", csv)
    monkeypatch.setattr(times, "record", functools.partial(times.record, path=csv))  # its default is bound early
    return csv


def test_homework_times_records_each_notebooks_seconds(tmp_path: Path, run_times: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    import pandas as pd

    good = _notebook(tmp_path / "good.ipynb", "import os\nassert os.environ['IOLAB_SCALE'] == 'quick'")
    assert main(["homework", "times", str(good), "--scale", "quick"]) == 0
    out = capsys.readouterr().out
    assert "[1/1] good.ipynb at quick scale ... " in out and f"run times: {run_times}" in out
    table = pd.read_csv(run_times, keep_default_na=False)
    assert list(table.columns) == ["notebook", "scale", "seconds", "error", "machine", "measured"]
    assert (table.notebook[0], table.scale[0], table.error[0]) == ("good.ipynb", "quick", "")
    assert table.seconds[0] > 0


def test_homework_times_fails_when_a_notebook_raises(tmp_path: Path, run_times: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    bad = _notebook(tmp_path / "bad.ipynb", "1 / 0")
    assert main(["homework", "times", str(bad)]) == 1
    assert "(failed: cell raised ZeroDivisionError" in capsys.readouterr().out
    assert "ZeroDivisionError" in run_times.read_text()


def test_homework_intake_places_the_lms_zip_by_roster_and_names_who_is_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import zipfile

    archive = tmp_path / "subs.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("lovelaceada_12345_998877_hw.ipynb", "{}")
        zf.writestr("lovelaceada_12345_998878_hw-1.ipynb", "{}")
        zf.writestr("stranger_555_1_hw.ipynb", "{}")
        link = zipfile.ZipInfo("lovelaceada_12345_998879_link.ipynb")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(link, "/etc/passwd")
    roster = tmp_path / "roster.csv"
    roster.write_text("id,key,name\nada,12345,Ada Lovelace\nbob,999,Bob\n")
    _notebook(tmp_path / "hw.ipynb", "pass")
    out = tmp_path / "submissions"
    assert main(["homework", "intake", str(archive), "--roster", str(roster), "--out", str(out),
                 "--notebooks", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    assert f"1 notebooks of 1 students in {out.resolve()}" in printed
    assert "stranger_555_1_hw.ipynb" in printed and "no submission from 1 students in the roster: bob" in printed
    assert (out / "ada" / "hw.ipynb").is_file()
    assert "1 files refused, not placed: lovelaceada_12345_998879_link.ipynb (a symbolic link)" in printed
    assert f"1 earlier uploads of 1 students kept in {out / '.earlier'} (the latest upload is graded): ada (1)" in printed


def test_homework_gradescope_run_reports_a_missing_submission(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    # bwrap: the confinement that makes no probe and leaves the test process no subreaper
    # (grading nothing, the command never starts it).
    monkeypatch.setenv("AUTOGRADER_SANDBOX", "bwrap")
    assert main(["homework", "gradescope-run", "--root", str(tmp_path)]) == 0
    out = tmp_path / "results" / "results.json"
    assert capsys.readouterr().out.strip() == f"results: {out}"
    report = json.loads(out.read_text())
    assert report["score"] == 0
    assert [t["output"] for t in report["tests"]] == ["missing: no notebook (.ipynb) was submitted"]
