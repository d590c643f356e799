"""The chapter's figures, drawn from the tidy frames that :mod:`iolab.topics.databases.runner` and ``experiments`` return.

Each function draws on axes it is given, so that the notebook decides the layout and the caption
(``iolab.kit.plots.figure``), and the colours stay the book's: blocking calls in the loop in the colour
of the iterative server, the async services in uvloop's, threads in the threaded server's. Where an
experiment was repeated, each draws the median of the repeats and their range (:func:`spread`).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from iolab.kit.plots import PALETTE


def spread(df: pd.DataFrame, by: str | list[str], column: str) -> pd.DataFrame:
    """Per group of ``by``, the median of ``column`` over its repeats, and their lowest and highest: median, low, high."""
    grouped = df.groupby(by, sort=False)[column]
    return pd.DataFrame({"median": grouped.median(), "low": grouped.min(), "high": grouped.max()})


def per_variant(df: pd.DataFrame) -> pd.DataFrame:
    """One row per variant (the median of its repeats' numbers, its first row's labels), in the variants' order."""
    numbers = df.groupby("variant", sort=False).median(numeric_only=True)
    labels = df.groupby("variant", sort=False)[["service", "label"]].first()
    return labels.join(numbers.drop(columns=["repeat"], errors="ignore")).reset_index()


def variant_colour(row: pd.Series) -> object:
    """The colour of a variant: blocking calls in the loop, or async."""
    return PALETTE["iterative"] if row["service"].startswith("sync") else PALETTE["uvloop"]


def draw_variants(ax, df: pd.DataFrame, reference: pd.DataFrame | None = None, source: str = "002") -> None:
    """Bars of requests/s per variant: measured here (median, whiskers the repeats' range), the published figure and a reference run."""
    runs = spread(df, "variant", "rps")
    df = per_variant(df)
    x = np.arange(len(df))
    series = [("measured (this machine)", df["rps"], [variant_colour(r) for _, r in df.iterrows()])]
    series.append((f"published (source {source})", df["published_rps"], [PALETTE["published"]] * len(df)))
    if reference is not None and not reference.empty:
        ref = reference.groupby("variant")["rps"].median().reindex(df["variant"])
        series.append((reference["machine"].iloc[0], ref.to_numpy(), [PALETTE["reference"]] * len(df)))
    width = 0.8 / len(series)
    for i, (label, values, colours) in enumerate(series):
        bars = ax.bar(x + (i - (len(series) - 1) / 2) * width, values, width, color=colours, label=label,
                      edgecolor="white", hatch="" if i == 0 else "//" if i == 1 else "..")  # fmt: skip
        ax.bar_label(bars, fmt="%.0f", fontsize=7, padding=1)
    ranges = runs.reindex(df["variant"])
    ax.errorbar(x - (len(series) - 1) / 2 * width, ranges["median"], fmt="none", ecolor="0.2", capsize=2,
                yerr=[ranges["median"] - ranges["low"], ranges["high"] - ranges["median"]])
    ax.set_xticks(x, [f"{v}\n{s}" for v, s in zip(df["variant"], df["service"])], fontsize=8)
    ax.set_ylabel("requests/s (measured: median of the repeats, whiskers their range)", fontsize=8)
    ax.legend(fontsize=8, loc="upper left")


def draw_costs(ax, costs: pd.DataFrame) -> None:
    """Median wall ms of each step of one request, horizontal bars on a log scale, with the spread as whiskers;
    where measured (``cpu_ms``), the CPU the notebook's thread spent on it, as a marker."""
    summary = costs.groupby("step", sort=False)["ms"].describe(percentiles=[0.1, 0.5, 0.9])
    y = np.arange(len(summary))
    err = [summary["50%"] - summary["10%"], summary["90%"] - summary["50%"]]
    ax.barh(y, summary["50%"], xerr=err, color=PALETTE["prefork"], capsize=3, label="wall time")
    if "cpu_ms" in costs:
        cpu = costs.groupby("step", sort=False)["cpu_ms"].median().reindex(summary.index)
        ax.scatter(cpu.clip(lower=1e-3), y, marker="D", color=PALETTE["uvloop"], zorder=3,
                   label="CPU time of the notebook's thread")
        ax.legend(fontsize=8, loc="lower right")
    ax.set_yticks(y, summary.index)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("ms per request, in the notebook's process (median, whiskers p10-p90)")
    for yi, ms in zip(y, summary["50%"]):
        ax.text(ms * 1.15, yi, f"{ms:.2f} ms", va="center", fontsize=8)


def draw_pool_sweep(axes, sweep: pd.DataFrame, rule_of_thumb: int, knees: tuple[int, int] | None = None) -> None:
    """requests/s and p99 against the pool size (log 2 scale): the median of the repeats, their range shaded,
    the rule of thumb dotted, and the pool sizes where the repeats' knees fell (``knees``: lowest, highest) in grey."""
    for ax, column, label in zip(axes, ["rps", "p99_ms"], ["requests/s", "p99 latency (ms)"]):
        runs = spread(sweep, "pool", column).sort_index()
        ax.plot(runs.index, runs["median"], marker="o", color=PALETTE["uvloop"], label="async pool, median of the repeats")
        ax.fill_between(runs.index, runs["low"], runs["high"], color=PALETTE["uvloop"], alpha=0.25, lw=0,
                        label="lowest to highest repeat")
        ax.axvline(rule_of_thumb, ls=":", color="0.3", label=f"cores × 2 + 1 = {rule_of_thumb}")
        if knees is not None:
            ax.axvspan(knees[0] * 0.95, knees[1] * 1.05, color="0.5", alpha=0.15, lw=0,
                       label=f"knees of the repeats: {knees[0]}" + (f" to {knees[1]}" if knees[1] != knees[0] else ""))
        ax.set_xscale("log", base=2)
        ax.set_xticks(runs.index, [str(n) for n in runs.index])
        ax.minorticks_off()
        ax.set_xlabel("connections in the pool")
        ax.set_ylabel(label)
        ax.set_ylim(bottom=0)
    axes[0].legend(fontsize=8)


def draw_threads_vs_async(ax, df: pd.DataFrame, sleep_ms: float) -> None:
    """requests/s against clients for each service (median of the repeats, whiskers their range), with the
    bandwidth law min(clients, workers) / latency dotted."""
    colours = {"sync-threads": PALETTE["threaded"], "async-pool": PALETTE["uvloop"]}
    for (name, workers), group in df.groupby(["service", "workers"], sort=False):
        colour = colours.get(name)
        runs = spread(group, "concurrency", "rps").sort_index()
        ax.errorbar(runs.index, runs["median"], yerr=[runs["median"] - runs["low"], runs["high"] - runs["median"]],
                    marker="o", color=colour, capsize=3, label=f"{name} ({workers} workers)")
        law = np.minimum(runs.index, workers) / (sleep_ms / 1000)
        ax.plot(runs.index, law, ls=":", color=colour, label=f"law: min(clients, {workers}) / {sleep_ms:g} ms")
    ax.set_xscale("log", base=2)
    ticks = sorted(df["concurrency"].unique())
    ax.set_xticks(ticks, [str(c) for c in ticks])
    ax.minorticks_off()
    ax.set_ylim(bottom=0)
    ax.set_xlabel("concurrent clients")
    ax.set_ylabel("requests/s")
    ax.legend(fontsize=8)


def draw_first_byte(ax, ttfb: pd.DataFrame) -> None:
    """Median time to the first and to the last byte for each mode, log scale."""
    med = ttfb.groupby("mode", sort=False)[["first_byte_ms", "last_byte_ms"]].median()
    y = np.arange(len(med))
    ax.barh(y - 0.2, med["first_byte_ms"], 0.4, color=PALETTE["uvloop"], label="first byte")
    ax.barh(y + 0.2, med["last_byte_ms"], 0.4, color=PALETTE["published"], label="last byte")
    ax.set_yticks(y, med.index)
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlim(left=min(0.1, med.min().min() / 2), right=med.max().max() * 4)
    for yi, (first, last) in zip(y, med.itertuples(index=False)):
        ax.text(first * 1.1, yi - 0.2, f"{first:.1f} ms", va="center", fontsize=8)
        ax.text(last * 1.1, yi + 0.2, f"{last:.0f} ms", va="center", fontsize=8)
    ax.set_xlabel("ms after the request was sent (median, log scale)")
    ax.legend(fontsize=8, loc="lower left", bbox_to_anchor=(0.0, 1.0), ncol=2)


CPU_PARTS = {"service_cpu_ms": ("the service (Python)", "uvloop"), "db_cpu_ms": ("PostgreSQL (all its processes)", "prefork"),
             "client_cpu_ms": ("the load generator", "reference")}  # fmt: skip


def draw_cpu(ax, df: pd.DataFrame) -> None:
    """Stacked bars: CPU ms per request spent by the service, the database and the load generator (medians of the repeats)."""
    df = per_variant(df)
    x = np.arange(len(df))
    bottom = np.zeros(len(df))
    for column, (label, colour) in CPU_PARTS.items():
        values = df[column].to_numpy(dtype=float)
        ax.bar(x, values, 0.6, bottom=bottom, label=label, color=PALETTE[colour])
        bottom += np.nan_to_num(values)
    for xi, total in zip(x, bottom):
        ax.text(xi, total, f"{total:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_xticks(x, [f"{v}\n{s}" for v, s in zip(df["variant"], df["service"])], fontsize=8)
    ax.set_ylabel("CPU ms per request")
    ax.legend(fontsize=8)
