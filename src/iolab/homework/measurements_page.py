"""The class's measurements as one HTML page to project: a figure per exercise and measured name, no student named.

Each figure is the class's values of one name (``measurements``: one per student) as a box with every
value drawn over it, and the reference run's value, where there is one, as a dashed line labelled with
its machine. The page is a single file (its figures are PNGs inside it), so it opens in any browser,
offline, without building the book. It reads nothing but ``class-measurements.csv`` and never shows
the ``student`` or ``student_machine`` columns: a class's figures can go on a lecture's screen.

The CSV is written from what submissions handed in, so the page takes nothing in it on trust: a value
that is not a number, or not finite, is left out, and so is one more than :data:`FAR` times from the
class's median (a forged 1e300 would squash every other point into one pixel); the caption counts them.
"""

from __future__ import annotations

import base64
import html
import io
from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from iolab.homework.lateness import open_replacement
from iolab.homework.measurements import read
from iolab.homework.reports import standalone_html
from iolab.kit import plots

PAGE_NAME = "class-measurements.html"
# Beyond this factor from the class's median a value is not drawn: the grader's own plausibility bound
# (``plausible.FACTOR``) for a student's value against the checker's.
FAR = 30.0
STYLE = ("body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}"
         "figure{margin:2em 0}figcaption{color:#555;font-size:90%}img{max-width:100%}")


def kept(values: pd.Series) -> tuple[pd.Series, int]:
    """The values to draw (numbers, finite, within :data:`FAR` of the class's median), and how many were left out."""
    numbers = pd.to_numeric(values, errors="coerce").astype(float)
    finite = numbers[np.isfinite(numbers)]
    # The class's middle size: the median's, or the median size of the values where that is 0.
    size = abs(float(finite.median())) or float(finite.abs().median()) if len(finite) else 0.0
    if size > 0:
        finite = finite[finite.abs() <= FAR * size]
    return finite, len(values) - len(finite)


def _reference(group: pd.DataFrame) -> tuple[float | None, str]:
    """The reference run's value for a name and its machine, if the CSV has one."""
    values = pd.to_numeric(group["reference"], errors="coerce").dropna()
    values = values[np.isfinite(values)]
    if not len(values):
        return None, ""
    machine = next((m for m in group["reference_machine"] if m), "the reference run")
    return float(values.iloc[0]), str(machine)


def draw(values: pd.Series, reference: float | None, reference_machine: str, title: str, label: str,
         theirs: pd.Series | None = None) -> Figure:
    """One name's figure: the class's values as a box with each value over it (a second row for the values the
    students' own machines recorded, where any did), the reference run as a dashed line."""
    plots.use_style()
    rows = [("graded here", values, plots.PALETTE["asyncio"])]
    if theirs is not None and len(theirs):
        rows.append(("their machines, as handed in", theirs, plots.PALETTE["threads"]))
    fig = Figure(figsize=(7.0, 1.6 + 0.8 * len(rows)), layout="constrained")
    ax = fig.subplots()
    jitter = np.random.default_rng(0)
    for y, (name, shown, color) in enumerate(rows, start=1):
        if len(shown):
            ax.boxplot(shown.to_numpy(), positions=[y], orientation="horizontal", widths=0.5, showfliers=False)
            ax.scatter(shown.to_numpy(), y + jitter.uniform(-0.12, 0.12, len(shown)), s=18, alpha=0.7, color=color,
                       zorder=3, label=f"{name} ({len(shown)})")
    if reference is not None:
        ax.axvline(reference, ls="--", lw=1.5, color=plots.PALETTE["reference"], label=reference_machine)
    ax.set_yticks([])
    ax.set_xlabel(label)
    ax.set_title(title)
    if any(len(shown) for _, shown, _ in rows) or reference is not None:
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.35), fontsize=8)
    return fig


def _png(fig: Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100, bbox_inches="tight")
    return base64.b64encode(buffer.getvalue()).decode()


def _said(text: object) -> str:
    return html.escape(str(text))


def page(frame: pd.DataFrame) -> str:
    """The page for the class's measurements ``frame`` (``measurements.read``): a figure per notebook, exercise and name."""
    parts = ["<h1>The class's measurements</h1>"]
    parts.append("<p>Each figure is one measured name of one exercise: a point per student (no student is named), "
                 "the box their middle half, the dashed line the reference run. The grader measured each value "
                 "when it ran the submission, on the machine each caption names; a second row, where there is one, "
                 "shows the same name as each student's own machine measured it (kept in the notebook they handed "
                 "in, so shown, not graded).</p>")
    if frame.empty:
        parts.append("<p>No exercise graded here measured anything.</p>")
    for (notebook, exercise, name), group in frame.groupby(["notebook", "exercise", "name"], sort=True):
        values, left_out = kept(group["value"])
        theirs, _ = kept(group["student_value"].replace("", np.nan).dropna())
        reference, reference_machine = _reference(group)
        summary, unit = str(group["summary"].iloc[0]), str(group["unit"].iloc[0])
        label = f"{name} ({unit})" if unit else str(name)
        fig = draw(values, reference, reference_machine, f"{exercise} · {name}", label, theirs)
        where = "; ".join(sorted({m for m in group["measured_on"] if m})) or "a machine the CSV does not name"
        caption = f"{notebook}, {exercise}: {name}, {summary}; {len(values)} submissions, measured on {where}"
        if len(theirs):
            caption += f"; {len(theirs)} as the students' own machines recorded them (handed in, not graded)"
        if left_out:
            caption += f"; {left_out} left out (not a number, or over {FAR:g}x from the class's median)"
        if reference is None:
            caption += "; no reference run for this name"
        parts.append(f"<figure><img alt='{_said(caption)}' src='data:image/png;base64,{_png(fig)}'>"
                     f"<figcaption>{_said(caption)}</figcaption></figure>")
    return standalone_html("The class's measurements", "\n".join(parts) + "\n", STYLE)


def write_page(csv_path: Path, out: Path | None = None) -> Path:
    """Write the page for ``csv_path`` to ``out`` (default: ``class-measurements.html`` beside it); its path."""
    out = out or csv_path.with_name(PAGE_NAME)
    with open_replacement(out) as temporary:
        temporary.write_text(page(read(csv_path)))
    return out


def figures(text: str) -> int:
    """How many figures a page holds (for its tests and the command's summary)."""
    return text.count("<figure>")

