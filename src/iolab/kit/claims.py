"""A chapter's claims: declared beside the experiment that decides them, decided by this run and by the reference.

A claim is code: the statement the book makes ("pre-fork serves the CPU-bound route faster than one
asyncio process"), the verdict that statement asserts, and a function that decides it from the
experiment's data (a :class:`iolab.kit.verdicts.Comparison`). :meth:`Claims.decide` decides it on
this run's data and glues its words (``04-claim-NAME``: "faster (2.9-3.1x)") for the prose, which
never types the comparison itself. The same function decides it on the reference run's data
(``data/reference/DATA.csv``), and :meth:`Claims.what_held` glues the table each chapter page ends
with: each claim, what this run said, what the reference run said, and, where the two disagree,
why they can. It also saves this run's verdicts (``CHAPTER-claims``), so that two runs can be set side
by side (:func:`flips`: a claim one run called higher and another lower was decided by chance).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from iolab.kit import plots, results
from iolab.kit.scale import scale
from iolab.kit.verdicts import Comparison, Verdict

HELD, NOT_HELD, UNDECIDED = "held", "did not hold", "not decided"


@dataclass(frozen=True)
class Claim:
    """A statement the book makes, the verdict it asserts, and how an experiment's data decides it.

    ``data`` names the results (``results.save(df, DATA)``) that ``decide`` reads; ``higher`` and
    ``lower`` are the words for the two directions ("faster", "slower"); ``why_it_can_differ`` is
    shown where this run and the reference disagree (cores, kernel, disk, a virtual machine).
    """

    name: str
    statement: str
    expect: Verdict
    decide: Callable[[pd.DataFrame], Comparison]
    data: str
    higher: str = "higher"
    lower: str = "lower"
    why_it_can_differ: str = ""

    def words(self, comparison: Comparison, run: str = "this run") -> str:
        """The comparison in this claim's words (``run``: whose data, for "not decided by ...")."""
        return comparison.words(self.higher, self.lower, run)


def _matching(data: pd.DataFrame, where: dict[str, object]) -> pd.DataFrame:
    """The rows of ``data`` whose columns equal the values named."""
    rows = pd.Series(True, index=data.index)
    for name, value in where.items():
        rows &= data[name] == value
    return data[rows]


def values(data: pd.DataFrame, column: str, **where: object) -> pd.Series:
    """``column`` of the rows of ``data`` whose columns equal the values named: ``values(df, "rps", server="prefork")``."""
    rows = _matching(data, where)
    if rows.empty:
        raise ValueError(f"no rows of the data where {where}: is the experiment's data the one this claim reads?")
    return rows[column]


def paired_ratios(data: pd.DataFrame, column: str, by: str, a: str, b: str, pair: str = "repeat", **where: object) -> pd.Series:
    """Per ``pair`` (a repeat), ``column`` where ``by`` is ``a`` divided by where it is ``b``.

    Runs taken in turns share a machine's slow patches; a ratio within each turn cancels them.
    """
    table = _matching(data, where).pivot_table(index=pair, columns=by, values=column, aggfunc="median")
    ratios: pd.Series = (table[a] / table[b]).dropna()
    return ratios


def held(claim: Claim, comparison: Comparison | None) -> str:
    """``held``, ``did not hold`` or ``not decided`` (also when there is no data to decide on)."""
    if comparison is None or comparison.verdict == "undecided":
        return UNDECIDED
    return HELD if comparison.verdict == claim.expect else NOT_HELD


def verdict_words(claim: Claim, comparison: Comparison, run: str = "this run") -> str:
    """"held: faster (1.9-2.1x)", or the words alone where the run did not decide ("not decided by this run ...")."""
    verdict = held(claim, comparison)
    said = claim.words(comparison, run)
    return said if verdict == UNDECIDED else f"{verdict}: {said}"


NOT_MEASURED = "not measured here"
REFERENCE_RUN = "the reference run"
# Verdicts that contradict each other. "the same" or "not decided" against either is no flip: the noise
# band, or the spread, allowed both.
OPPOSITE = {("higher", "lower"), ("lower", "higher")}


RECORD = ["chapter", "claim", "statement", "scale", "expect", "verdict", "held", "ratio", "low", "high"]


def record(chapter: str, claim: Claim, comparison: Comparison | None, at_scale: str | None = None) -> dict[str, object]:
    """One claim's verdict on a run: a row of the chapter's ``NN-claims`` results (columns ``RECORD``).

    ``at_scale`` is the scale of the run whose data decided it (default: this run's).
    """
    return {"chapter": chapter, "claim": claim.name, "statement": claim.statement, "scale": at_scale or scale().name,
            "expect": claim.expect, "verdict": comparison.verdict if comparison else NOT_MEASURED,
            "held": held(claim, comparison) if comparison else NOT_MEASURED,
            "ratio": comparison.ratio if comparison else None,
            "low": comparison.low if comparison else None, "high": comparison.high if comparison else None}


ON_REFERENCE = "-on-reference"  # NN-claims-on-reference: the reference run's data decided by this run's notebook


def recorded(folder: Path, on_reference: bool = False) -> pd.DataFrame:
    """Every chapter's ``NN-claims.csv`` in ``folder`` (``data/measured``, ``data/reference``), as one frame.

    With ``on_reference``, the ``NN-claims-on-reference.csv`` files instead: the reference run's data as
    this run's claims decide it (what :meth:`Claims.what_held` saves beside this run's verdicts).
    """
    files = sorted(folder.glob(f"*-claims{ON_REFERENCE if on_reference else ''}.csv"))
    frames = [pd.read_csv(f, dtype={"chapter": str}).assign(machine=_machine(f.with_suffix(".json"))) for f in files]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*RECORD, "machine"])


def _machine(described: Path) -> str:
    """The processor and core count a run's JSON names ("" when it names none): what decides whether two
    runs' verdicts should agree. A reader's 8-core laptop may rightly decide otherwise than the reference."""
    try:
        run = json.loads(described.read_text())
    except (OSError, ValueError):
        return ""
    return f"{run['cpu']}, {run['cores']} cores" if isinstance(run, dict) and "cpu" in run and "cores" in run else ""


def flips(earlier: pd.DataFrame, later: pd.DataFrame) -> pd.DataFrame:
    """The claims two runs at the same scale, on the same kind of machine, decided in opposite directions,
    with both runs' columns.

    Runs at different scales are different experiments (shorter, fewer clients), and runs on different
    processors or core counts may differ by design (each claim says why it can): neither is compared. A run
    that names no machine is compared with any.
    """
    both = comparable(earlier, later)
    opposite = [(a, b) in OPPOSITE for a, b in zip(both["verdict earlier"], both["verdict later"])]
    return both[pd.Series(opposite, index=both.index, dtype=bool)]


def comparable(earlier: pd.DataFrame, later: pd.DataFrame) -> pd.DataFrame:
    """The claims both runs decided at the same scale on the same kind of machine, side by side."""
    def named(run: pd.DataFrame) -> pd.DataFrame:  # a frame built by hand names no machine: compared with any
        return run if "machine" in run else run.assign(machine="")

    both = named(earlier).merge(named(later), on=["chapter", "claim", "scale"], suffixes=(" earlier", " later"))
    a, b = both["machine earlier"].fillna(""), both["machine later"].fillna("")
    return both[(a == b) | (a == "") | (b == "")]


def stale(shipped: pd.DataFrame, decided: pd.DataFrame) -> pd.DataFrame:
    """The claims whose shipped reference verdict (``data/reference/NN-claims.csv``) is missing or differs
    from what the reference data decides today (``NN-claims-on-reference``): a claim added or changed
    since the reference verdicts were recorded (``python -m iolab claims --record-reference``)."""
    both = decided.merge(shipped, on=["chapter", "claim"], how="left", suffixes=("", " shipped"))
    # The reference data decide a claim the same way every time (the bootstrap is seeded): a ratio that moved
    # means the data or the claim changed since the verdicts were recorded, even where the words did not.
    ratio, recorded_ratio = (pd.to_numeric(both[c], errors="coerce") if c in both else pd.Series(np.nan, index=both.index)
                             for c in ("ratio", "ratio shipped"))
    moved = ~np.isclose(ratio, recorded_ratio, rtol=1e-6, equal_nan=True)
    return both[both["verdict shipped"].isna() | (both["verdict"] != both["verdict shipped"])
                | (both["expect"] != both["expect shipped"]) | moved]


def on_reference(claim: Claim, reference: Callable[[str], pd.DataFrame | None]) -> Comparison | None:
    """``claim`` decided on the reference run's data; None where none is shipped."""
    data = reference(claim.data)
    return claim.decide(data) if data is not None else None


@dataclass
class Claims:
    """The claims one chapter has decided so far in this run, in order.

    ``part`` names one notebook's share of a chapter whose claims span several notebooks
    (``Claims("11", part="shootout")``): its verdicts are saved as ``CHAPTER-PART-claims`` and its
    table glued as ``CHAPTER-PART-what-held``, so that no notebook overwrites another's; its claims'
    words are still glued as ``CHAPTER-claim-NAME``.
    """

    chapter: str
    part: str = ""
    decided: dict[str, tuple[Claim, Comparison | None]] = field(default_factory=dict)

    @property
    def prefix(self) -> str:
        """``CHAPTER``, or ``CHAPTER-PART``: the start of the names of this notebook's saved verdicts and table."""
        return f"{self.chapter}-{self.part}" if self.part else self.chapter

    def decide(self, claim: Claim, data: pd.DataFrame) -> Comparison:
        """Decide ``claim`` on this run's ``data``; glue its words as ``CHAPTER-claim-NAME``."""
        comparison = claim.decide(data)
        self.decided[claim.name] = (claim, comparison)
        plots.glue(f"{self.chapter}-claim-{claim.name}", claim.words(comparison))
        return comparison

    def not_measured(self, claim: Claim, why: str,
                     reference: Callable[[str], pd.DataFrame | None] = results.reference) -> Comparison | None:
        """Record that this machine could not decide ``claim`` (``why``: a missing tool or kernel feature).

        The prose still pastes words: the reference run's verdict, labelled as the reference's, or
        that nothing decided it.
        """
        self.decided[claim.name] = (claim, None)
        there = on_reference(claim, reference)
        if there is None:
            words = f"{NOT_MEASURED} ({why})"
        elif there.verdict == "undecided":  # "not decided by the reference run (...)" names it already
            words = f"{claim.words(there, REFERENCE_RUN)} ({NOT_MEASURED}: {why})"
        else:
            words = f"{claim.words(there)} on {REFERENCE_RUN} ({NOT_MEASURED}: {why})"
        plots.glue(f"{self.chapter}-claim-{claim.name}", words)
        return there

    def what_held(self, reference: Callable[[str], pd.DataFrame | None] = results.reference,
                  save: Callable[[pd.DataFrame, str], object] = results.save,
                  reference_scale: Callable[[str], str | None] = results.reference_scale) -> pd.DataFrame:
        """Each claim on this run and on the reference run; glued as ``CHAPTER-what-held`` (``CHAPTER-PART-...``).

        This run's verdicts are saved as ``CHAPTER-claims`` (``CHAPTER-PART-claims``), and the reference
        data's as ``CHAPTER-claims-on-reference``: ``python -m iolab claims`` finds the claims two runs
        decided oppositely, and the reference verdicts ``data/reference/`` records that are out of date.
        """
        theirs = {name: on_reference(claim, reference) for name, (claim, _) in self.decided.items()}
        save(pd.DataFrame([record(self.chapter, claim, here) for claim, here in self.decided.values()]),
             f"{self.prefix}-claims")
        save(pd.DataFrame([record(self.chapter, claim, theirs[claim.name], reference_scale(claim.data) or "none")
                           for claim, _ in self.decided.values()], columns=RECORD),
             f"{self.prefix}-claims{ON_REFERENCE}")
        rows = []
        for claim, here in self.decided.values():
            there = theirs[claim.name]
            agree = here is None or there is None or held(claim, here) == held(claim, there)
            this_run = NOT_MEASURED if here is None else verdict_words(claim, here) + (f" [{here.warning}]" if here.warning else "")
            rows.append({
                "claim": claim.statement,
                "this run": this_run,
                "reference run": verdict_words(claim, there, REFERENCE_RUN) if there is not None else "no reference run",
                "why they can differ": "" if agree else claim.why_it_can_differ or "this machine is not the reference's",
            })
        table = pd.DataFrame(rows, columns=["claim", "this run", "reference run", "why they can differ"])
        plots.glue(f"{self.prefix}-what-held", table.set_index("claim"))  # rows named by their claim
        return table
