"""Two measured distributions compared: the ratio of their medians, an interval, and the words it earns.

pyperf's habits, carried one step further: repeat, show the spread, warn when the runs are unstable,
and then let the interval choose the words. :func:`compare` returns a :class:`Comparison` whose verdict
is one of

- ``"higher"`` or ``"lower"``: the whole interval lies on one side of 1, and the ratio is outside the
  noise band ("faster (1.42-1.61x)");
- ``"same"``: the whole interval lies inside the noise band ("the same within the noise (0.97-1.04x)");
- ``"undecided"``: neither; this run does not settle it ("not decided by this run (0.88-1.31x)").

The interval is a bootstrap percentile interval of the ratio of medians: each side is resampled with
replacement, ``RESAMPLES`` times, with a fixed seed (a notebook run twice gives the same words from
the same data). With three repeats a side it is little more than the range of the ratios the runs
allow, which is what three repeats can say.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

Verdict = Literal["higher", "lower", "same", "undecided"]

# Loopback figures on a shared machine move 10-20 % between runs: a smaller difference is not called.
NOISE = 0.10
RESAMPLES = 2000
CONFIDENCE = 0.95
# More samples than this a side are subsampled (evenly) before resampling: a latency run has 100,000.
MAX_SAMPLES = 2000
# pyperf calls a benchmark unstable when its runs' standard deviation exceeds 10 % of their mean.
UNSTABLE_CV = 0.10
MIN_REPEATS = 3


@dataclass(frozen=True)
class Comparison:
    """``a`` against ``b``: the ratio of their medians, its interval, the verdict and a warning if any."""

    ratio: float
    low: float
    high: float
    verdict: Verdict
    noise: float
    counts: tuple[int, int]
    warning: str = ""

    def words(self, higher: str = "higher", lower: str = "lower", run: str = "this run") -> str:
        """The verdict in words, with the interval: "faster (1.42-1.61x)" for ``higher="faster"``.

        ``run`` names the run whose data these are, for the undecided case ("not decided by the
        reference run").
        """
        span = f"{_shown(self.low)}-{_shown(self.high)}x"
        return {
            "higher": f"{higher} ({span})",
            "lower": f"{lower} ({span})",
            "same": f"the same within the noise ({span})",
            "undecided": f"not decided by {run} ({span})",
        }[self.verdict]


def _shown(ratio: float) -> str:
    """A ratio to two decimals, or to two significant digits below 0.01 (0.0031, not 0.00)."""
    return f"{ratio:.2g}" if 0 < abs(ratio) < 0.01 else f"{ratio:.2f}"


def _median_ratios(a: np.ndarray, b: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    pick_a = rng.integers(0, len(a), size=(RESAMPLES, len(a)))
    pick_b = rng.integers(0, len(b), size=(RESAMPLES, len(b)))
    ratios: np.ndarray = np.median(a[pick_a], axis=1) / np.median(b[pick_b], axis=1)
    return ratios


def _thinned(values: np.ndarray) -> np.ndarray:
    if len(values) <= MAX_SAMPLES:
        return values
    kept: np.ndarray = np.sort(values)[np.linspace(0, len(values) - 1, MAX_SAMPLES).round().astype(int)]
    return kept


def _warning(name: str, values: np.ndarray) -> str:
    if len(values) < MIN_REPEATS:
        return f"{name}: {len(values)} run{'s' if len(values) != 1 else ''}, too few for a spread"
    cv = float(np.std(values) / np.mean(values)) if np.mean(values) else 0.0
    if len(values) <= 100 and cv > UNSTABLE_CV:  # repeats of one figure, not a run's many samples
        return f"{name}: unstable, its runs spread by {100 * cv:.0f} % of their mean"
    return ""


def verdict_of(low: float, high: float, ratio: float, noise: float = NOISE) -> Verdict:
    """The verdict an interval ``[low, high]`` around ``ratio`` earns with a noise band of ``noise``."""
    band_low, band_high = 1 / (1 + noise), 1 + noise
    if low > 1 and ratio >= band_high:
        return "higher"
    if high < 1 and ratio <= band_low:
        return "lower"
    if band_low <= low and high <= band_high:
        return "same"
    return "undecided"


def compare(a: Sequence[float], b: Sequence[float], noise: float = NOISE, names: tuple[str, str] = ("a", "b")) -> Comparison:
    """Compare the measurements ``a`` with ``b`` (repeats of one figure, or many samples of one run).

    ``noise`` is the band within which a ratio is "the same" (0.10: 0.91x to 1.10x). Raises
    ``ValueError`` on an empty side or a median of 0 in ``b``.
    """
    xs, ys = (np.asarray([v for v in side if np.isfinite(v)], dtype=float) for side in (a, b))
    if len(xs) == 0 or len(ys) == 0:
        raise ValueError(f"nothing to compare: {len(xs)} finite values of {names[0]}, {len(ys)} of {names[1]}")
    if np.median(ys) == 0:
        raise ValueError(f"{names[1]}'s median is 0: a ratio to it means nothing")
    ratio = float(np.median(xs) / np.median(ys))
    ratios = _median_ratios(_thinned(xs), _thinned(ys), np.random.default_rng(0))
    tail = 100 * (1 - CONFIDENCE) / 2
    low, high = (float(v) for v in np.percentile(ratios, [tail, 100 - tail]))
    warning = "; ".join(w for w in (_warning(names[0], xs), _warning(names[1], ys)) if w)
    return Comparison(ratio, low, high, verdict_of(low, high, ratio, noise), noise, (len(xs), len(ys)), warning)
