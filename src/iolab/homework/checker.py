"""The checker: a process that runs the instructor's check cells on a submission's answers, and nothing of the student's.

``python -I -m iolab.homework.checker JOB VERDICT`` reads a job (JSON: the notebook's setup cell,
and per exercise its given cells and its check cells), runs the setup cell once, then for each
exercise the given cells in a copy of that namespace. Then it reads the answers the submission's
kernel wrote from its standard input (JSON: check cell -> the answers file's text), so that all
this can start while the submission still runs; puts the decoded answers in, runs each check
cell's parts (``checks``) and writes what happened to VERDICT. The grader starts it in a sandbox of its own, with a scratch folder the submission never
saw, so its verdict does not depend on anything the student's code did, short of the answers.

``-I`` keeps the checker's imports to the installed environment: no current folder, no
``PYTHONPATH``, no user site-packages.
"""

from __future__ import annotations

import builtins
import contextlib
import io
import json
import sys
from collections.abc import Callable
from typing import Any

from iolab.homework import answers, checks

FILENAME = "<check cell {}>"


def _run_quietly(source: str, namespace: dict[str, Any], name: str) -> str | None:
    """Run a cell of the instructor's in ``namespace`` with its printing swallowed; its error, or None."""
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            exec(compile(source, name, "exec"), namespace)
    except Exception as exc:
        return checks.error_line(exc)
    return None


def check_one(check: dict[str, Any], namespace: dict[str, Any]) -> dict[str, Any]:
    """One check cell's verdict: how each answer arrived, and each part's outcome."""
    statuses: dict[str, str] = {}
    if check["answers"] is None:
        return {"answers": statuses, "outcomes": [], "error": "no answers"}
    try:
        received = answers.load(check["answers"])
    except answers.NotData as exc:
        return {"answers": statuses, "outcomes": [], "error": f"tampered answers: {exc}"}
    for name in check["names"]:
        entry = received.get(name, {"missing": True})
        if "value" in entry:
            namespace[name] = entry["value"]
            statuses[name] = "ok"
        else:
            namespace.pop(name, None)
            statuses[name] = "missing" if "missing" in entry else f"refused: {entry['refused']}"
    found = checks.parts(check["source"])
    outcomes = checks.run_parts(found, namespace, FILENAME.format(check["grade_id"]))
    return {"answers": statuses, "outcomes": [[o.hidden, o.passed, o.message] for o in outcomes], "error": None}


def parameters(given: list[str], namespace: dict[str, Any]) -> str:
    """The values the given cells drew, as ``name=value`` (plain data only, each cut to 40 characters)."""
    shown = []
    for name in sorted({n for source in given for n in checks.bound_names(source)}):
        value = namespace.get(name)
        try:
            answers.encode(value)
        except answers.NotData:
            continue
        if not name.startswith("_"):
            shown.append(f"{name}={repr(value)[:40]}")
    return ", ".join(shown)


def run_job(job: dict[str, Any], read_answers: Callable[[], dict[str, str | None]]) -> dict[str, Any]:
    """The verdict on every exercise of ``job``, once ``read_answers()`` has given the answers by check cell."""
    setup: dict[str, Any] = {"__name__": "__main__", "__builtins__": builtins}
    setup_error = _run_quietly(job["setup"], setup, "<setup cell>") if job["setup"] else None
    prepared = []
    for exercise in job["exercises"]:
        namespace = dict(setup)
        given_error = None
        for k, source in enumerate(exercise["given"]):
            given_error = given_error or _run_quietly(source, namespace, f"<given cell {k}>")
        prepared.append((exercise, namespace, given_error))
    received = read_answers()
    verdict: dict[str, Any] = {"setup_error": setup_error, "exercises": {}}
    for exercise, namespace, given_error in prepared:
        verdict["exercises"][exercise["label"]] = {
            "given_error": given_error,
            "parameters": parameters(exercise["given"], namespace),
            "checks": {c["grade_id"]: check_one(c | {"answers": received.get(c["grade_id"])}, namespace)
                       for c in exercise["checks"]},
        }
    return verdict


def main(argv: list[str]) -> int:
    job_path, verdict_path = argv
    with open(job_path) as f:
        job = json.load(f)
    verdict = run_job(job, lambda: json.loads(sys.stdin.read() or "{}"))
    with open(verdict_path, "w") as f:
        json.dump(verdict, f)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
