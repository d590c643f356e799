"""Chapter 11, benchmarking: what the instruments cost (``parser_costs``: parsing HTTP with h11 vs httptools).

The load generator, sweeps, stalls and the external tools (wrk, ab, nginx) are the ``load`` layer.
"""
