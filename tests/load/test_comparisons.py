"""iolab.load.comparisons: one tidy row per variant x target x clients."""

from __future__ import annotations

from iolab.load.comparisons import Variant, load_matrix
from iolab.load.sweeps import FIGURES


def test_matrix_has_a_row_per_run_and_shows_a_worker_tied_by_keepalive() -> None:
    df = load_matrix([Variant("prefork x1", "prefork", 1), Variant("asyncio", "asyncio")], ["/"], [1, 2], 0.5, progress=False)
    assert list(df.columns) == ["server", "target", "clients", "repeat", *FIGURES, "error_kinds"]
    assert len(df) == 4
    rows = df.set_index(["server", "clients"])
    # One pre-fork worker holds one keep-alive client: the second never gets an answer.
    assert rows.loc[("prefork x1", 2), "never_served"] == 1
    assert rows.loc[("asyncio", 2), "never_served"] == 0
    assert (df.requests > 0).all()
