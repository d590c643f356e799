"""What the build is doing while it runs notebooks, and what a quick-scale book is.

- One line per notebook as it is read (executed, or taken from the cache): which, how long it took,
  and about how long the rest should take: the run times recorded in ``data/homework/run-times.csv``
  for this scale, times the pace of the notebooks executed so far (``to_go``), since a machine, or
  a notebook changed since the record, can take twice as long. At the end, a table of the notebooks' times.
- ``{build-info}``: the scale, machine and date of this build, for the execution status page.
- At ``IOLAB_SCALE=quick``, a note at the top of every page: a first look, not the book's figures.
"""

from __future__ import annotations

import datetime
import time

from docutils import nodes
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

from iolab.homework import times
from iolab.kit import machine
from iolab.kit.scale import scale

logger = logging.getLogger(__name__)
QUICK_NOTE = ("This book was built at IOLAB_SCALE=quick: a first look, with fewer and shorter measurements "
              "than the book's. Build it with `make book` (full scale) for the figures the prose discusses.")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min" if seconds >= 90 else f"{seconds:.0f} s"


def pace(done: dict[str, float], expected: dict[str, float | None]) -> float | None:
    """How many times their recorded run times the notebooks executed so far took; None before any.

    A notebook read from the cache (under a tenth of its record) says nothing of the pace.
    """
    ran = [(took, record) for doc, took in done.items() if (record := expected.get(doc)) and took >= 0.1 * record]
    return sum(t for t, _ in ran) / sum(r for _, r in ran) if ran else None


def to_go(done: dict[str, float], expected: dict[str, float | None]) -> str:
    """``about 12.0 min to go``, the recorded times of the notebooks left at the pace so far; "" if none left."""
    left = sum(s or 0 for doc, s in expected.items() if doc not in done)
    if not left:
        return ""
    ratio = pace(done, expected)
    if ratio is None:
        return f"about {_minutes(left)} to go, as recorded"
    return f"about {_minutes(left * ratio)} to go, at the pace so far ({ratio:.1f}x the recorded times)"


def _before_read(app, env, docnames) -> None:
    notebooks = [doc for doc in docnames if doc.startswith("notebooks/")]
    recorded = times.load()
    app.iolab_progress = {"todo": notebooks, "done": {}, "started": None,
                          "expected": {doc: times.run_seconds(f"{doc.split('/')[-1]}.ipynb", scale().name, recorded)
                                       for doc in notebooks}}
    if notebooks:
        known = [s for s in app.iolab_progress["expected"].values() if s]
        eta = (f"about {_minutes(sum(known))} if none is cached, as recorded" if known else
               "no run times recorded at this scale (python -m iolab homework times)")
        logger.info(f"[iolab] {len(notebooks)} notebooks to read at {scale().name} scale; {eta}", color="green")


def _source_read(app, docname, source) -> None:
    progress = getattr(app, "iolab_progress", None)
    if progress and docname in progress["todo"]:
        progress["started"] = time.monotonic()


def _doctree_read(app, doctree) -> None:
    docname = app.env.docname
    progress = getattr(app, "iolab_progress", None)
    if scale().quick:
        doctree.insert(0, nodes.note("", nodes.paragraph(text=QUICK_NOTE)))
    if not progress or docname not in progress["todo"] or progress["started"] is None:
        return
    took = time.monotonic() - progress["started"]
    progress["done"][docname] = took
    expected = progress["expected"][docname]
    eta = to_go(progress["done"], progress["expected"])
    logger.info(f"[iolab] [{len(progress['done'])}/{len(progress['todo'])}] {docname}: {_minutes(took)}"
                + (f" (recorded: {_minutes(expected)})" if expected else "")
                + (f"; {eta}" if eta else ""), color="green")


def _finished(app, exception) -> None:
    progress = getattr(app, "iolab_progress", None)
    if exception is not None or not progress or not progress["done"]:
        return
    width = max(len(doc) for doc in progress["done"])
    lines = [f"  {doc:<{width}}  {_minutes(s):>9}" for doc, s in progress["done"].items()]
    total = sum(progress["done"].values())
    logger.info("[iolab] notebooks read (executed or from the cache):\n" + "\n".join(lines)
                + f"\n  {'total':<{width}}  {_minutes(total):>9}", color="green")


class BuildInfo(SphinxDirective):
    """A line naming this build's scale, machine and date."""

    def run(self) -> list[nodes.Node]:
        text = (f"This build: IOLAB_SCALE={scale().name}, on {machine.describe()}, "
                f"{datetime.date.today().isoformat()}.")
        return [nodes.paragraph(text=text)]


def setup(app):
    app.connect("env-before-read-docs", _before_read)
    app.connect("source-read", _source_read)
    app.connect("doctree-read", _doctree_read)
    app.connect("build-finished", _finished)
    app.add_directive("build-info", BuildInfo)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
