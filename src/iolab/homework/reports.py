"""What grading hands back: a gradebook an LMS imports, a feedback file per student and notebook, pass rates.

All three are made from the rows of the grades CSV (``grading.Row``), so they agree with it:

- ``gradebook.csv``: one row per student, a column per notebook, after a "Points Possible" row, in
  the columns Canvas's gradebook import reads (``Student``, ``ID``, ``SIS User ID``, ``SIS Login
  ID``, ``Section``), each filled from ``names.csv`` as intake wrote it from the roster (``ID`` is the
  Canvas user id; the course's id stays in the column the roster had it in, none when it had none).
  Given Canvas's own gradebook export (:func:`canvas_assignments`), each notebook's column bears the
  title Canvas gave its assignment, ``Name (assignment id)``, so that the import fills that
  assignment, and there is no ``Total`` column (Canvas would make it a new assignment) unless asked;
- ``feedback/<student>/<notebook>.md``: each exercise, its points, and why it lost any, in the
  rows' words (which never quote a hidden test unless the grader was told ``--release-hidden``);
  beside it, ``<notebook>.html``, the same text as a standalone page (:func:`feedback_html`);
  rows about the student's folder rather than a notebook go to ``feedback/<student>/submission.md``;
- ``pass-rates.csv``: per notebook and exercise, how many students passed, in part or not at all.

A written answer no TA has scored yet (``written``, status ``awaiting a TA``) is not counted as lost:
the gradebook leaves that student's notebook cell empty (Canvas then leaves the grade as it is), the
pass rates count it apart, and the feedback says it awaits a TA.
"""

from __future__ import annotations

import html
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

import pandas as pd

from iolab.homework.contract import AWAITING
from iolab.homework.grading import Row
from iolab.homework.intake import CANVAS_EXPORT, POINTS_POSSIBLE
from iolab.homework.lateness import Late, replace_csv

Lateness = Mapping[tuple[str, str], Late]  # (student, notebook) -> how late, and the percent off

CANVAS_COLUMNS = list(CANVAS_EXPORT)
# Where each of Canvas's columns comes from in names.csv (intake.PEOPLE_COLUMNS)
FROM_PEOPLE = {"Student": "name", "ID": "canvas_id", "SIS User ID": "sis_user_id", "SIS Login ID": "sis_login_id",
               "Section": "section"}
ASSIGNMENT = re.compile(r"^(?P<name>.+) \((?P<id>\d+)\)$")  # Canvas's "HW2 Blocking (4321)"
FEEDBACK = "feedback"
FOLDER_FEEDBACK = "submission"  # feedback/<student>/submission.md: rows about the folder, not a notebook


def _frame(rows: Sequence[Row]) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in rows if r.exercise], columns=list(Row.__dataclass_fields__))


def canvas_assignments(path: Path) -> dict[str, str]:
    """The assignment columns of Canvas's gradebook export at ``path``, ``Name (assignment id)``, each with its points possible."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False, nrows=3, encoding="utf-8-sig")
    frame.columns = [str(c).strip() for c in frame.columns]
    possible = frame[frame.get("Student", pd.Series(dtype=str)).str.strip() == POINTS_POSSIBLE]
    return {c: (possible[c].iloc[0] if len(possible) else "") for c in frame.columns if ASSIGNMENT.match(c)}


def _title(column: str) -> str:
    """The assignment's name in Canvas's column ``Name (assignment id)``."""
    match = ASSIGNMENT.match(column)
    return match["name"] if match else column


def _words(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def assignment_columns(notebooks: Collection[str], assignments: Collection[str],
                       chosen: Mapping[str, str] | None = None) -> dict[str, str]:
    """Each notebook's (stem's) Canvas column among ``assignments``: as ``chosen`` says (notebook stem -> a column
    or its name), else the one column whose name holds the notebook's words, else the only one for the only notebook.

    ``ValueError`` naming the columns for a notebook none fits, or several.
    """
    found = {}
    for notebook in sorted(notebooks):
        stem = notebook.removesuffix(".ipynb")
        want = (chosen or {}).get(stem)
        if want is not None:
            fits = [c for c in assignments if want in (c, _title(c))]
        else:
            words = _words(stem.lstrip("0123456789-_"))
            fits = [c for c in assignments if words and words in _words(_title(c))]
            if not fits and len(notebooks) == 1 and len(assignments) == 1:
                fits = list(assignments)
        if len(fits) != 1:
            raise ValueError(f"{stem}: {'several' if fits else 'no'} Canvas assignment columns fit "
                             f"({', '.join(fits or assignments) or 'the export has none'}); name one with "
                             f"--canvas-assignment {stem}=\"NAME\"")
        found[stem] = fits[0]
    return found


def gradebook(rows: Sequence[Row], people: Mapping[str, Mapping[str, str]] | None = None,
              columns: Mapping[str, str] | None = None, total: bool | None = None,
              late: Lateness | None = None) -> pd.DataFrame:
    """The class's gradebook: "Points Possible" first, then a row per student; a column per notebook [and ``Total``].

    ``people`` maps a student id to its ``names.csv`` row (intake.PEOPLE_COLUMNS), when known;
    ``columns`` a notebook's stem to its Canvas column (:func:`assignment_columns`). ``total``
    defaults to a ``Total`` column only without ``columns``; ``late`` takes each late notebook's penalty off.
    """
    total = columns is None if total is None else total
    frame = _frame(rows)
    if frame.empty:
        return pd.DataFrame(columns=[*CANVAS_COLUMNS, *(["Total"] if total else [])])
    if late:
        off = [late.get((s, n), Late(0, 0.0)).penalty for s, n in zip(frame["student"], frame["notebook"])]
        frame["points"] = frame["points"] * (1 - pd.Series(off, index=frame.index, dtype=float) / 100)
    points = frame.pivot_table(index="student", columns="notebook", values="points", aggfunc="sum", fill_value=0.0)
    possible = frame.groupby(["notebook", "exercise"])["max_points"].max().groupby("notebook").sum()
    points = points.reindex(columns=possible.index, fill_value=0.0)
    for student, notebook in {(s, n) for s, n, st in zip(frame["student"], frame["notebook"], frame["status"])
                              if st == AWAITING}:
        points.loc[student, notebook] = float("nan")  # empty, not 0: a written answer awaits a TA
    stems = [str(c).removesuffix(".ipynb") for c in points.columns]
    points.columns = [(columns or {}).get(stem, stem) for stem in stems]
    top = pd.DataFrame([possible.to_list()], columns=points.columns)
    if total:
        points["Total"], top["Total"] = points.sum(axis=1, min_count=len(points.columns)), possible.sum()
    ids = [str(s) for s in points.index]
    known = people or {}
    who = pd.DataFrame({column: [known.get(s, {}).get(field, "") for s in ids] for column, field in FROM_PEOPLE.items()})
    who["Student"] = [name or s for name, s in zip(who["Student"], ids)]  # no name known: the course's id
    head = pd.DataFrame({column: [POINTS_POSSIBLE if column == "Student" else ""] for column in CANVAS_COLUMNS})
    table = pd.concat([pd.concat([head, top], axis=1),
                       pd.concat([who, points.reset_index(drop=True)], axis=1)], ignore_index=True)
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
                        mean_points=("points", "mean"),
                        awaiting_pct=("status", lambda s: 100 * (s == AWAITING).mean()))
    table["zero_pct"] = 100 - table.passed_pct - table.partial_pct - table.awaiting_pct
    table = table[[c for c in table.columns if c != "awaiting_pct"] + ["awaiting_pct"]]
    return table.reset_index().round(1)


def feedback_text(student: str, notebook: str, rows: Sequence[Row], release_hidden: bool = False,
                  late: Late | None = None) -> str:
    """One student's feedback on one notebook, as Markdown (its reasons quote hidden checks only if the rows do);
    a ``late`` notebook's says how late, and its points before and after the penalty."""
    earned, possible = sum(r.points for r in rows), sum(r.max_points for r in rows)
    waiting = [r for r in rows if r.status == AWAITING]
    so_far = f" so far ({sum(r.max_points for r in waiting):g} await a TA)" if waiting else ""
    lines = [f"# {notebook}: {earned:g} of {possible:g} points{so_far}", "", f"Student: `{student}`", ""]
    if late is not None and late.days:
        after = round(earned * (1 - late.penalty / 100), 2)
        lines += [f"**Late:** {late.words()}" + (f" ({after:g} of {possible:g} points after it)" if late.penalty else ""), ""]
    notes = sorted({r.note for r in rows if r.note})
    for note in notes:
        lines += [f"**Note:** {note}", ""]
    lines += ["| exercise | points | result | your numbers |", "|---|---|---|---|"]
    lines += [f"| `{r.exercise or '-'}` | {r.points:g} / {r.max_points:g} | {r.status} | {r.parameters or '-'} |"
              for r in rows]
    lost = [r for r in rows if r.status not in ("passed", AWAITING)]
    if lost:
        lines += ["", "## What to look at", ""]
        lines += [f"- `{r.exercise or notebook}` ({r.status}): {r.reason or 'no reason recorded'}" for r in lost]
    said = [r for r in rows if r.status == "passed" and r.reason]  # a TA's comment on a written answer
    if said or waiting:
        lines += ["", "## Written answers", ""]
        lines += [f"- `{r.exercise}`: {r.reason}" for r in said]
        lines += [f"- `{r.exercise}`: awaiting a TA ({r.max_points:g} points, not in the total yet)" for r in waiting]
    if any("hidden check" in r.reason for r in lost) and not release_hidden:
        lines += ["", "A hidden check's own message is withheld: it would state the answer. An answer that fails "
                  "only a hidden check has passed its public checks, which test its form (a type, a unit, a "
                  "range); the hidden ones test its value. Compare your answer with what the experiment after "
                  "the exercise measured in your own notebook."]
    if any("the check failed:" in r.reason for r in lost):
        lines += ["", "A public check's message is quoted above: the check cell in your notebook shows the same "
                  "one, so rerun it as you fix the answer."]
    return "\n".join(lines) + "\n"


def write_reports(rows: Sequence[Row], folder: Path, people: Mapping[str, Mapping[str, str]] | None = None,
                  release_hidden: bool = False, columns: Mapping[str, str] | None = None,
                  total: bool | None = None, late: Lateness | None = None,
                  only: Collection[str] | None = None) -> dict[str, Path]:
    """Write the gradebook (:func:`gradebook` with ``people``, ``columns``, ``total``, ``late``), the pass rates and
    the feedback files (of the students in ``only``, when given) into ``folder``; their paths by kind."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = {"gradebook": folder / "gradebook.csv", "pass rates": folder / "pass-rates.csv",
             "feedback": folder / FEEDBACK}
    replace_csv(gradebook(rows, people, columns, total, late), paths["gradebook"])
    replace_csv(pass_rates(rows), paths["pass rates"])
    by_file: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        by_file.setdefault((row.student, row.notebook), []).append(row)
    for (student, notebook), mine in by_file.items():
        if only is not None and student not in only:
            continue
        # a row about the student's folder names no notebook: its file must not be a hidden ".md"
        target = paths["feedback"] / student / f"{Path(notebook).stem or FOLDER_FEEDBACK}.md"
        target.parent.mkdir(parents=True, exist_ok=True)
        text = feedback_text(student, notebook, mine, release_hidden, (late or {}).get((student, notebook)))
        target.write_text(text)
        target.with_suffix(".html").write_text(feedback_html(text, f"{notebook or FOLDER_FEEDBACK}: feedback"))
    return paths


FEEDBACK_STYLE = ("body{font-family:sans-serif;max-width:50em;margin:2em auto;color:#222}"
                  "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .6em}"
                  "code{background:#f4f4f4}")


def feedback_html(markdown: str, title: str) -> str:
    """The feedback ``markdown`` as a standalone HTML page, to upload where Markdown is not shown."""
    return standalone_html(title, markdown_html(markdown))


def markdown_html(markdown: str) -> str:
    """``markdown`` as HTML, markdown-it's ``js-default`` preset: tables on, and any HTML in the text (a reason
    quotes the student's own error messages) shown as text, never run; a ``javascript:`` link is not made a link."""
    from markdown_it import MarkdownIt  # jupyter-book's parser, in the lock: only the grader's pages need it

    return str(MarkdownIt("js-default").render(markdown))


def standalone_html(title: str, body: str, style: str = FEEDBACK_STYLE) -> str:
    """``body`` (HTML) as a page of its own: ``title`` escaped, ``style`` inline, nothing fetched."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n{body}</body></html>\n")
