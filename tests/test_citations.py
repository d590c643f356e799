"""Every kernel version the prose states is cited in its paragraph, so that a reader can check it at the source.

"On Linux 6.5 and later", "io_uring arrived in 5.1", "a kernel older than 2.6": each is a fact about
the kernel's history that the book cannot measure, so a primary source (a kernel document, a man page,
a commit, in ``book/references.bib``) is cited in the same paragraph, on the book's pages and in the
notebooks' markdown.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_prose import BOOK, NOTEBOOKS

# A version is a kernel's where the paragraph speaks of Linux or the kernel and the number follows a word
# that dates it; Python's own versions ("CPython 3.11", "Python 3.13") follow neither.
ABOUT_THE_KERNEL = re.compile(r"\b(?:Linux|kernels?)\b")
KERNEL_VERSION = re.compile(r"\b(?:Linux|kernels?|since|in|before|after|until|from|than)\s+(?:v)?([2-6]\.\d{1,2})\b(?!\.\d)")
CITE = re.compile(r"\{cite(?::\w+)?\}`[^`]+`")


def paragraphs(markdown: str) -> list[tuple[int, str]]:
    """(first line, text) of each paragraph: lines between blank lines, fence markers left out."""
    found: list[tuple[int, str]] = []
    lines: list[str] = []
    start = 0
    for number, line in enumerate(markdown.splitlines() + [""], 1):
        if not line.strip() or line.strip().startswith("```"):
            if lines:
                found.append((start, " ".join(lines)))
            lines = []
            continue
        if not lines:
            start = number
        lines.append(line.strip())
    return found


def uncited_versions(markdown: str) -> list[tuple[int, str]]:
    """(line, version) for each kernel version stated in a paragraph that cites nothing."""
    return [(line, match[1]) for line, text in paragraphs(markdown)
            if ABOUT_THE_KERNEL.search(text) and not CITE.search(text) for match in KERNEL_VERSION.finditer(text)]


def prose() -> list[tuple[str, str]]:
    """(where, markdown) for every book page and every notebook markdown cell."""
    texts = [(page.name, page.read_text()) for page in sorted(BOOK.glob("*.md"))]
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        cells = json.loads(notebook.read_text())["cells"]
        texts += [(f"{notebook.name} cell {i}", "".join(c["source"])) for i, c in enumerate(cells) if c["cell_type"] == "markdown"]
    return texts


def test_every_kernel_version_in_the_prose_is_cited_in_its_paragraph() -> None:
    found = [f"{where}, line {line}: Linux {version}" for where, text in prose() for line, version in uncited_versions(text)]
    assert not found, "a kernel version stated without a source in its paragraph (cite one from references.bib):\n" + "\n".join(found)


@pytest.mark.parametrize("text", [
    "The first retry comes after 1 s; on Linux 6.5 and later the next four follow a second apart.",
    "io_uring arrived in the kernel in 5.1, with three system calls.",
    "A kernel older than 2.6 woke every child.",
])
def test_a_planted_kernel_version_without_a_citation_is_found(text: str) -> None:
    assert uncited_versions(text), text


@pytest.mark.parametrize("text", [
    "On Linux 6.5 and later the next four follow a second apart {cite}`linux-syn-linear`.",
    "CPython 3.11 checks the eval breaker; the kernel does not care.",
    "Python 3.13 has a free-threaded build.",
])
def test_a_cited_version_and_pythons_own_versions_pass(text: str) -> None:
    assert uncited_versions(text) == [], text
