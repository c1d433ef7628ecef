# cython: annotation_typing=False
"""Streaming metrics with memory independent of the log size."""

from __future__ import annotations

from collections import Counter

try:
    import cython
except ImportError:  # not compiled, and Cython not installed: the declaration below means nothing
    from rmkit import _cython_shadow as cython


class LatencyHistogram:
    """Log-linear histogram of non-negative integers (milliseconds): exact below 1024, then 64
    sub-buckets per power of two (relative error under 1.6%). Percentiles without keeping values.

    Compiled, a C type (``metrics.pxd``) whose :meth:`add` the checker calls as a C method (it
    cimports the type): :meth:`add` runs per message and source."""

    __slots__ = ("buckets", "max", "min", "total")

    def __init__(self):
        # bucket -> values counted in it: a plain dict, which the compiled add reads and writes as
        # one (a Counter's get and set are Python-level calls: about 0.3 us of each add)
        self.buckets: dict[int, int] = {}
        self.total = 0
        self.max: int | None = None
        self.min: int | None = None

    @property
    def count(self) -> int:
        """Values counted: the buckets' sum (kept out of :meth:`add`, which runs per message and source)."""
        return sum(self.buckets.values())

    @staticmethod
    def _bucket(v: int) -> int:
        if v < 1024:
            return v
        shift = v.bit_length() - 7
        return ((shift + 1) << 16) | (v >> shift)

    @staticmethod
    def _value(b: int) -> int:
        if b < 1024:
            return b
        shift = (b >> 16) - 1
        return (b & 0xFFFF) << shift

    @cython.locals(buckets=dict)
    def add(self, v: int) -> None:
        """Count one value, an integer (called per message and source, so kept to plain
        operations); a negative one counts as 0."""
        if v < 1024:
            if v < 0:
                v = 0
            b = v
        else:
            shift = v.bit_length() - 7
            b = ((shift + 1) << 16) | (v >> shift)  # _bucket, inlined
        buckets = self.buckets
        buckets[b] = buckets.get(b, 0) + 1
        self.total += v
        top = self.max
        if top is None:
            self.max = self.min = v
        elif v > top:
            self.max = v
        elif v < self.min:
            self.min = v

    def merge(self, other: "LatencyHistogram") -> None:
        """Add another histogram's counts (used to combine the shares of a parallel run)."""
        buckets = self.buckets
        for b, n in other.buckets.items():
            buckets[b] = buckets.get(b, 0) + n
        self.total += other.total
        for name, pick in (("max", max), ("min", min)):
            values = [v for v in (getattr(self, name), getattr(other, name)) if v is not None]
            setattr(self, name, pick(values) if values else None)

    def percentile(self, q: float) -> int | None:
        count = self.count
        if not count:
            return None
        rank = q * (count - 1)
        seen = 0
        for b in sorted(self.buckets, key=self._value):
            seen += self.buckets[b]
            if seen > rank:
                return self._value(b)
        return self.max

    def share_at_most(self, limit: int) -> float | None:
        count = self.count
        if not count:
            return None
        return sum(n for b, n in self.buckets.items() if self._value(b) <= limit) / count

    def fitting_per_decade(self, bars: int = 30) -> int:
        """Bins per decade that give about ``bars`` bars over the values' range (10 to 40: never
        finer than the histogram's 1.6 % buckets can fill, never coarser than 10 a decade): a
        latency spread over 20..60 ms gets bars a reader can tell apart, one over 1 ms..1 h keeps
        10 a decade."""
        import math

        if not self.count:
            return 10
        span = math.log10(max(self.max, 1) / max(self.min, 1))
        return max(10, min(40, round(bars / max(span, 0.1))))

    def log_bins(self, per_decade: int = 10) -> list[list]:
        """Counts in bins of equal width on a log axis: [low, high, count] per non-empty bin, the
        edges 10**(k / per_decade) ms (values below 1 ms in [0, 1)). A bucket of the histogram
        goes to the bin holding its value (buckets are 1.6 % wide, so a value near an edge may land
        in the neighbouring bin)."""
        import math

        counts: Counter[int] = Counter()
        for b, n in self.buckets.items():
            v = self._value(b)
            counts[-1 if v < 1 else math.floor(math.log10(v) * per_decade + 1e-9)] += n
        edge = lambda k: round(10 ** (k / per_decade), 3)  # noqa: E731
        return [[0, 1, counts[-1]] if k == -1 else [edge(k), edge(k + 1), counts[k]] for k in sorted(counts)]

    def summary(self, promise: tuple[int, int] | None = None) -> dict:
        count = self.count
        out = {"count": count}
        if count:
            out |= {"min": self.min, "p50": self.percentile(0.5), "p90": self.percentile(0.9),
                    "p99": self.percentile(0.99), "max": self.max, "mean": round(self.total / count, 1)}
            if promise:
                out["promise_ms"] = list(promise)
                out["within_promise"] = round(self.share_at_most(promise[1]), 4)
        return out
