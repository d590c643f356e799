"""Instructor notes, with their figures computed at build time rather than typed in.

``{instructor-notes}`` closes a chapter's prose page: a folded admonition holding the directive's own
content (learning objectives and prerequisites, written by hand), then the time the chapter asks of a
student and the points of its exercises, from ``iolab.homework.notes``::

    ```{instructor-notes}
    :notebooks: notebooks/02-blocking.ipynb
    **Objectives.** ...
    ```

``{instructor-summary}`` prints the same figures for every chapter of ``_toc.yml``, one row each.
Both depend on the notebooks and on ``data/homework/run-times.csv``: a change to either rebuilds them.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from iolab.homework import notes, times


def duration(seconds: float | None) -> str:
    """``"45 s"``, ``"3 min 40 s"``, or "not measured yet"."""
    if seconds is None:
        return "not measured yet"
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes} min {secs} s" if minutes else f"{secs} s"


def _parse(directive: SphinxDirective, markdown: list[str]) -> list[nodes.Node]:
    """``markdown`` parsed as MyST, in a container."""
    box = nodes.container()
    directive.state.nested_parse(StringList(markdown, directive.get_source_info()[0]), directive.content_offset, box)
    return [box]


def _depend(directive: SphinxDirective, paths: list[Path]) -> None:
    for path in [*paths, times.RUN_TIMES]:
        directive.env.note_dependency(str(path))


def time_lines(chapter: notes.ChapterTime, machines: list[str]) -> list[str]:
    """The "Time" paragraph of a chapter's notes."""
    where = f" (measured on {'; '.join(machines)}, by `python -m iolab homework times`)" if machines else (
        " (record them with `python -m iolab homework times --scale quick` and `--scale full`)")
    return [f"**Time.** Reading: about {chapter.reading_min:.0f} min (the chapter and its notebook, at "
            f"{notes.WORDS_PER_MINUTE} words a minute). Predictions and exercises: about {chapter.work_min:.0f} min "
            f"(an estimate: {notes.MINUTES_PER['prediction']} min per prediction, {notes.MINUTES_PER['exercise']} "
            f"per exercise, {notes.MINUTES_PER['written']} per written answer). Running the notebook top to bottom: {duration(chapter.run_s['quick'])} at "
            f"`IOLAB_SCALE=quick`, {duration(chapter.run_s['full'])} at full scale{where}.", ""]


class InstructorNotes(SphinxDirective):
    has_content = True
    option_spec = {"notebooks": directives.unchanged_required}

    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        paths = [root / name for name in self.options["notebooks"].split()]
        _depend(self, paths)
        chapter = notes.chapter_time(Path(self.env.doc2path(self.env.docname)), paths)
        table = notes.exercise_table(paths)
        md = [":::{admonition} Instructor notes", ":class: dropdown", "", *self.content, ""]
        md += time_lines(chapter, notes.measured_on(paths))
        md += ["**Points.** Each exercise is graded by `make grade` (its checks: see the instructors' page, "
               "\"The grader in detail\"). A prediction is answered before the experiment that tests it; a written "
               "answer is scored by a TA (\"Written answers, scored by a TA\").", "",
               "| notebook | exercise | kind | points |", "|---|---|---|---:|"]
        md += [f"| {r.notebook} | `{r.exercise}` | {r.kind} | {r.points:g} |" for r in table.itertuples()]
        md += [f"| **total** | {len(table)} | | **{table.points.sum():g}** |", ":::"]
        return _parse(self, md)


class InstructorSummary(SphinxDirective):
    def run(self) -> list[nodes.Node]:
        root = Path(self.env.srcdir)
        toc = yaml.safe_load((root / "_toc.yml").read_text())
        md = ["| chapter | predictions | exercises | written | points | reading | work | run, quick | run, full |",
              "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for part in toc["parts"]:
            for entry in part["chapters"]:
                paths = [root / f"{s['file']}.ipynb" for s in entry.get("sections", []) if s["file"].startswith("notebooks/")]
                if not paths:
                    continue
                _depend(self, paths)
                prose = root / f"{entry['file']}.md"
                chapter = notes.chapter_time(prose, paths)
                kinds = notes.exercise_table(paths)
                counts = kinds.kind.value_counts()
                md.append(f"| {{doc}}`/{entry['file']}` | {counts.get('prediction', 0)} | {counts.get('exercise', 0)} "
                          f"| {counts.get('written', 0)} | {kinds.points.sum():g} | {chapter.reading_min:.0f} min | {chapter.work_min:.0f} min "
                          f"| {duration(chapter.run_s['quick'])} | {duration(chapter.run_s['full'])} |")
        return _parse(self, md)


def setup(app):
    app.add_directive("instructor-notes", InstructorNotes)
    app.add_directive("instructor-summary", InstructorSummary)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
