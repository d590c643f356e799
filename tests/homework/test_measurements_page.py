"""The class's measurements page: a figure per notebook, exercise and name, the reference run marked, no student
named, and a CSV that holds hostile values (forged, not finite, not numbers) drawn without them, never a crash.
``python -m iolab homework measurements CSV`` draws it from the CSV alone."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest

from iolab.commands import main
from iolab.homework import measurements, measurements_page


def _csv(path: Path, values: list[object], reference: object = "") -> Path:
    rows = [{"student": f"student{k}", "notebook": "06-asyncio-trio.ipynb", "exercise": "ex-06-trio-pool",
             "name": "thread_stalled_pct", "summary": "value", "value": v, "unit": "%", "measured_on": "Grader CPU",
             "student_machine": f"Laptop of student{k}", "reference": reference,
             "reference_machine": "reference run: Xeon · 2 cores" if reference != "" else ""}
            for k, v in enumerate(values)]
    rows.append({**rows[0], "name": "runs:lag_ms", "summary": "median of lag_ms", "unit": "ms", "value": 3.0,
                 "reference": "", "reference_machine": ""})
    pd.DataFrame(rows, columns=measurements.COLUMNS).to_csv(path, index=False)
    return path


def test_hostile_values_are_left_out_and_counted_not_a_crash(tmp_path: Path) -> None:
    csv = _csv(tmp_path / "class-measurements.csv", [90.0, 95.0, 97.0, 1e300, "nan", "inf", "fast", "<script>"], 96.8)
    page = measurements_page.write_page(csv).read_text()
    assert measurements_page.figures(page) == 2
    assert "3 submissions, measured on Grader CPU; 5 left out (not a number, or over 30x from the class&#x27;s median)" in page
    assert "<script>" not in page and "student0" not in page and "Laptop" not in page
    assert "no reference run for this name" in page  # the table's name has none


def test_kept_leaves_out_what_is_not_finite_or_far_from_the_class() -> None:
    values, left_out = measurements_page.kept(pd.Series(["1", "2", "3", "-1e9", "nan", "x"]))
    assert values.tolist() == [1.0, 2.0, 3.0] and left_out == 3
    zeros, none = measurements_page.kept(pd.Series([0.0, 0.0, 0.0]))
    assert zeros.tolist() == [0.0, 0.0, 0.0] and none == 0


def test_an_empty_csv_makes_a_page_that_says_so(tmp_path: Path) -> None:
    csv = tmp_path / "class-measurements.csv"
    pd.DataFrame(columns=measurements.COLUMNS).to_csv(csv, index=False)
    page = measurements_page.write_page(csv).read_text()
    assert measurements_page.figures(page) == 0 and "No exercise graded here measured anything." in page


def test_the_command_draws_the_page_from_the_csv_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "grading").mkdir()
    made = _csv(tmp_path / "grading" / "class-measurements.csv", [90.0, 95.0], 96.8)
    alone = tmp_path / "lecture" / "class-measurements.csv"
    alone.parent.mkdir()
    shutil.move(made, alone)
    shutil.rmtree(tmp_path / "grading")
    assert main(["homework", "measurements", str(alone), "--out", str(tmp_path / "lecture" / "week3.html")]) == 0
    assert capsys.readouterr().out.strip() == f"2 figures: {tmp_path / 'lecture' / 'week3.html'}"
    assert measurements_page.figures((tmp_path / "lecture" / "week3.html").read_text()) == 2


def test_the_command_refuses_a_missing_csv_by_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["homework", "measurements", str(tmp_path / "none.csv")])
    assert "none.csv: no such file" in capsys.readouterr().err
