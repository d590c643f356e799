"""No fixed-choice answer stands above its question: not in the chapter's prose, not in the notebook."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest

from iolab.homework import leaks, markup
from homework_notebooks import COURSE_NOTEBOOKS, ROOT

# Keys that are names or terms the chapter has to use before asking (a model, a runtime, an error, a
# design): a sentence that merely names one is not a leak. What each of these questions asks (a ranking,
# an order, a property) the prose above it does not state; each entry was read, 2026-11-27.
NAMES = {
    "pred-creation": {"thread", "asyncio task"},  # the three things ranked by cost
    "pred-short-write": {"EAGAIN", "partial"},  # the outcomes defined before; the question is their order
    "pred-nonblocking-file": {"D"},  # the states R, S, D, Z are defined together; which one applies is asked
    "pred-balance": {"prefork"},  # the server's name
    "pred-models": {"smaller"},  # the prose says the notebook asks "larger or smaller"
    "pred-process-io": {"asyncio"},
    "pred-failure": {"cancelled"},  # inside the name `trio.Cancelled`
    "pred-counters": {"batched"},
    "pred-locked-stream": {"queue + group commit"},  # the design's name
    "pred-12-slowloris": {"asyncio", "trio"},
}


def prose_page(notebook: Path) -> Path | None:
    """The chapter page the book shows before ``notebook``: book/NN-*.md for notebooks/NN-*.ipynb."""
    pages = sorted((ROOT / "book").glob(f"{notebook.stem[:2]}-*.md"))
    return pages[0] if pages else None


@pytest.mark.parametrize("path", COURSE_NOTEBOOKS, ids=lambda p: p.stem)
def test_no_sentence_above_a_question_states_its_fixed_choice_answer(path: Path) -> None:
    found = [leak for leak in leaks.leaks(path, prose_page(path)) if leak.key not in NAMES.get(leak.label, set())]
    assert not found, "\n".join(f"{f.label} {f.key!r} in {f.where}: {f.sentence[:200]}" for f in found)


def test_fixed_choice_keys_are_found_and_a_key_written_above_its_question_is_caught(tmp_path: Path) -> None:
    course = ROOT / "notebooks" / "06-asyncio-trio.ipynb"
    nb = nbformat.read(course, as_version=4)
    uvloop = next(e for e in markup.exercises(nb) if e.label == "pred-uvloop")
    keys = leaks.fixed_choice_keys(nb, uvloop)
    assert len(keys) == 1
    start = markup.exercise_regions(nb)["pred-uvloop"].first_cell
    nb.cells.insert(start, nbformat.v4.new_markdown_cell(f"Spoiler: the answer is {keys[0]}, of course."))
    nbformat.write(nb, tmp_path / course.name)
    assert [leak.key for leak in leaks.leaks(tmp_path / course.name, None)] == keys


@pytest.mark.parametrize("label", sorted(NAMES))
def test_every_name_allowed_is_still_a_key(label: str) -> None:
    keys = set()
    for path in COURSE_NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        for exercise in markup.exercises(nb):
            if exercise.label == label:
                keys |= set(leaks.fixed_choice_keys(nb, exercise))
    assert NAMES[label] <= keys, f"{label}: {sorted(NAMES[label] - keys)} are no longer keys: drop them from NAMES"
