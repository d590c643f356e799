"""What grading hands back: a gradebook an LMS imports, a feedback file per student and notebook, pass rates.

All three are made from the rows of the grades CSV (``grading.Row``), so they agree with it:

- ``gradebook.csv``: one row per student, a column per notebook and a total, after a
  "Points Possible" row, in the columns Canvas's gradebook import reads (``Student``, ``ID``,
  ``SIS User ID``, ``SIS Login ID``, ``Section``; the student's id goes in ``SIS User ID``);
- ``feedback/<student>/<notebook>.md``: each exercise, its points, and why it lost any, in the
  rows' words (which never quote a hidden test unless the grader was told ``--release-hidden``);
  rows about the student's folder rather than a notebook go to ``feedback/<student>/submission.md``;
- ``pass-rates.csv``: per notebook and exercise, how many students passed, in part or not at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from iolab.homework.grading import Row

CANVAS_COLUMNS = ["Student", "ID", "SIS User ID", "SIS Login ID", "Section"]
FEEDBACK = "feedback"
FOLDER_FEEDBACK = "submission"  # feedback/<student>/submission.md: rows about the folder, not a notebook


def _frame(rows: Sequence[Row]) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in rows if r.exercise], columns=list(Row.__dataclass_fields__))


def gradebook(rows: Sequence[Row], names: Mapping[str, str] | None = None) -> pd.DataFrame:
    """The class's gradebook: "Points Possible" first, then a row per student; a column per notebook and ``Total``.

    ``names`` maps a student id to the name the LMS shows (from its export), when known.
    """
    frame = _frame(rows)
    if frame.empty:
        return pd.DataFrame(columns=[*CANVAS_COLUMNS, "Total"])
    points = frame.pivot_table(index="student", columns="notebook", values="points", aggfunc="sum", fill_value=0.0)
    possible = frame.groupby(["notebook", "exercise"])["max_points"].max().groupby("notebook").sum()
    points = points.reindex(columns=possible.index, fill_value=0.0)
    points.columns = [str(c).removesuffix(".ipynb") for c in points.columns]
    points["Total"] = points.sum(axis=1)
    top = pd.DataFrame([[*possible.to_list(), possible.sum()]], columns=points.columns)
    ids = [str(s) for s in points.index]
    people = pd.DataFrame({"Student": [(names or {}).get(s, s) for s in ids], "ID": "", "SIS User ID": ids,
                           "SIS Login ID": "", "Section": ""})
    head = pd.DataFrame({"Student": ["Points Possible"], "ID": "", "SIS User ID": "", "SIS Login ID": "", "Section": ""})
    table = pd.concat([pd.concat([head, top], axis=1),
                       pd.concat([people, points.reset_index(drop=True)], axis=1)], ignore_index=True)
    return table.round(2)


def pass_rates(rows: Sequence[Row]) -> pd.DataFrame:
    """Per notebook and exercise: students, and the share who passed it fully, in part, or not at all."""
    frame = _frame(rows)
    if frame.empty:
        return pd.DataFrame(columns=["notebook", "exercise", "students", "passed_pct", "partial_pct", "zero_pct"])
    grouped = frame.groupby(["notebook", "exercise"], sort=False)
    table = grouped.agg(students=("student", "nunique"), max_points=("max_points", "max"),
                        passed_pct=("status", lambda s: 100 * (s == "passed").mean()),
                        partial_pct=("status", lambda s: 100 * (s == "partial").mean()),
                        mean_points=("points", "mean"))
    table["zero_pct"] = 100 - table.passed_pct - table.partial_pct
    return table.reset_index().round(1)


def feedback_text(student: str, notebook: str, rows: Sequence[Row], release_hidden: bool = False) -> str:
    """One student's feedback on one notebook, as Markdown (its reasons quote hidden checks only if the rows do)."""
    earned, possible = sum(r.points for r in rows), sum(r.max_points for r in rows)
    lines = [f"# {notebook}: {earned:g} of {possible:g} points", "", f"Student: `{student}`", ""]
    notes = sorted({r.note for r in rows if r.note})
    for note in notes:
        lines += [f"**Note:** {note}", ""]
    lines += ["| exercise | points | result | your numbers |", "|---|---|---|---|"]
    lines += [f"| `{r.exercise or '-'}` | {r.points:g} / {r.max_points:g} | {r.status} | {r.parameters or '-'} |"
              for r in rows]
    lost = [r for r in rows if r.status != "passed"]
    if lost:
        lines += ["", "## What to look at", ""]
        lines += [f"- `{r.exercise or notebook}` ({r.status}): {r.reason or 'no reason recorded'}" for r in lost]
    if lost and not release_hidden:
        lines += ["", "A hidden check's own message is withheld: it would state the answer. Rerun the public check "
                  "cell in your notebook for its message, and compare your answer with the experiment it predicts."]
    return "\n".join(lines) + "\n"


def write_reports(rows: Sequence[Row], folder: Path, names: Mapping[str, str] | None = None,
                  release_hidden: bool = False) -> dict[str, Path]:
    """Write the gradebook, the pass rates and every feedback file into ``folder``; their paths by kind."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"gradebook": folder / "gradebook.csv", "pass rates": folder / "pass-rates.csv",
             "feedback": folder / FEEDBACK}
    gradebook(rows, names).to_csv(paths["gradebook"], index=False)
    pass_rates(rows).to_csv(paths["pass rates"], index=False)
    by_file: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        by_file.setdefault((row.student, row.notebook), []).append(row)
    for (student, notebook), mine in by_file.items():
        # a row about the student's folder names no notebook: its file must not be a hidden ".md"
        target = paths["feedback"] / student / f"{Path(notebook).stem or FOLDER_FEEDBACK}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(feedback_text(student, notebook, mine, release_hidden))
    return paths
