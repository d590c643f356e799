"""Every figure of the book can be read without seeing it: alt text, a caption, a number, its data.

- A chapter page shows a notebook's figure with ``{glued-figure}`` (book/_ext/glued_figure.py), never a
  bare ``{glue}``: the directive requires alt text, a caption and a name, and links the data file.
- Each notebook cell that draws a figure carries its alt text in its metadata (``mystnb.image.alt``),
  which myst-nb gives the image on the notebook's page.
- Alt text says what the figure shows in words; like the prose, it types no measured figure (a
  configured one that the chapter's prose may type, in ``test_prose.ALLOWED``, is fine).
The rendered HTML is checked too: `make check-site` fails on an image whose alt text is a file name.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

from test_prose import ALLOWED, FIGURE

ROOT = Path(__file__).resolve().parents[1]
PAGES = sorted((ROOT / "book").glob("*.md"))
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
DRAWS = re.compile(r"plots\.figure\(|plt\.subplots\(")
BARE_GLUE = re.compile(r"^```\{glue\}\s+(\S*-fig-\S*)", re.MULTILINE)
GLUED_FIGURE = re.compile(r"^```\{glued-figure\}\s+(\S+)\n((?::\w+:.*\n)+)", re.MULTILINE)
MIN_WORDS = 8


def allowed(chapter: str) -> set[str]:
    """The figures the prose of chapter ``chapter`` ("07") may type: configured or documented, with reasons."""
    return {figure for page, figure, _ in ALLOWED if page.startswith(f"{chapter}-")}


def alt_problem(alt: str | None, chapter: str = "") -> str | None:
    """Why ``alt`` is not good alt text for a figure of ``chapter``, or None."""
    if not alt or len(alt.split()) < MIN_WORDS:
        return f"needs alt text of at least {MIN_WORDS} words (what it shows, what to conclude)"
    found = (f"{m[1]} {m[2]}".replace(" %", "%") for m in FIGURE.finditer(alt))
    if typed := [figure for figure in found if figure not in allowed(chapter)]:
        return f"alt text types measured figures {typed}: describe the shape instead"
    return None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_chapter_figures_are_glued_figures_with_alt_text_and_data(page: Path) -> None:
    text = page.read_text()
    assert not BARE_GLUE.findall(text), f"figures pasted with a bare {{glue}}: {BARE_GLUE.findall(text)}"
    for key, options in GLUED_FIGURE.findall(text):
        fields = dict(re.findall(r"^:(\w+):\s*(.*)$", options, re.MULTILINE))
        assert (problem := alt_problem(fields.get("alt"), page.name[:2])) is None, f"{key}: {problem}"
        assert fields.get("name", "").startswith("fig-"), f"{key}: :name: fig-... lets the prose refer to it"
        if "data" in fields:
            assert (ROOT / "data" / "reference" / f"{fields['data']}.csv").is_file(), f"{key}: no reference data {fields['data']}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_every_cell_that_draws_a_figure_has_alt_text(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    drawing = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code" and DRAWS.search(c.source)]
    assert drawing, "every course notebook draws a figure"
    missing = {i: problem for i, c in drawing
               if (problem := alt_problem(c.metadata.get("mystnb", {}).get("image", {}).get("alt"), path.name[:2]))}
    assert not missing, f"cells without good alt text: {missing}"


@pytest.mark.parametrize("alt", [None, "A chart.", "Throughput rises to 1,200 req/s and stays flat past two clients."])
def test_the_alt_text_rule_refuses_none_short_and_typed_figures(alt: str | None) -> None:
    assert alt_problem(alt) is not None


def test_the_alt_text_rule_accepts_a_description() -> None:
    assert alt_problem("Throughput rises with the clients until every core is busy, then stays flat.") is None
