"""One look for every figure in the book: theme, a colour per concurrency model, captions.

Every chapter draws with these helpers, so "asyncio" is the same colour on every page and every
measured figure says where it was measured.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

import matplotlib.pyplot as plt
import matplotlib.ticker
import pandas as pd
import seaborn as sns

from iolab.kit import machine, platforms
from iolab.kit.scale import Scale

# A fixed colour per model or runtime, from seaborn's colour-blind palette; published figures grey.
_CB = sns.color_palette("colorblind")


def _mix(color: tuple[float, float, float], other: tuple[float, float, float], share: float) -> tuple[float, ...]:
    """``color`` moved ``share`` of the way to ``other`` (white: a tint, black: a shade)."""
    return tuple((1 - share) * c + share * o for c, o in zip(color, other))


PALETTE: dict[str, Any] = {
    "process (fork)": _CB[0],
    "prefork": _CB[0],
    "thread": _CB[1],
    "threaded": _CB[1],
    "asyncio task": _CB[2],
    "asyncio": _CB[2],
    "uvloop": _CB[8],
    "trio": _CB[4],
    "iterative": _CB[5],
    "scratch": _CB[6],
    "go": _CB[9],
    "node": _CB[3],
    # chapter 10: the shoot-out's runtimes ("threads" is Python's threads, coloured as "thread")
    "threads": _CB[1],
    "ruby": _CB[7],
    # chapter 8: ways to share a counter or a stream (a lock and a mutex are one idea; a group
    # commit is a batch)
    "batched": _CB[2],
    "atomic": _CB[0],
    "lock": _CB[3],
    "mutex": _CB[3],
    "queue": _CB[4],
    "no lock": _CB[5],
    "coarse lock": _CB[3],
    "queue to owner": _CB[4],
    "queue + group commit": _CB[2],
    # chapter 4: variants of the pre-fork and asyncio servers, in their model's hue but far lighter or
    # darker (a student's trial could not tell nearer shades apart on a bar chart)
    "prefork --reuseport": _mix(_CB[0], (1.0, 1.0, 1.0), 0.55),
    "asyncio --offload": _mix(_CB[2], (1.0, 1.0, 1.0), 0.55),
    "asyncio per core": _mix(_CB[2], (0.0, 0.0, 0.0), 0.5),
    # chapter 13: ways to read a file (a thread pool is threads' colour; the two Python rings one hue, far
    # apart in lightness; fio, the compiled reference, black, as a published line is grey)
    "thread pool": _CB[1],
    "io_uring (Python, a call per read)": _CB[0],
    "io_uring (Python, batched)": _mix(_CB[0], (1.0, 1.0, 1.0), 0.55),
    "fio io_uring": (0.1, 0.1, 0.1),
    "published": (0.55, 0.55, 0.55),
    "reference": (0.35, 0.35, 0.35),
}
PAGE_SIZES = {"4 KiB": _CB[0], "2 MiB (huge)": _CB[3]}


def use_style() -> None:
    """Apply the book's theme to every figure drawn after this call, and show every table cell whole."""
    sns.set_theme(context="notebook", style="whitegrid", palette="colorblind")
    plt.rcParams.update(
        {
            "figure.figsize": (7.0, 4.0),
            "figure.dpi": 100,
            "savefig.dpi": 150,
            "axes.titleweight": "bold",
            "axes.titlesize": 12,
            "legend.frameon": False,
        }
    )
    # Tables glued into the pages show whole sentences (a claim, its verdict), not 50 characters and "...".
    pd.set_option("display.max_colwidth", None)


def caption(scale: Scale) -> str:
    """'measured on <machine>, scale=<quick|full>' for a figure's subtitle."""
    return f"measured on {machine.describe()} · IOLAB_SCALE={scale.name}"


def figure(title: str, scale: Scale, ncols: int = 1, width: float = 7.0, height: float = 4.0):
    """A new figure with ``ncols`` axes, a title, and the measured-where caption underneath it."""
    fig, axes = plt.subplots(1, ncols, figsize=(width, height), layout="constrained", squeeze=False)
    fig.suptitle(title, fontweight="bold")
    fig.text(0.5, -0.02, caption(scale), ha="center", va="top", fontsize=8, color="0.4")
    return fig, (axes[0, 0] if ncols == 1 else list(axes[0]))


# The reference run's groups are all grey, so each gets its own dashes and marker to be told apart.
REFERENCE_STYLES = (("--", "o"), (":", "s"), ("-.", "^"), ((0, (6, 2, 1, 2, 1, 2)), "D"))


def overlay_reference(ax, reference, x: str, y: str, by: str | None = None) -> None:
    """Draw a reference run (see ``results.reference``) on ``ax`` as grey lines of medians, one style per group."""
    if reference is None or reference.empty:
        return
    groups = reference.groupby(by) if by else [(None, reference)]
    for (key, group), (dashes, marker) in zip(groups, itertools.cycle(REFERENCE_STYLES)):
        medians = group.groupby(x, as_index=False)[y].median()
        label = reference["machine"].iloc[0] + (f" · {key}" if key is not None else "")
        ax.plot(medians[x], medians[y], ls=dashes, lw=1, marker=marker, ms=3, color=PALETTE["reference"], alpha=0.7, label=label)


def plain_log_axis(axis) -> None:
    """Label a log ``axis`` (``ax.xaxis``) at 1, 3, 10, 30... in plain numbers, and its minor ticks not at all.

    Matplotlib labels the minor ticks of an axis shorter than a few decades, and on a narrow plot
    their labels run into each other.
    """
    axis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1.0, 3.0)))
    axis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:,.0f}" if value >= 1 else f"{value:g}"))
    axis.set_minor_formatter(matplotlib.ticker.NullFormatter())


def glue(name: str, value: Any) -> None:
    """Store ``value`` under ``name`` for the book's prose pages (myst-nb glue).

    A figure is shown once, by the glue itself, and closed, so that the notebook's inline backend
    does not show it a second time. Other values are stored without being shown. Without myst-nb,
    figures are simply shown and values returned, so notebooks run anywhere.
    """
    is_figure = isinstance(value, plt.Figure)
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        value = value.item()  # a numpy scalar's repr (np.float64(1.5)) is no number to the prose
    try:
        from myst_nb import glue as myst_glue
    except ImportError:
        if is_figure:
            plt.show()
        return
    myst_glue(name, value, display=is_figure)
    if is_figure:
        plt.close(value)


def not_measured(tool: str) -> str:
    """The words the prose shows instead of a figure that needs ``tool``, where it is not installed."""
    return f"not measured here (install {tool})"


def optional_text(value: Any, template: str, tool: str) -> str:
    """``template`` filled with ``value``, or :func:`not_measured` if there is no value.

    For figures only an optional tool (Go, Node.js, wrk, ab, nginx) can measure. The template carries
    the unit ("{:.1f} ns"), which must go when the number does. ``value`` may be a dict of several
    figures of one run, named in the template ("{wall:.1f} s, {threads:.0f} OS threads"): then any
    one missing counts as no value.
    """
    values = list(value.values()) if isinstance(value, dict) else [value]
    if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
        return not_measured(tool)
    return template.format(**value) if isinstance(value, dict) else template.format(value)


def glue_optional(name: str, value: Any, template: str, tool: str) -> None:
    """Glue :func:`optional_text` under ``name``.

    The prose pastes it as it is (``{glue:text}`...::name:s```), so a missing tool reads as a
    sentence, never as "nan".
    """
    glue(name, optional_text(value, template, tool))


def text_where_available(value: Any, template: str, facility: str) -> str:
    """``template`` filled with ``value``, or, where ``value`` is None, why ``facility`` could not measure it.

    For figures only a Linux facility can measure (:mod:`iolab.kit.platforms`: epoll, ``/proc``...), as
    :func:`optional_text` is for those only an optional tool can.
    """
    if value is None:
        return f"not measured here (needs {platforms.FACILITIES[facility].needs})"
    return template.format(**value) if isinstance(value, dict) else template.format(value)


def glue_where_available(name: str, value: Any, template: str, facility: str) -> None:
    """Glue :func:`text_where_available` under ``name``.

    The prose pastes it as it is (``:s``), so that a skipped figure reads as a sentence on macOS.
    """
    glue(name, text_where_available(value, template, facility))
