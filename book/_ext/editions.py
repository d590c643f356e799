"""The book's two editions, from one source tree: ``IOLAB_EDITION=readers`` (the default) or ``student``.

- **readers** (``make book``): the course as published. Solutions stay, folded; the hidden tests of
  every check cell are taken out of the notebook before it is executed and rendered, and out of the
  copy the download button serves.
- **student** (``make book EDITION=student``, into ``_build/student/html``): what a class is sent to.
  Each notebook page is the student edition (``iolab.homework.editions``) of the notebook the
  readers' build executed (its outputs come from that build's execution cache, which holds them whole,
  glued values included), so it shows the same measured figures without executing anything: no
  solution code, no folded explanations, no hidden tests, predictions as open questions. Its
  download button serves the student notebook that ``make homework`` writes.

Both work on the text Sphinx reads (the ``source-read`` event), so nothing in ``notebooks/`` changes.
"""

from __future__ import annotations

import os
from pathlib import Path

import nbformat
from sphinx.util import logging

from iolab.homework import editions

ENV = "IOLAB_EDITION"
EDITIONS = ("readers", "student")
# Where the readers' build (``--path-output .``) keeps its execution cache (book/_ext/execution_key.py).
READERS_BUILD = Path("_build")

log = logging.getLogger(__name__)


def edition() -> str:
    """The edition being built, from ``IOLAB_EDITION``; a clear error for anything else."""
    name = os.environ.get(ENV, "readers").strip() or "readers"
    if name not in EDITIONS:
        raise ValueError(f"{ENV}={name!r}: the book has two editions, {' and '.join(EDITIONS)}")
    return name


def readers_notebook(nb: nbformat.NotebookNode) -> nbformat.NotebookNode:
    """The notebook as the readers' book shows it: everything but the hidden tests."""
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.source = editions.drop_hidden_tests(cell.source)
    return nb


def _is_notebook(app, docname: str) -> bool:
    return Path(app.env.doc2path(docname)).suffix == ".ipynb"


def _executed(app, nb: nbformat.NotebookNode) -> nbformat.NotebookNode | None:
    """``nb`` (the readers' version) with the outputs the readers' build cached for it, or None."""
    from jupyter_cache import get_cache

    import execution_key

    folder = Path(app.srcdir) / READERS_BUILD / ".jupyter_cache" / f"{execution_key.scale()}-{execution_key.key(Path(app.srcdir))}"
    if not folder.is_dir():
        return None
    try:
        return get_cache(str(folder)).merge_match_into_notebook(nb)[1]
    except KeyError:  # not executed with this code, kit and scale
        return None


def _configure(app, config) -> None:
    app.iolab_edition = edition()
    if app.iolab_edition == "student":
        config.nb_execution_mode = "off"  # it renders what the readers' build measured
        config.html_title = f"{config.html_title or config.project} (student edition)"


def _source_read(app, docname: str, source: list[str]) -> None:
    if not _is_notebook(app, docname):
        return
    nb = nbformat.reads(source[0], as_version=4)
    nb = readers_notebook(nb)
    if app.iolab_edition == "student":
        executed = _executed(app, nb)
        if executed is None:
            log.warning(f"{docname}: the readers' build has not executed this notebook at IOLAB_SCALE="
                        f"{os.environ.get('IOLAB_SCALE', 'full')} (build it first: make book)", location=docname)
        nb = editions.student_edition(executed if executed is not None else nb)
    source[0] = nbformat.writes(nb)


def _downloads(app, exception) -> None:
    """Replace the copies of the notebooks the download button serves with this edition's."""
    if exception is not None or app.builder.format != "html":
        return
    for docname in sorted(app.env.found_docs):
        if not _is_notebook(app, docname):
            continue
        original = nbformat.read(app.env.doc2path(docname), as_version=4)
        nb = readers_notebook(original) if app.iolab_edition == "readers" else editions.student_edition(original)
        for served in (Path(app.outdir) / "_sources").glob(f"{docname}.ipynb*"):
            nbformat.write(nb, served)


def setup(app):
    app.connect("config-inited", _configure)
    app.connect("source-read", _source_read)
    app.connect("build-finished", _downloads)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
