"""``{glued-figure}``: a figure measured by a notebook, shown on a chapter page with alt text and a caption.

myst-nb's ``{glue:figure}`` pastes only from the page's own notebook, and its ``{glue}`` (which pastes
from another document) gives the image no alt text and no caption. A chapter page needs both::

    ```{glued-figure} 04-fig-julia
    :doc: ../notebooks/04-prefork.ipynb
    :name: fig-04-julia
    :alt: What the figure shows and what to conclude from it, in a sentence or two.
    :data: 04-julia

    The caption: what is plotted against what, and what the lines and marks are.
    ```

The figure is numbered and can be referred to (``{numref}`fig-04-julia```). ``:data:`` names the
results file the figure plots (``iolab.kit.results.save``): the caption ends by naming it, linked to
the reference run's copy, which the book serves for download. The image gets ``:alt:`` once myst-nb
has pasted it, at the start of the write phase.
"""

from __future__ import annotations

from pathlib import Path

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx import addnodes
from sphinx.transforms.post_transforms import SphinxPostTransform
from sphinx.util.docutils import SphinxDirective

from myst_nb.ext.glue.utils import create_pending_glue_ref

ALT = "iolab_alt"
MIN_ALT_WORDS = 8


class GluedFigure(SphinxDirective):
    required_arguments = 1
    has_content = True
    option_spec = {"doc": directives.unchanged_required, "name": directives.unchanged_required,
                   "alt": directives.unchanged_required, "data": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        missing = [o for o in ("doc", "name", "alt") if not self.options.get(o)]
        if missing or not self.content:
            raise self.error(f"glued-figure {self.arguments[0]}: needs :doc:, :name:, :alt: and a caption "
                             f"(missing: {', '.join(missing) or 'the caption'})")
        if len(self.options["alt"].split()) < MIN_ALT_WORDS:
            raise self.error(f"glued-figure {self.arguments[0]}: the alt text should say what the figure shows "
                             f"and what to conclude, in at least {MIN_ALT_WORDS} words")
        figure = nodes.figure("", create_pending_glue_ref(self.state.document, self.get_source_info()[0],
                                                          self.lineno, self.options["doc"], self.arguments[0]))
        figure[ALT] = self.options["alt"]
        self.set_source_info(figure)
        self.add_name(figure)
        holder = nodes.Element()
        self.state.nested_parse(self.content, self.content_offset, holder)
        if not holder.children or not isinstance(holder[0], nodes.paragraph):
            raise self.error(f"glued-figure {self.arguments[0]}: the caption must be a paragraph")
        caption = nodes.caption(holder[0].rawsource, "", *holder[0].children)
        if data := self.options.get("data"):
            caption += self._data_link(data)
        figure += caption
        if len(holder) > 1:
            figure += nodes.legend("", *holder[1:])
        return [figure]

    def _data_link(self, name: str) -> list[nodes.Node]:
        """' Data: NAME.csv (the reference run's, for download).' as caption nodes."""
        reference = Path(self.env.srcdir) / "data" / "reference" / f"{name}.csv"
        if not reference.is_file():
            raise self.error(f"glued-figure :data: {name}: no data/reference/{name}.csv")
        target = "/" + str(reference.relative_to(self.env.srcdir))
        link = addnodes.download_reference("", "", refdoc=self.env.docname, reftarget=target, refexplicit=True,
                                           reftype="download", refdomain="")
        link += nodes.literal(f"{name}.csv", f"{name}.csv")
        return [nodes.Text(" Data: "), link, nodes.Text(" (the reference run's).")]


class SetGluedAlt(SphinxPostTransform):
    """Give each glued figure's images its alt text, after myst-nb's paste (priority 5)."""

    default_priority = 6

    def run(self, **kwargs) -> None:
        for figure in self.document.findall(nodes.figure):
            if ALT in figure:
                for image in figure.findall(nodes.image):
                    image["alt"] = figure[ALT]


def setup(app):
    app.add_directive("glued-figure", GluedFigure)
    app.add_post_transform(SetGluedAlt)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
