"""The chapter's recurring plots, drawn on axes the notebook makes with :func:`iolab.kit.plots.figure`."""

from __future__ import annotations

import pandas as pd
import seaborn as sns

from iolab.topics.upstreams.experiments import COLORS

# Colours for runs other than plain "sync" and "async" (variants: a timeout, a limit...).
_OTHERS = [sns.color_palette("colorblind")[i] for i in (0, 4, 5, 7, 9)]


def colors(runs) -> dict[str, tuple]:
    """A colour per run label: the book's model colours for "sync" and "async", distinct ones for the rest."""
    others = iter(_OTHERS)
    return {run: COLORS.get(run) or next(others) for run in dict.fromkeys(runs)}


def rates_over_time(ax, timelines: pd.DataFrame, published: dict[str, float] | None = None,
                    law: float | None = None, law_label: str = "threads / latency") -> None:
    """Successful answers per second of each run (hollow: partial seconds, left out of averages);
    published averages dashed, the bandwidth law dotted."""
    palette = colors(timelines.run)
    for run, tl in timelines.groupby("run", sort=False):
        ax.plot(tl.second, tl.rps, lw=1, color=palette[run], alpha=0.5)
        full = tl[~tl.partial]
        ax.plot(full.second, full.rps, marker="o", ms=4, ls="none", label=run, color=palette[run])
        part = tl[tl.partial]
        ax.plot(part.second, part.rps, marker="o", ms=4, ls="none", mfc="white", color=palette[run])
    for model, value in (published or {}).items():
        ax.axhline(value, ls="--", lw=1, color=COLORS[model], alpha=0.6, label=f"published {model} (source 001): {value:g}")
    if law is not None:
        ax.axhline(law, ls=":", color="0.3", label=f"{law_label} = {law:.0f}")
    ax.set(xlabel="time (s)", ylabel="successful answers per second")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)


def overhead_curves(ax, curves: pd.DataFrame) -> None:
    """Overhead from p0 to p100 for each run, on a log scale (source 001's percentile plots)."""
    palette = colors(curves.run)
    for run, c in curves.groupby("run", sort=False):
        ax.plot(c.percentile, c.overhead_ms.clip(lower=0.01), marker=".", label=run, color=palette[run])
    ax.set(xlabel="percentile", ylabel="overhead (ms, log scale)", yscale="log")
    ax.legend(fontsize=8)


def overhead_over_time(ax, timeline: pd.DataFrame, title: str) -> None:
    """p50, p90 and p99 overhead of the answers completed in each second (source 001's latency timeline)."""
    for p, style in (("p50", "-"), ("p90", "--"), ("p99", ":")):
        ax.plot(timeline.second, timeline[f"{p}_ms"], ls=style, marker=".", label=p)
    ax.set(xlabel="time (s)", ylabel="overhead (ms, log scale)", yscale="log", title=title)
    ax.legend(fontsize=8)


def waiting_over_time(ax, timelines: pd.DataFrame) -> None:
    """Requests inside the service each second: queued for a thread plus in a call, per run (log scale)."""
    palette = colors(timelines.run)
    for run, tl in timelines.groupby("run", sort=False):
        ax.plot(tl.second, (tl.queued + tl.in_flight).clip(lower=1), marker=".", label=run, color=palette[run])
    ax.set(xlabel="time (s)", ylabel="requests queued or in a call (log scale)", yscale="log")
    ax.legend(fontsize=8)
