"""Where measurements go and where reference and published figures come from.

- ``save(df, name)`` writes ``data/measured/NAME.csv`` plus ``NAME.json``: this machine's fingerprint,
  the scale and the time of the run (a quick run replaces a full one's files: the JSON says which).
- ``reference(name)`` reads the same pair from ``data/reference/``: a run of the same notebook at full
  scale on the machine its JSON names, overlaid on the reader's plots.
- ``reference_scale(name)`` is the scale that reference run was measured at.
- ``published(source)`` reads ``data/published.csv``: figures as the sources print them.
"""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from iolab.kit import machine
from iolab.kit.paths import data_dir  # also for notebooks, which call results.data_dir()
from iolab.kit.scale import scale


def save(df: pd.DataFrame, name: str, folder: str = "measured") -> Path:
    """Write ``df`` to ``data/<folder>/NAME.csv`` and, to ``NAME.json``, this machine's fingerprint with the
    scale (``IOLAB_SCALE``) and the time of the run; the CSV path."""
    target = data_dir() / folder
    target.mkdir(parents=True, exist_ok=True)
    df.to_csv(target / f"{name}.csv", index=False)
    run = {"scale": scale().name, "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    (target / f"{name}.json").write_text(json.dumps(machine.fingerprint() | run, indent=2) + "\n")
    return target / f"{name}.csv"


def reference(name: str) -> pd.DataFrame | None:
    """The reference run ``NAME`` with a ``machine`` column naming where it ran; None if not shipped."""
    csv = data_dir() / "reference" / f"{name}.csv"
    if not csv.exists():
        return None
    fp = json.loads(csv.with_suffix(".json").read_text())
    label = f"reference: {fp['cpu']}, {fp['cores']} cores"
    return pd.read_csv(csv).assign(machine=label)


def reference_scale(name: str) -> str | None:
    """The scale the reference run ``NAME`` was measured at (its JSON's ``scale``); None if not shipped."""
    meta = data_dir() / "reference" / f"{name}.json"
    return str(json.loads(meta.read_text()).get("scale")) if meta.exists() else None


def published(source: str) -> pd.DataFrame:
    """Rows of ``data/published.csv`` from the source file whose name starts with ``source``."""
    table = pd.read_csv(data_dir() / "published.csv")
    return table[table["source"].str.startswith(source)].reset_index(drop=True)
