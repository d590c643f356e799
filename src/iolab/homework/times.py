"""How long each notebook takes to run, measured: the run times the instructor notes quote.

``measure`` runs every code cell of a notebook in a fresh kernel at one scale (as a student running
it top to bottom would) and ``record`` keeps one row per notebook and scale in
``data/homework/run-times.csv``, with the machine it ran on and the date. The book reads that file;
nobody types a run time into prose.
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import nbformat
import pandas as pd

from iolab.homework.execution import execute_cells
from iolab.kit import machine
from iolab.kit import scale as scales
from iolab.kit.paths import data_dir

RUN_TIMES = data_dir() / "homework" / "run-times.csv"
# A full-scale notebook may run for minutes; twice the slowest seen (07, about 6 min) is the limit.
TIME_LIMIT = 1800.0


@dataclass(frozen=True)
class RunTime:
    """One notebook's run, top to bottom: its seconds, the first error (empty if none), where and when."""

    notebook: str
    scale: str
    seconds: float
    error: str
    machine: str
    measured: str


def measure(path: Path, scale: str, time_limit: float = TIME_LIMIT) -> RunTime:
    """Run every code cell of notebook ``path`` at ``scale`` in a fresh kernel; what it took."""
    if scale not in scales.SCALES:
        raise ValueError(f"scale {scale!r}: use one of {', '.join(scales.SCALES)}")
    nb = nbformat.read(path, as_version=4)
    code = [i for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    run = execute_cells(nb, code, time_limit, {scales.ENV: scale}, cwd=str(path.parent))  # as nbval runs it
    errors = [c.error for c in run.cells.values() if c.error]
    error = run.stopped or (f"cell raised {errors[0]}" if errors else "")
    return RunTime(path.name, scale, round(run.seconds, 1), error, machine.describe(),
                   datetime.date.today().isoformat())


def load(path: Path = RUN_TIMES) -> pd.DataFrame:
    """The recorded run times (an empty table with the right columns when none are)."""
    columns = [f.name for f in fields(RunTime)]
    if not path.exists():
        return pd.DataFrame(columns=columns)
    return pd.read_csv(path, keep_default_na=False)[columns]


def record(runs: Iterable[RunTime], path: Path = RUN_TIMES) -> pd.DataFrame:
    """Add ``runs`` to the table at ``path``, each replacing the older row of its notebook and scale; the table."""
    new = pd.DataFrame([asdict(r) for r in runs])
    table = pd.concat([load(path), new], ignore_index=True).drop_duplicates(["notebook", "scale"], keep="last")
    table = table.sort_values(["notebook", "scale"]).reset_index(drop=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    table.to_csv(path, index=False)
    return table


def run_seconds(notebook: str, scale: str, table: pd.DataFrame | None = None) -> float | None:
    """The recorded seconds of ``notebook`` at ``scale`` (a run that failed does not count); None if none."""
    table = load() if table is None else table
    rows = table[(table.notebook == notebook) & (table.scale == scale) & (table.error == "")]
    return float(rows.seconds.iloc[-1]) if len(rows) else None
