"""Cite the course's sources by a short name: the prose says "source 000" and the citation reads [SilkJS].

A pybtex style for sphinxcontrib-bibtex: the unsrt style (entries in the order of references.bib),
labelled by each entry's ``shorthand`` field (else its number, ``key``), titles left as printed. _config.yml chooses it
(``bibtex_default_style: sources``).
"""

from pybtex.plugin import register_plugin
from pybtex.style.formatting.unsrt import Style as UnsrtStyle
from pybtex.style.labels import BaseLabelStyle
from pybtex.style.template import field, sentence


class SourceNumberLabels(BaseLabelStyle):
    """The label of an entry is its ``shorthand`` field, else its ``key`` (the source's number), else its citation key."""

    def format_labels(self, sorted_entries):
        for entry in sorted_entries:
            yield entry.fields.get("shorthand", entry.fields.get("key", entry.key))


class SourcesStyle(UnsrtStyle):
    """unsrt, labelled by short name, with titles as their authors capitalised them."""

    default_label_style = "source-number"

    def format_title(self, e, which, as_sentence=True):
        title = field(which)
        return sentence[title] if as_sentence else title


def setup(app):
    register_plugin("pybtex.style.labels", "source-number", SourceNumberLabels)
    register_plugin("pybtex.style.formatting", "sources", SourcesStyle)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
