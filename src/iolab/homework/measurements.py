"""The class's measurements: what each submission's run measured, per exercise, as one tidy CSV beside grades.csv.

Grading keeps, in each exercise's row, the numbers the submission's run measured
(``checker.measured_values``: the names its given cells mark ``# measured`` that a check reads and
accepted; a table's numeric columns as their medians, less those that hold a setting of the run, and a kit
result's numeric fields). :func:`table`
makes them ``class-measurements.csv``, one row per student, exercise and name:

``student, notebook, exercise, name, summary, value, unit, measured_on, student_value, student_machine,
reference, reference_machine``

- ``summary`` says what ``value`` is: ``value`` for a number, ``median of COLUMN`` for a table's column;
- ``unit`` is read from the name's ending (``_ms``, ``_pct``, ``rps``...), empty when it does not say;
- ``measured_on`` is the machine that measured it. The grader runs each submission's cells itself
  (in the submission's sandbox, with the student's parameters), so under ``make grade`` it is the
  grading machine for every student: the spread is one machine's, across the class's parameters and
  the runs' noise, not the class's machines;
- ``student_value`` is the same name as the student's own run measured it, on their machine: a student
  edition's given cells end with ``student.record(...)``, which keeps the numbers in the notebook's
  output (as handed in, so the student could have changed it: it is shown, never graded); empty when
  the notebook was handed in without that output;
- ``student_machine`` is the machine the student's own run printed in its setup cell, as handed in
  (empty when the notebook was handed in without that output);
- ``reference`` is the reference run's value where ``data/homework/measured-reference.csv`` says which
  data of ``data/reference/`` holds it (the median of a column over the rows a query selects), with
  that run's machine and scale in ``reference_machine``; empty elsewhere.

The page of figures made from this file is ``measurements_page``; it names no student.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from iolab.homework import batch, markup
from iolab.homework.grading import GRADING_ENV, Row
from iolab.homework.lateness import replace_csv
from iolab.kit import machine, magnitudes, student
from iolab.kit import scale as scales
from iolab.kit.paths import COURSE_DATA

CSV_NAME = "class-measurements.csv"
MAX_RECORDED = 1_000  # names a handed-in notebook may record; a forged output holding more is cut there
COLUMNS = ["student", "notebook", "exercise", "name", "summary", "value", "unit", "measured_on", "student_value",
           "student_machine", "reference", "reference_machine"]
# Which reference data holds a measured name's value: notebook (stem), name (as in the CSV), data (its file in
# data/reference without .csv), where (a pandas query selecting its rows), column (whose median is the value).
REFERENCES = COURSE_DATA / "homework" / "measured-reference.csv"
REFERENCE_DATA = COURSE_DATA / "reference"
# The setup cell prints "<machine> · IOLAB_SCALE=quick · ...": the machine is what comes before the scale.
MACHINE_LINE = re.compile(r"^(?P<machine>[^\n]{1,200}?) · IOLAB_SCALE=", re.MULTILINE)
# A name's unit, from how it ends (the kit's column names say their unit: rps, p99_ms, rss_mb).
UNITS = (("_pct", "%"), ("_ms", "ms"), ("_us", "µs"), ("_per_s", "per s"), ("_s", "s"), ("seconds", "s"),
         ("rps", "requests/s"), ("iops", "reads/s"), ("_mb", "MB"), ("_bytes", "bytes"), ("share", "fraction"),
         ("calls", "calls"))


def unit(name: str) -> str:
    """The unit a measured name's ending says (``lag_p50_ms``: ``ms``), or "" if it says none."""
    last = name.split(":")[-1].lower()
    return next((word for ending, word in UNITS if last.endswith(ending)), "")


def student_machine(submission: Any) -> str:
    """The machine the student's own run printed in its setup cell (``machine.describe()``), "" if it printed none."""
    index = markup.setup_cell(submission)
    outputs = submission.cells[index].get("outputs", []) if index is not None else []
    text = "".join(str(o.get("text", "")) for o in outputs if isinstance(o, Mapping) and o.get("output_type") == "stream")
    found = MACHINE_LINE.search(text[:10_000])
    return found["machine"].strip() if found else ""


def student_values(submission: Any) -> dict[str, float]:
    """What the student's own run recorded (``student.record``), keyed as ``Row.measured`` is
    (:func:`iolab.kit.magnitudes.key`): finite numbers only, whatever else the handed-in output holds."""
    found: dict[str, float] = {}
    for cell in submission.cells:
        for output in cell.get("outputs", []) if cell.get("cell_type") == "code" else []:
            data = output.get("data", {}) if isinstance(output, Mapping) else {}
            recorded = data.get(student.RECORD_MIME) if isinstance(data, Mapping) else None
            for name, columns in (recorded.items() if isinstance(recorded, Mapping) else ()):
                for key, number in (columns.items() if isinstance(columns, Mapping) else ()):
                    if type(number) in (int, float) and math.isfinite(number) and len(found) < MAX_RECORDED:
                        found.setdefault(magnitudes.key(str(name), str(key)), float(number))
    return found


def _machine_of(data: str, folder: Path) -> str:
    """The reference run's machine and scale, from the metadata ``results.save`` wrote beside its data."""
    try:
        meta = json.loads((folder / f"{data}.json").read_text())
    except (OSError, ValueError):
        return "the reference run"
    return (f"reference run: {meta.get('cpu', '?')} · {meta.get('cores', '?')} cores · Linux {meta.get('kernel', '?')}"
            f" · {meta.get('scale', '?')} scale")


def references(table: Path | None = None, folder: Path | None = None) -> dict[tuple[str, str], tuple[float, str]]:
    """(notebook stem, name) -> (the reference run's value, its machine), for each line of ``table`` (default
    :data:`REFERENCES`) whose data ``folder`` (default :data:`REFERENCE_DATA`) holds and whose query selects
    rows; the others are left out."""
    table, folder = table or REFERENCES, folder or REFERENCE_DATA
    if not table.is_file():
        return {}
    found = {}
    for line in pd.read_csv(table, dtype=str, keep_default_na=False).itertuples(index=False):
        path = folder / f"{line.data}.csv"
        if not path.is_file():
            continue
        data = pd.read_csv(path)
        try:
            values = pd.to_numeric(data.query(line.where)[line.column] if line.where else data[line.column],
                                   errors="coerce").dropna()
        except (KeyError, NameError, ValueError, SyntaxError):
            continue  # a line that no longer fits its data: no reference rather than a failed batch
        if len(values):
            found[(line.notebook, line.name)] = (float(values.median()), _machine_of(line.data, folder))
    return found


def _split(key: str) -> tuple[str, str]:
    """(the CSV's name, its summary) for a key of ``Row.measured``: ``lag:p50_ms`` is the median of a column."""
    name, _, column = key.partition(":")
    return (f"{name}:{column}", f"median of {column}") if column else (name, "value")


def _handed_in(rows: Sequence[Row], submissions: Path) -> dict[tuple[str, str], tuple[str, dict[str, float]]]:
    """(student, notebook) -> the machine the student's own run printed and what it recorded, read from the
    notebook handed in."""
    found = {}
    for who, notebook in {(r.student, r.notebook) for r in rows if r.measured}:
        try:
            submission = batch.read_notebook(submissions / who / notebook)
            found[(who, notebook)] = (student_machine(submission), student_values(submission))
        except Exception:  # the grader read it once already; a notebook gone or changed since costs only these columns
            found[(who, notebook)] = ("", {})
    return found


def table(rows: Sequence[Row], submissions: Path,
          reference: Mapping[tuple[str, str], tuple[float, str]] | None = None) -> pd.DataFrame:
    """The class's measurements from the graded ``rows`` (columns :data:`COLUMNS`), the handed-in notebooks in
    ``submissions`` giving each student's machine; ``reference`` defaults to :func:`references`."""
    reference = references() if reference is None else reference
    handed_in = _handed_in(rows, submissions)
    here = f"{machine.describe()} · {scales.ENV}={GRADING_ENV[scales.ENV]}"  # the grader runs every submission
    lines = []
    for row in rows:
        for key, value in row.measured.items():
            name, summary = _split(key)
            ref, ref_machine = reference.get((Path(row.notebook).stem, name), (None, ""))
            their_machine, theirs = handed_in.get((row.student, row.notebook), ("", {}))
            lines.append({"student": row.student, "notebook": row.notebook, "exercise": row.exercise, "name": name,
                          "summary": summary, "value": value, "unit": unit(name), "measured_on": here,
                          "student_value": theirs.get(key), "student_machine": their_machine,
                          "reference": ref, "reference_machine": ref_machine})
    return pd.DataFrame(lines, columns=COLUMNS)


def read(path: Path) -> pd.DataFrame:
    """``class-measurements.csv`` as :func:`table` wrote it (text columns as text, missing ones empty)."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    return frame.reindex(columns=COLUMNS, fill_value="")


def write(rows: Sequence[Row], submissions: Path, path: Path, only: Iterable[str] = ()) -> pd.DataFrame:
    """Write the class's measurements to ``path``, whole or not at all; with ``only`` (a regrade), those students'
    rows replace theirs and the others' stay as they were. The table written."""
    new = table(rows, submissions)
    again = set(only)
    if again and path.is_file():
        old = read(path)
        new = pd.concat([old[~old["student"].isin(again)], new.astype(str)], ignore_index=True)
    replace_csv(new, path)
    return new
