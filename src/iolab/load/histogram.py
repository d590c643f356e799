"""Latency histograms: HDR histograms of microseconds, mergeable across processes.

An HDR histogram keeps every value to 3 significant digits in a fixed set of buckets, so its
percentiles are exact to 0.1 % whatever the distribution, its size does not grow with the number of
samples, and two of them merge by adding counts. That last property is what lets each worker
process record its own and the manager add them up.
"""

from __future__ import annotations

from hdrh.histogram import HdrHistogram

# 1 us .. 60 s: from a loopback round trip to far beyond any per-request timeout worth setting.
LOWEST_US = 1
HIGHEST_US = 60_000_000
SIGNIFICANT_DIGITS = 3
# 3 significant digits give HDR 2048 sub-buckets: values below 2048 us are kept exactly, larger
# ones to 11 significant bits. Truncating a value to 11 bits is therefore lossless here.
EXACT_BITS = 11
# The percentiles every table in the course shows; "max" is added to them.
PERCENTILES = (50.0, 90.0, 99.0, 99.9, 99.99)


def percentile_key(p: float) -> str:
    """The name of a percentile in tables and JSON: 50 -> 'p50', 99.9 -> 'p99_9'."""
    return "p" + f"{p:g}".replace(".", "_")


class Histogram:
    """Latencies in microseconds; ``percentiles()`` reports them in milliseconds."""

    def __init__(self, hdr: HdrHistogram | None = None) -> None:
        self._hdr = hdr if hdr is not None else HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)
        # Values not yet in the HDR counts, value -> count. hdrh's record_value is pure Python
        # (~1 us); a dict increment is ~10x cheaper, and this sits on the load generator's hot path.
        self._pending: dict[int, int] = {}

    def record(self, us: int) -> None:
        """Add one value in microseconds (clamped into 1 us .. 60 s, so that no sample is lost)."""
        if us >= 2048:
            shift = us.bit_length() - EXACT_BITS
            us = us >> shift << shift  # the bucket HDR would put it in: bounds the dict's size
        pending = self._pending
        pending[us] = pending.get(us, 0) + 1

    @property
    def hdr(self) -> HdrHistogram:
        """The underlying hdrh histogram, every recorded value included."""
        if self._pending:
            for us, n in self._pending.items():
                self._hdr.record_value(min(max(us, LOWEST_US), HIGHEST_US), n)
            self._pending.clear()
        return self._hdr

    def record_seconds(self, seconds: float) -> None:
        """Add one value given in seconds."""
        self.record(round(seconds * 1e6))

    @property
    def count(self) -> int:
        """How many values were recorded."""
        return self.hdr.get_total_count()

    def merge(self, other: Histogram) -> Histogram:
        """Add ``other``'s counts into this histogram; this histogram."""
        if other.count:
            self.hdr.add(other.hdr)  # in place, bucket by bucket
        return self

    def percentile_us(self, p: float) -> int:
        """The value at percentile ``p`` (0..100), in microseconds; 0 when empty."""
        return self.hdr.get_value_at_percentile(p) if self.count else 0

    def mean_us(self) -> float:
        """The mean of the recorded values, in microseconds (to the histogram's precision); 0 when empty."""
        return self.hdr.get_mean_value() if self.count else 0.0

    def percentiles(self) -> dict[str, float]:
        """p50, p90, p99, p99.9, p99.99 and max in milliseconds (all 0.0 when empty)."""
        if not self.count:
            return {percentile_key(p): 0.0 for p in PERCENTILES} | {"max": 0.0}
        values = self.hdr.get_percentile_to_value_dict(list(PERCENTILES))
        out = {percentile_key(p): values[p] / 1000 for p in PERCENTILES}
        # The highest *equivalent* value, like the percentiles: max is never below p99.99.
        out["max"] = self.hdr.get_highest_equivalent_value(self.hdr.get_max_value()) / 1000
        return out

    def encode(self) -> str:
        """The histogram as compressed base64 text, to send between processes or store in JSON."""
        return self.hdr.encode().decode("ascii")

    @classmethod
    def decode(cls, text: str) -> Histogram:
        """The histogram ``encode`` wrote."""
        return cls(HdrHistogram.decode(text.encode("ascii")))

    @classmethod
    def merged(cls, histograms: list[Histogram]) -> Histogram:
        """A new histogram holding the counts of all of ``histograms``."""
        total = cls()
        for h in histograms:
            total.merge(h)
        return total
