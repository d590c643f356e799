"""Task switches recorded by ``EventLoop(trace=True)``, as a table and as a timeline.

Kept apart from the loop so that running the loop never imports pandas or matplotlib.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from iolab.scratchloop.loop import Switch

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.axes import Axes

# What a step can end in, by the first word of the awaited future's label, and its colour.
KINDS = {"readable": "tab:blue", "writable": "tab:orange", "sleep": "tab:green", "task": "tab:purple",
         "done": "black", "raised": "tab:red"}


def kind(label: str) -> str:
    """The kind of wait a future label names: readable, writable, sleep, task, done or raised."""
    word = label.split(" ", 1)[0]
    return word if word in KINDS else "task"  # any other label is a task's name: waiting for that task


def to_frame(switches: Iterable[Switch]) -> pd.DataFrame:
    """One row per task step: task, start/end (ms), what woke it, what it waits for now and its kind."""
    import pandas as pd

    frame = pd.DataFrame([(s.task, s.start_s * 1e3, s.end_s * 1e3, s.woke_by, s.waits_for) for s in switches],
                         columns=["task", "start_ms", "end_ms", "woke_by", "waits_for"])
    frame["step_us"] = (frame.end_ms - frame.start_ms) * 1e3
    frame["kind"] = frame.waits_for.map(kind)
    return frame


def draw_timeline(ax: Axes, frame: pd.DataFrame) -> None:
    """One row per task: a grey line while it lives, a dot per step coloured by what it waits for next."""
    tasks = list(dict.fromkeys(frame.task))  # in order of first appearance
    rows = {task: i for i, task in enumerate(tasks)}
    for task, steps in frame.groupby("task", sort=False):
        ax.hlines(rows[task], steps.start_ms.min(), steps.end_ms.max(), color="0.8", lw=1, zorder=1)
    for name, steps in frame.groupby("kind", sort=False):
        ax.scatter(steps.start_ms, steps.task.map(rows), s=18, color=KINDS[name], label=name, zorder=2)
    ax.set_yticks(range(len(tasks)), tasks)
    ax.invert_yaxis()
    ax.set(xlabel="time since the loop started (ms)", ylabel="task")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), title="then waits for", title_fontsize=8)
