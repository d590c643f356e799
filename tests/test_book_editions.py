"""The book's two editions, built for real on a tiny book: what each shows, and what its downloads serve."""

from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest

from iolab.homework import editions

ROOT = Path(__file__).resolve().parents[1]
JUPYTER_BOOK = Path(sys.executable).parent / "jupyter-book"

# Text that only one part of the notebook holds, so a search of the built files finds where it went.
HIDDEN = "hidden-key-4242"
SOLUTION = "solution-code-1717"
EXPLANATION = "folded-explanation-99"
REPOSITORY = "https://github.com/example-course/iolab"
HUB = "https://hub.example.edu"
BINDER = "https://mybinder.org"
FIGURE_ALT = "A rising line of three points: the toy measurement grows with its input."
NOTEBOOK_ALT = "The same rising line, as the notebook draws it under its code."


# A claim decided by the kit, its words pasted into the prose, and the chapter's "What held" table.
CLAIM_STATEMENT = "The big side measures more than the small side"
CLAIM_CELL = f"""import pandas as pd
from iolab.kit import claims, verdicts
chapter = claims.Claims("toy")
runs = pd.DataFrame({{"side": ["big"] * 3 + ["small"] * 3, "v": [300, 310, 305, 100, 101, 99]}})
bigger = claims.Claim("bigger", "{CLAIM_STATEMENT}", expect="higher", data="toy-runs", higher="more", lower="less",
                      decide=lambda df: verdicts.compare(claims.values(df, "v", side="big"), claims.values(df, "v", side="small")))
chapter.decide(bigger, runs)
chapter.what_held()"""


def cell(kind: str, source: str, grade_id: str | None = None, mystnb: dict | None = None, **meta) -> nbformat.NotebookNode:
    made = nbformat.v4.new_markdown_cell(source) if kind == "markdown" else nbformat.v4.new_code_cell(source)
    if mystnb:
        made.metadata["mystnb"] = mystnb
    if grade_id:
        made.metadata["nbgrader"] = {"grade_id": grade_id, "schema_version": 3, "task": False,
                                     "grade": False, "locked": False, "solution": False, **meta}
    return made


def toy_notebook() -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.cells = [
        cell("markdown", "# Toy lab"),
        cell("code", "from myst_nb import glue\nbase = 6", "setup", locked=True),
        cell("markdown", "```{exercise-start} Prediction\n:label: pred-toy\n:nonumber:\n```\nPredict `answer`.\n```{exercise-end}\n```"),
        cell("markdown", f"```{{solution-start}} pred-toy\n:class: dropdown\n```\nIt is 42: {EXPLANATION}."),
        cell("code", f"### BEGIN SOLUTION\nanswer = base * 7  # {SOLUTION}\n### END SOLUTION", "pred-toy-code", solution=True),
        cell("code", f"assert isinstance(answer, int), 'a whole number'\n### BEGIN HIDDEN TESTS\nassert answer == 42, '{HIDDEN}'\n### END HIDDEN TESTS",
             "pred-toy-check", grade=True, locked=True, points=1),
        cell("markdown", "```{solution-end}\n```"),
        cell("code", "measured = base * 1000 + 17\nglue('toy-measured', measured)"),
        cell("code", CLAIM_CELL),
        cell("code", "import matplotlib.pyplot as plt\nfig, ax = plt.subplots(figsize=(2, 2))\nax.plot([1, 2, 3])\n"
                     "glue('toy-fig-line', fig, display=False)\nfig", mystnb={"image": {"alt": NOTEBOOK_ALT}}),
    ]
    return nb


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A tiny book, built as the readers' edition and then as the student edition."""
    root = tmp_path_factory.mktemp("toybook")
    (root / "notebooks").mkdir()
    nbformat.write(toy_notebook(), root / "notebooks/toy.ipynb")
    (root / "intro.md").write_text("# Toy\n\nMeasured: {glue:text}`notebooks/toy.ipynb::toy-measured:d`.\n\n"
                                   "The big side: {glue:text}`notebooks/toy.ipynb::toy-claim-bigger:s`.\n\n"
                                   "```{glue} toy-what-held\n:doc: notebooks/toy.ipynb\n```\n\n"
                                   "```{glued-figure} toy-fig-line\n:doc: notebooks/toy.ipynb\n:name: fig-toy-line\n"
                                   f":alt: {FIGURE_ALT}\n\nThe toy's line, against its input.\n```\n")
    (root / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/toy\n")
    (root / "_config.yml").write_text(json.dumps({
        "title": "Toy", "only_build_toc_files": True, "exclude_patterns": ["_build"],
        "execute": {"execute_notebooks": "cache", "allow_errors": False},
        "html": {"use_download_button": True},
        "sphinx": {"extra_extensions": ["sphinx_exercise"],
                   "local_extensions": {"editions": str(ROOT / "book" / "_ext"),
                                        "execution_key": str(ROOT / "book" / "_ext"),
                                        "site_info": str(ROOT / "book" / "_ext"),
                                        "glued_figure": str(ROOT / "book" / "_ext"),
                                        "kernel_transport": str(ROOT / "book" / "_ext")}}}))
    for edition, out in (("readers", root), ("student", root / "_build" / "student")):
        env = {**os.environ, "IOLAB_EDITION": edition, "IOLAB_REPOSITORY": REPOSITORY, "IOLAB_HUB": HUB,
               "IOLAB_BINDER": BINDER, "IOLAB_DATA": str(root / "data")}
        done = subprocess.run([str(JUPYTER_BOOK), "build", "--warningiserror", "--path-output", str(out), str(root)],
                              env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        (out / f"{edition}.log").write_text(done.stdout + done.stderr)
    return root


def texts(html: Path) -> dict[str, str]:
    """Every built page and served download under ``html``, by path."""
    files = [*html.rglob("*.html"), *(html / "_sources").rglob("*")]
    return {str(p.relative_to(html)): p.read_text(errors="replace") for p in files if p.is_file()}


def test_a_claims_words_and_the_what_held_table_are_pasted_from_the_run(built: Path) -> None:
    page = texts(built / "_build" / "html")["intro.html"]
    words = re.sub(r"<[^>]+>", "", page)
    assert re.search(r"The big side: more \(\d\.\d\d-\d\.\d\dx\)", words), "the claim's words, as the run decided them"
    table = page[page.index("<table"):page.index("</table>")]
    assert "held: more (" in table and "no reference run" in table
    assert re.search(rf"<th>{CLAIM_STATEMENT}</th>", table), "each row is named by its claim, not by a number"


def test_the_readers_edition_folds_the_solution_and_never_shows_a_hidden_test(built: Path) -> None:
    pages = texts(built / "_build" / "html")
    assert not [name for name, text in pages.items() if HIDDEN in text or "BEGIN HIDDEN" in text]
    page = pages["notebooks/toy.html"]
    assert SOLUTION in page and EXPLANATION in page and "dropdown" in page
    assert "6017" in pages["intro.html"]  # the figure it measured
    download = json.loads(pages["_sources/notebooks/toy.ipynb"])
    assert SOLUTION in json.dumps(download) and HIDDEN not in json.dumps(download)


def test_the_student_edition_shows_the_measured_figures_but_no_solution_explanation_or_hidden_test(built: Path) -> None:
    html = built / "_build" / "student" / "_build" / "html"
    pages = texts(html)
    leaked = [name for name, text in pages.items() if any(s in text for s in (HIDDEN, SOLUTION, EXPLANATION, "BEGIN HIDDEN", "BEGIN SOLUTION"))]
    assert not leaked
    assert "NotImplementedError" in pages["notebooks/toy.html"]  # the stub, highlighted
    assert "6017" in pages["intro.html"]  # from the readers' build's execution: the student build runs nothing
    download = nbformat.reads(pages["_sources/notebooks/toy.ipynb"], as_version=4)
    assert all(not c.get("outputs") for c in download.cells if c.cell_type == "code")
    assert any("raise NotImplementedError()" in c.source for c in download.cells)


def test_the_build_log_has_no_kernel_transport_warning(built: Path) -> None:
    log = (built / "readers.log").read_text()
    assert "Executing notebook" in log and "Kernel is running over TCP" not in log, log[-2000:]


HREF = re.compile(r'href="([^"]+)"')


def test_every_page_names_its_machine_and_scale_and_its_buttons_lead_to_the_repository_and_the_download(built: Path) -> None:
    html = built / "_build" / "html"
    for name in ("intro.html", "notebooks/toy.html"):
        page = (html / name).read_text()
        assert "Figures measured on" in page and "IOLAB_SCALE=" in page and " cores " in page.replace("·", " "), name
        links = set(HREF.findall(page))
        assert REPOSITORY in links and f"{REPOSITORY}/issues/new?title=Issue%20on%20page%20%2F{name}&body=Your%20issue%20content%20here." in links
        downloads = [link for link in links if "_sources/" in link]
        assert downloads, f"{name} has no download link"
        for link in downloads:  # relative to the page, and served as a file of the site
            assert (html / name).parent.joinpath(link).resolve().is_file(), link
    assert "executablebooks/jupyter-book" not in (html / "intro.html").read_text()


sys.path.insert(0, str(ROOT / ".ci"))
import check_site  # noqa: E402
from check_site import images_without_alt  # noqa: E402


def test_a_glued_figure_is_numbered_with_its_alt_text_and_caption_and_a_notebook_figure_has_its_alt(built: Path) -> None:
    html = built / "_build" / "html"
    intro, notebook = (html / "intro.html").read_text(), (html / "notebooks" / "toy.html").read_text()
    assert f'alt="{FIGURE_ALT}"' in intro and 'id="fig-toy-line"' in intro
    assert "Fig. 1" in intro and "The toy’s line, against its input." in intro
    assert f'alt="{NOTEBOOK_ALT}"' in notebook
    assert images_without_alt(intro) == [] and images_without_alt(notebook) == []
    assert images_without_alt('<img alt="../_images/abc123.png" src="../_images/abc123.png" />')  # what myst-nb gives without one


def test_a_glued_figure_without_alt_text_fails_the_build(tmp_path: Path) -> None:
    (tmp_path / "notebooks").mkdir()
    nbformat.write(toy_notebook(), tmp_path / "notebooks/toy.ipynb")
    (tmp_path / "intro.md").write_text("# Toy\n\n```{glued-figure} toy-fig-line\n:doc: notebooks/toy.ipynb\n:name: fig-x\n"
                                       ":alt: a line\n\nCaption.\n```\n")
    (tmp_path / "_toc.yml").write_text("format: jb-book\nroot: intro\nchapters:\n  - file: notebooks/toy\n")
    (tmp_path / "_config.yml").write_text(json.dumps({
        "title": "Toy", "only_build_toc_files": True, "exclude_patterns": ["_build"],
        "execute": {"execute_notebooks": "off"},
        "sphinx": {"extra_extensions": ["sphinx_exercise"],
                   "local_extensions": {"glued_figure": str(ROOT / "book" / "_ext")}}}))
    done = subprocess.run([str(JUPYTER_BOOK), "build", "--warningiserror", "--path-output", str(tmp_path), str(tmp_path)],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode != 0 and "at least 8 words" in done.stdout + done.stderr


sys.path.insert(0, str(ROOT / "book" / "_ext"))
import editions as book_editions  # noqa: E402

COURSE = sorted((ROOT / "notebooks").glob("*.ipynb"))


def split_lines(nb: nbformat.NotebookNode) -> tuple[set[str], set[str]]:
    """The stripped lines of ``nb``'s code cells inside hidden-test regions, and those outside them."""
    hidden, outside, inside = set(), set(), False
    for c in nb.cells:
        for line in c.source.split("\n") if c.cell_type == "code" else []:
            if line.strip() in ("### BEGIN HIDDEN TESTS", "### END HIDDEN TESTS"):
                inside = line.strip() == "### BEGIN HIDDEN TESTS"
            elif line.strip():
                (hidden if inside else outside).add(line.strip())
    return hidden, outside


@pytest.mark.parametrize("path", COURSE, ids=lambda p: p.stem)
def test_the_readers_book_renders_each_course_notebook_without_its_hidden_tests(path: Path) -> None:
    hidden, outside = split_lines(nbformat.read(path, as_version=4))
    rendered = book_editions.readers_notebook(nbformat.read(path, as_version=4))
    shown = {line.strip() for c in rendered.cells for line in c.source.split("\n")}
    only_hidden = hidden - outside  # a solution may compute what a test recomputes: that line stays
    assert only_hidden, "every course notebook has hidden tests"
    assert "BEGIN HIDDEN" not in json.dumps(rendered) and not only_hidden & shown


def test_an_edition_that_does_not_exist_is_refused_with_the_two_that_do(monkeypatch) -> None:
    monkeypatch.setenv("IOLAB_EDITION", "teacher")
    with pytest.raises(ValueError, match="readers and student"):
        book_editions.edition()


GLUE_CALL = re.compile(r"""glue\w*\(\s*["']([^"']+)["']""")
GLUE_USE = re.compile(r"""([\w.-]+\.ipynb)::([\w-]+)""")


def glued_by(nb: nbformat.NotebookNode) -> set[str]:
    """The names a notebook's code cells glue (literal names only)."""
    return {name for c in nb.cells if c.cell_type == "code" for name in GLUE_CALL.findall(c.source)}


@pytest.mark.parametrize("path", COURSE, ids=lambda p: p.stem)
def test_the_student_edition_keeps_every_cell_that_glues_a_figure_the_prose_shows(path: Path) -> None:
    """The student book executes nothing: a figure glued by a solution cell would be missing from it."""
    used = {name for page in (ROOT / "book").glob("*.md") for nb_name, name in GLUE_USE.findall(page.read_text())
            if nb_name == path.name}
    nb = nbformat.read(path, as_version=4)
    kept = glued_by(editions.student_edition(nb))
    assert used & glued_by(nb) <= kept, sorted(used & glued_by(nb) - kept)


def test_a_notebook_page_launches_on_the_class_hub_the_course_for_readers_and_the_students_own_copy_for_students(built: Path) -> None:
    readers = (built / "_build" / "html" / "notebooks" / "toy.html").read_text()
    pulls = [link for link in HREF.findall(readers) if link.startswith(f"{HUB}/hub/user-redirect/git-pull?")]
    assert pulls and "repo=" + REPOSITORY.replace("https://", "https%3A//") in pulls[0] and "toy.ipynb" in pulls[0], \
        "nbgitpuller: the repository, then the notebook"
    student = (built / "_build" / "student" / "_build" / "html" / "notebooks" / "toy.html").read_text()
    links = HREF.findall(student)
    assert f"{HUB}/hub/user-redirect/lab/tree/work/homework/toy.ipynb" in links
    assert not [link for link in links if "git-pull" in link], "a student never launches the instructor edition"
    assert "user-redirect" not in (built / "_build" / "html" / "intro.html").read_text(), "a prose page has no notebook"
    found, counts = check_site.problems(built / "_build" / "html", REPOSITORY, HUB)
    assert counts["launches"] == 1 and not [p for p in found if "launch" in p]
    assert [p for p in check_site.problems(built / "_build" / "html", REPOSITORY, "https://other.example.edu")[0] if "launch" in p]


def test_a_readers_notebook_page_has_a_binder_button_that_builds_the_repository_and_opens_the_notebook_in_jupyterlab(built: Path) -> None:
    readers = (built / "_build" / "html" / "notebooks" / "toy.html").read_text()
    assert f"{BINDER}/v2/gh/example-course/iolab/main?urlpath=lab/tree/notebooks/toy.ipynb" in HREF.findall(readers)
    student = (built / "_build" / "student" / "_build" / "html" / "notebooks" / "toy.html").read_text()
    assert BINDER not in student, "the student edition's notebooks are not in the repository Binder builds"
    assert BINDER not in (built / "_build" / "html" / "intro.html").read_text(), "a prose page has no notebook"
    found, counts = check_site.problems(built / "_build" / "html", REPOSITORY, binder=BINDER)
    assert counts["binder"] == 1 and not [p for p in found if "Binder" in p]
    elsewhere = check_site.problems(built / "_build" / "html", REPOSITORY, binder="https://binder.example.edu")[0]
    assert [p for p in elsewhere if "Binder" in p] == [
        "notebooks/toy.html: no Binder button on https://binder.example.edu opening this notebook in JupyterLab"]


sys.path.insert(0, str(ROOT / "book" / "_ext"))
import site_info  # noqa: E402


@pytest.mark.parametrize("repository, binder, expected", [
    (REPOSITORY, BINDER, {"binderhub_url": BINDER, "notebook_interface": "jupyterlab"}),
    (REPOSITORY, "https://binder.example.edu/", {"binderhub_url": "https://binder.example.edu", "notebook_interface": "jupyterlab"}),
    (REPOSITORY, "none", {}),
    (REPOSITORY, "", {}),
    ("https://gitlab.example.edu/course/iolab", BINDER, {}),  # Binder builds public GitHub repositories here
    ("", BINDER, {}),
])
def test_binder_asks_for_a_public_github_repository_and_none_turns_it_off(monkeypatch, repository, binder, expected) -> None:
    monkeypatch.delenv("IOLAB_HUB", raising=False)
    monkeypatch.setenv("IOLAB_BINDER", binder)
    assert site_info.launch_buttons(repository) == expected


def test_a_binderhub_is_named_by_its_https_url(monkeypatch) -> None:
    monkeypatch.setenv("IOLAB_BINDER", "mybinder.org")
    with pytest.raises(ValueError, match="https URL"):
        site_info.binder_url()
