"""``python -m iolab homework solo``: the one list of notebooks that need the machine to themselves,
which ``make test`` reads and the grader's ``batch.solo`` decides."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from iolab.commands import main

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def test_solo_prints_the_notebooks_whose_metadata_says_solo(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for name, meta in [("a.ipynb", {"iolab": {"solo": True}}), ("b.ipynb", {}), ("c.ipynb", {"iolab": {"solo": False}})]:
        nb = nbformat.v4.new_notebook()
        nb.metadata.update(meta)
        nbformat.write(nb, tmp_path / name)
    assert main(["homework", "solo", *(str(tmp_path / n) for n in ["a.ipynb", "b.ipynb", "c.ipynb"])]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'a.ipynb'}\n"


def test_solo_lists_the_course_notebooks_as_their_json_says(capsys: pytest.CaptureFixture[str]) -> None:
    paths = sorted(NOTEBOOKS.glob("*.ipynb"))
    expected = [p for p in paths if json.loads(p.read_text())["metadata"].get("iolab", {}).get("solo")]
    assert expected, "no course notebook is solo: is NOTEBOOKS the course's folder?"
    assert main(["homework", "solo", *map(str, paths)]) == 0
    assert capsys.readouterr().out.split() == list(map(str, expected))
