"""iolab.topics.databases.figures: repeated runs are drawn as their median, with their range."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from iolab.topics.databases import figures  # noqa: E402


def _variants(repeats: int) -> pd.DataFrame:
    rows = [{"variant": v, "repeat": r, "service": f"s{v}", "label": f"variant {v}", "rps": 100.0 * v + 10 * r,
             "published_rps": 50.0, "service_cpu_ms": 1.0, "db_cpu_ms": 0.5, "client_cpu_ms": 0.2}
            for r in range(repeats) for v in (1, 2)]
    return pd.DataFrame(rows)


def test_per_variant_is_one_row_per_variant_with_the_median_of_its_repeats():
    table = figures.per_variant(_variants(3))
    assert list(table["variant"]) == [1, 2]
    assert list(table["rps"]) == [110.0, 210.0]
    assert "repeat" not in table.columns


def test_repeated_variants_and_a_repeated_reference_draw_one_bar_per_variant_and_series():
    fig, ax = plt.subplots()
    reference = _variants(3).assign(machine="reference: a machine")
    figures.draw_variants(ax, _variants(3), reference)
    heights = sorted(round(bar.get_height()) for bar in ax.patches)
    assert heights == [50, 50, 110, 110, 210, 210], heights
    plt.close(fig)


def test_pool_sweep_draws_the_median_of_the_repeats():
    sweep = pd.DataFrame([{"pool": p, "repeat": r, "rps": 10.0 * p + r, "p99_ms": 100.0 / p} for r in range(3) for p in (1, 4)])
    fig, axes = plt.subplots(ncols=2)
    figures.draw_pool_sweep(axes, sweep, 5, (4, 4))
    line = axes[0].get_lines()[0]
    assert list(line.get_ydata()) == [11.0, 41.0]
    plt.close(fig)
