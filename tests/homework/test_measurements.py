"""The class's measurements: grading a toy class keeps what each submission's run measured (its ``# measured``
names, a table as its columns' medians) in class-measurements.csv beside grades.csv, with the reference run's
value where the reference table names one, and a submission that forges its measurements costs itself its
values, not the batch. The class is graded end to end like ``test_classes``' (the toy course of
``homework_notebooks``, without a sandbox: a few seconds a student)."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from homework_notebooks import ROOT, cell_index, course, nbgrader_cell, paste_solutions, read, statement, write
from iolab.homework import checker, checks, classes, editions, grading, markup, measurements, measurements_page
from iolab.homework.grading import Row
from iolab.kit import student as kit_student

NOTEBOOK = "lab.ipynb"
MACHINE_LINE = "Student laptop · 8 cores · 16.0 GiB · Linux 6.1 · Python 3.11 · IOLAB_SCALE=quick · IOLAB_STUDENT=ada"


def measured_course() -> nbformat.NotebookNode:
    """An instructor notebook whose one exercise's given cell measures a rate and a table (``# measured``)."""
    md, code = "markdown", "code"
    return course([
        nbgrader_cell(md, "# A measured course"),
        nbgrader_cell(code, "import pandas as pd", role="setup"),
        nbgrader_cell(md, statement("ex-m", "Double the measured rate into `answer`.")),
        nbgrader_cell(code, "rate_rps = 250.0  # measured\n"
                            "runs = pd.DataFrame({'lag_ms': [1.0, 2.0, 4.0], 'way': ['a', 'b', 'c']})  # measured",
                      "ex-m", "given"),
        nbgrader_cell(code, "### BEGIN SOLUTION\nanswer = 2 * rate_rps\n### END SOLUTION", "ex-m", "code"),
        nbgrader_cell(code, "assert len(runs) == 3\n### BEGIN HIDDEN TESTS\nassert answer == 2 * rate_rps\n"
                            "### END HIDDEN TESTS", "ex-m", "check", 1),
    ])


def _hand_in(subs: Path, student: str, solution: str | None = None, printed: str | None = None,
             recorded: object = None) -> None:
    """``student``'s submission: the instructor's solution (or ``solution``), its setup cell's output ``printed``,
    and ``recorded`` as the output of the given cell's ``student.record`` (what their own machine measured)."""
    course = measured_course()
    nb = paste_solutions(editions.student_edition(course), course)
    if solution is not None:
        nb.cells[cell_index(nb, "ex-m-code")].source = solution
    if printed is not None:
        nb.cells[cell_index(nb, "setup")].outputs = [nbformat.v4.new_output("stream", name="stdout", text=printed + "\n")]
    if recorded is not None:
        nb.cells[cell_index(nb, "ex-m-given")].outputs = [
            nbformat.v4.new_output("display_data", data={kit_student.RECORD_MIME: recorded, "text/plain": ""})]
    write(nb, subs / student / NOTEBOOK)


@pytest.fixture(scope="module")
def graded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, classes.GradeSummary]:
    """A class of three graded end to end, once for this file: ada and bob honest (ada's notebook says her
    machine), eve forging her rate as 1e300, and a reference table naming the rate's reference data."""
    tmp_path = tmp_path_factory.mktemp("class")
    write(measured_course(), tmp_path / "notebooks" / NOTEBOOK)
    subs = tmp_path / "submissions"
    _hand_in(subs, "ada", printed=MACHINE_LINE, recorded={"rate_rps": {"": 240.0}, "runs": {"lag_ms": 2.5}})
    _hand_in(subs, "bob", recorded={"rate_rps": {"": "fast"}, "runs": {"lag_ms": float("nan")}, "x": [1] * 5})
    _hand_in(subs, "eve", solution="rate_rps = 1e300\nanswer = 2 * rate_rps")
    reference = tmp_path / "reference"
    reference.mkdir()
    pd.DataFrame({"way": ["x", "y", "y"], "rps": [1.0, 300.0, 320.0]}).to_csv(reference / "07-rates.csv", index=False)
    (reference / "07-rates.json").write_text(json.dumps({"cpu": "Reference CPU", "cores": 2, "kernel": "6.18",
                                                         "scale": "full"}))
    table = tmp_path / "measured-reference.csv"
    table.write_text("notebook,name,data,where,column\nlab,rate_rps,07-rates,way == 'y',rps\n")
    with pytest.MonkeyPatch.context() as monkeypatch:  # while grading only: later tests read the course's own
        monkeypatch.setattr(measurements, "REFERENCES", table)
        monkeypatch.setattr(measurements, "REFERENCE_DATA", reference)
        summary = classes.grade_class(classes.prepare(subs, tmp_path / "notebooks", sandboxed=False, time_limit=60))
    return subs, summary


def test_grading_writes_a_row_per_student_exercise_and_measured_name_beside_grades_csv(graded) -> None:
    subs, summary = graded
    assert summary.reports["measurements"] == subs / "class-measurements.csv"
    frame = measurements.read(subs / "class-measurements.csv")
    assert list(frame.columns) == measurements.COLUMNS
    honest = frame[frame.student.isin(["ada", "bob"])].sort_values(["student", "name"])
    assert honest[["student", "exercise", "name", "summary", "value", "unit"]].values.tolist() == [
        ["ada", "ex-m", "rate_rps", "value", "250.0", "requests/s"],
        ["ada", "ex-m", "runs:lag_ms", "median of lag_ms", "2.0", "ms"],
        ["bob", "ex-m", "rate_rps", "value", "250.0", "requests/s"],
        ["bob", "ex-m", "runs:lag_ms", "median of lag_ms", "2.0", "ms"]]
    # The reference: the median of the rows the table's query selects, labelled with that run's machine and scale
    rate = frame[frame.name == "rate_rps"]
    assert set(rate.reference) == {"310.0"} and rate.reference_machine.iloc[0].endswith("Reference CPU · 2 cores · Linux 6.18 · full scale")
    assert set(frame[frame.name == "runs:lag_ms"].reference) == {""}
    # The student's own machine, as the notebook handed in printed it; bob's notebook printed none
    assert set(frame[frame.student == "ada"].student_machine) == {MACHINE_LINE.split(" · IOLAB_SCALE")[0]}
    assert set(frame[frame.student == "bob"].student_machine) == {""}


def test_a_forged_measurement_is_refused_by_the_grader_and_kept_out_of_the_csv_not_the_batch(graded) -> None:
    subs, summary = graded
    eve = [r for r in summary.rows if r.student == "eve"]
    assert [(r.status, r.points) for r in eve] == [("failed", 0.0)] and "rate_rps" in eve[0].reason
    frame = measurements.read(subs / "class-measurements.csv")
    assert "1e+300" not in set(frame.value) and set(frame[frame.student == "eve"].name) <= {"runs:lag_ms"}
    assert "measured" not in pd.read_csv(subs / "grades.csv").columns


def test_the_page_has_a_figure_per_measured_name_and_names_no_student(graded) -> None:
    subs, summary = graded
    page = summary.reports["measurements page"].read_text()
    assert measurements_page.figures(page) == 2
    # the figures' titles are inside their PNGs; the captions say the names
    assert "lab.ipynb, ex-m: rate_rps, value; 2 submissions, measured on " in page and "runs:lag_ms, median of lag_ms" in page
    text = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", page)  # a PNG's base64 may spell anything
    for secret in ("ada", "bob", "eve", "Student laptop"):
        assert secret not in text


def test_a_regrade_replaces_only_its_students_measurements(graded, tmp_path: Path) -> None:
    subs = Path(shutil.copytree(graded[0], tmp_path / "submissions"))
    _hand_in(subs, "bob", solution="answer = 2 * rate_rps\nrate_rps = 'fast'")
    classes.grade_class(classes.prepare(subs, graded[0].parent / "notebooks", sandboxed=False, time_limit=60,
                                        students=["bob"]))
    frame = measurements.read(subs / "class-measurements.csv")
    assert sorted(frame[frame.student == "ada"].name) == ["rate_rps", "runs:lag_ms"]
    assert sorted(frame[frame.student == "bob"].name) == ["runs:lag_ms"]  # a string is no measurement


def test_a_reference_line_that_no_longer_fits_its_data_gives_no_reference(tmp_path: Path) -> None:
    pd.DataFrame({"rps": [1.0, 3.0]}).to_csv(tmp_path / "d.csv", index=False)
    table = tmp_path / "t.csv"
    table.write_text("notebook,name,data,where,column\na,x,d,,rps\na,y,d,nope == 1,rps\na,z,missing,,rps\n"
                     "a,w,d,,no_column\n")
    assert measurements.references(table, tmp_path) == {("a", "x"): (2.0, "the reference run")}


def test_the_courses_reference_table_finds_every_line_in_the_reference_data() -> None:
    lines = pd.read_csv(measurements.REFERENCES)
    assert len(measurements.references()) == len(lines) > 0


def test_each_reference_line_names_a_measured_name_a_check_of_its_notebook_reads() -> None:
    for line in pd.read_csv(measurements.REFERENCES).itertuples(index=False):
        source = read(ROOT / "notebooks" / f"{line.notebook}.ipynb")
        jobs = [grading._exercise_job(source, e) for e in markup.exercises(source) if e.graded]
        kept = {n for job in jobs for n in checker._measured_names(job) & {n for c in job.checks for n in c.names}}
        assert line.name.split(":")[0] in kept, f"{line.notebook}: no check reads a measured {line.name}"


@pytest.mark.parametrize("name, unit", [("lag_p50_ms", "ms"), ("runs:stalled_pct", "%"), ("held_rps", "requests/s"),
                                        ("runs:jobs_per_s", "per s"), ("runs:seconds", "s"),
                                        ("share", "fraction"), ("noise:duration_s", "s"), ("count", "")])
def test_a_names_unit_comes_from_its_ending(name: str, unit: str) -> None:
    assert measurements.unit(name) == unit


def test_a_row_without_measurements_adds_nothing(tmp_path: Path) -> None:
    rows = [Row("ada", NOTEBOOK, "ex-a", 1.0, 1.0, "passed", "", 0.1)]
    assert measurements.table(rows, tmp_path, reference={}).empty


def test_what_a_students_own_machine_recorded_is_kept_beside_the_graders_value(graded) -> None:
    subs, _ = graded
    frame = measurements.read(subs / measurements.CSV_NAME).set_index(["student", "name"])
    assert float(frame.loc[("ada", "rate_rps"), "student_value"]) == 240.0
    assert float(frame.loc[("ada", "runs:lag_ms"), "student_value"]) == 2.5
    assert float(frame.loc[("ada", "rate_rps"), "value"]) == 250.0  # the grader's own run of the given cell
    # bob's output was forged (a word, NaN, a list): nothing of it is taken
    assert frame.loc[("bob", "rate_rps"), "student_value"] == "" and frame.loc[("bob", "runs:lag_ms"), "student_value"] == ""
    page = (subs / measurements_page.PAGE_NAME).read_text()
    assert "own machines recorded them (handed in, not graded)" in page


def test_the_student_edition_records_what_its_given_cells_measure_and_the_record_runs() -> None:
    edition = editions.student_edition(measured_course())
    given = edition.cells[cell_index(edition, "ex-m-given")].source
    assert given.endswith("iolab.kit.student.record(rate_rps=rate_rps, runs=runs)")
    assert checks.parameters(given)[1] == {"rate_rps", "runs"}  # the grader skips the record, a measured name's reader
    namespace: dict[str, object] = {}
    shown = []
    with pytest.MonkeyPatch.context() as monkeypatch:
        import IPython.display
        monkeypatch.setattr(IPython.display, "display", lambda data, raw=False: shown.append(data))
        exec(compile("import pandas as pd\n" + given, "<given>", "exec"), namespace)
    assert shown == [{kit_student.RECORD_MIME: {"rate_rps": {"": 250.0}, "runs": {"lag_ms": 2.0}}, "text/plain": ""}]


def test_a_numpy_number_is_recorded_as_a_number() -> None:
    import numpy as np
    assert kit_student.recorded(share=np.float64(0.9), n=np.int64(3), flag=True) == {"share": {"": 0.9}, "n": {"": 3.0}}
