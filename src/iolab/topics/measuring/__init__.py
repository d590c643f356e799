"""Chapter 11, measuring servers: the chapter's entry points, and what the instruments cost.

The chapter's experiments live in ``load``, the layer below ``topics``, because chapters 4, 5, 6 and
12 sweep and compare servers with them too; this package names them for a reader who starts from
the chapter (``notebooks/11-*.ipynb`` call them):

- ``sweep``, ``spread``, ``figures`` (:mod:`iolab.load.sweeps`): servers and load settings run as one
  tidy table, the runs' spread, one run's headline figures;
- ``stalled`` (:mod:`iolab.load.stall`): a server frozen mid-run;
- ``run_wrk``, ``run_ab``, ``open_nginx`` (:mod:`iolab.load.external`): the external tools beside the kit;
- ``parser_costs``: the chapter's own measurement, parsing HTTP with h11 vs httptools.

``python -m iolab load`` and ``python -m iolab compare`` are the chapter's commands.
"""

from iolab.load.external import open_nginx, run_ab, run_wrk
from iolab.load.stall import stalled
from iolab.load.sweeps import figures, spread, sweep

__all__ = ["figures", "open_nginx", "run_ab", "run_wrk", "spread", "stalled", "sweep"]
