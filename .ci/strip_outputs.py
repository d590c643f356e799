"""Strip a notebook's outputs, except those of cells nbval checks strictly (``# NBVAL_CHECK_OUTPUT``).

Usage: python .ci/strip_outputs.py NOTEBOOK [EXECUTED_COPY]

Measured outputs are the reader's own and never stored; the outputs of deterministic cells are kept,
because nbval compares a fresh run against them. With EXECUTED_COPY, those outputs are taken from it.
"""

import sys

import nbformat

MARK = "# NBVAL_CHECK_OUTPUT"


def main(path: str, executed: str | None = None) -> None:
    nb = nbformat.read(path, as_version=4)
    ran = nbformat.read(executed, as_version=4) if executed else nb
    for cell, ran_cell in zip(nb.cells, ran.cells, strict=True):
        if cell.cell_type != "code":
            continue
        keep = cell.source.lstrip().startswith(MARK)
        cell.outputs = ran_cell.outputs if keep else []
        # nbval skips comparing a cell that has outputs but no execution count ("unrun").
        cell.execution_count = ran_cell.execution_count if keep else None
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)


if __name__ == "__main__":
    main(*sys.argv[1:])
