"""No comparison is typed beside a measurement: the run decides it (``iolab.kit.claims``), and the prose pastes its words.

The sibling of ``test_prose`` (which keeps measured *numbers* glued), for the *conclusions* drawn from
them. On every page of ``book/`` it finds

- a sentence that types a comparison ("faster", "grows", "near one", "the same"...) in a paragraph
  that pastes a measured figure, unless the sentence pastes a claim's words (``::NN-claim-NAME``),
  which its run decided;
- a glued figure's alt text that states a direction: alt text says what is drawn, the claims say
  what it shows.

The book predates this rule, so what it found on the day the rule came in is the backlog in
``typed_conclusions.txt``: each line a page and the sentence's start. A finding not in the backlog
fails (a new typed conclusion); a backlog line nothing matches any more fails too (it was converted
to a claim or reworded: strike it), so the list only shrinks.

And every claim a page pastes is declared in its chapter's notebook, and a page that pastes one ends
with its "What held on this machine" table.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from test_prose import BOOK, NOTEBOOKS, units_of_text

BACKLOG = Path(__file__).with_name("typed_conclusions.txt")
COMPARATIVE = re.compile(
    r"\b(faster|slower|larger|smaller|higher|lower|fewer|grows?|grew|growing|falls?|fell|rises?|rose|jumps?|"
    r"flatten\w*|near(?:ly)? (?:\d|one|zero)|doubles?|halves|twice|outperforms?|beats?|better|worse|"
    r"far (?:below|above)|stays?|the same)\b", re.IGNORECASE)
GLUE = re.compile(r"\{glue:text\}`[^`]*`")
CLAIM = re.compile(r"::(\d\d)-claim-([\w-]+)")
ALT = re.compile(r"^\s*:alt:(.*)$")
PART = re.compile(r'Claims\(\s*"\d\d",\s*part="([\w-]+)"')
WHAT_HELD = "## What held on this machine"
KEY_CHARS = 90


def key(page: str, text: str) -> str:
    """A finding as the backlog names it: the page, a tab, and the start of its text (glues shown as <g>)."""
    return f"{page}\t{' '.join(GLUE.sub('<g>', text).split())[:KEY_CHARS]}"


def typed_conclusions(markdown: str) -> list[tuple[int, str, str]]:
    """(line, word, text) for each typed comparison beside a glued figure and each alt text with a direction."""
    units = units_of_text(markdown)
    glued_paragraphs = {line for line, text in units if GLUE.search(text)}
    found = [(line, match[0], text) for line, text in units
             if line in glued_paragraphs and not CLAIM.search(text) and (match := COMPARATIVE.search(GLUE.sub("", text)))]
    for number, line in enumerate(markdown.splitlines(), 1):
        if (alt := ALT.match(line)) and (match := COMPARATIVE.search(alt[1])):
            found.append((number, match[0], "alt: " + alt[1].strip()))
    return sorted(found)


def code_of(chapter: str) -> str:
    """The code cells of the chapter's notebooks, as one text."""
    cells = [cell for nb in sorted(NOTEBOOKS.glob(f"{chapter}-*.ipynb")) for cell in json.loads(nb.read_text())["cells"]]
    return "\n".join("".join(cell["source"]) for cell in cells if cell["cell_type"] == "code")


def backlog() -> set[str]:
    lines = BACKLOG.read_text().splitlines()
    return {line for line in lines if line and not line.startswith("#")}


def findings() -> set[str]:
    return {key(page.name, text) for page in sorted(BOOK.glob("*.md")) for _, _, text in typed_conclusions(page.read_text())}


def test_no_new_typed_conclusion() -> None:
    new = sorted(findings() - backlog())
    assert not new, ("a comparison typed beside a measurement (decide it with iolab.kit.claims and paste its words), "
                     "or a direction in alt text:\n" + "\n".join(new))


def test_the_backlog_only_shrinks() -> None:
    gone = sorted(backlog() - findings())
    assert not gone, f"converted or reworded: strike these lines from {BACKLOG.name}:\n" + "\n".join(gone)


def test_every_pasted_claim_is_declared_in_its_notebook_and_its_page_ends_with_what_held() -> None:
    problems = []
    for page in sorted(BOOK.glob("*.md")):
        text = page.read_text()
        pasted = set(CLAIM.findall(text))
        for chapter, name in sorted(pasted):
            if not re.search(rf'Claim\(\s*"{re.escape(name)}"', code_of(chapter)):
                problems.append(f"{page.name}: pastes claim {chapter}-claim-{name}, which no {chapter} notebook declares")
        if pasted and (WHAT_HELD not in text or f"{{glue}} {sorted(pasted)[0][0]}-what-held" not in text):
            problems.append(f"{page.name}: pastes claims but has no '{WHAT_HELD}' section pasting its what-held table")
        for chapter in sorted({chapter for chapter, _ in pasted}):  # a notebook's part of a chapter: its own table
            for part in PART.findall(code_of(chapter)):
                if f"{{glue}} {chapter}-{part}-what-held" not in text:
                    problems.append(f"{page.name}: does not paste {chapter}-{part}-what-held, the table of Claims(part={part!r})")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("text", [
    "The cost was {glue:text}`nb::switches:.2f` per connection. It does not grow with the children.",
    "Pre-fork served {glue:text}`nb::rps:,.0f` req/s, faster than the loop.",
    "The ratio was {glue:text}`nb::ratio:.2f`, near 1.",
    "```{glued-figure} 04-fig\n:doc: x.ipynb\n:alt: Throughput rises with the clients.\n\nA caption.\n```",
])
def test_a_planted_typed_conclusion_is_found(text: str) -> None:
    assert typed_conclusions(text), text


@pytest.mark.parametrize("text", [
    "Pre-fork against one loop: {glue:text}`nb::04-claim-prefork-over-loop:s`, and {glue:text}`nb::rps:,.0f` req/s.",
    "Pre-fork is faster, says the source {cite}`silkjs`.",  # no measurement in the paragraph: a statement of the source's
    "```{glued-figure} 04-fig\n:doc: x.ipynb\n:alt: Throughput against the number of clients.\n\nA caption.\n```",
])
def test_decided_sourced_and_neutral_text_is_not_a_typed_conclusion(text: str) -> None:
    assert typed_conclusions(text) == [], text


def test_a_conclusion_planted_in_a_page_fails_the_test(monkeypatch, tmp_path) -> None:
    page = tmp_path / "99-toy.md"
    page.write_text("# Toy\n\nThe loop served {glue:text}`../notebooks/99-toy.ipynb::rps:,.0f` req/s: faster.\n")
    monkeypatch.setattr(f"{__name__}.BOOK", tmp_path)
    with pytest.raises(AssertionError, match="faster"):
        test_no_new_typed_conclusion()
