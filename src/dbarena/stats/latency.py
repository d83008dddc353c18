"""Latency distributions that merge: an HDR histogram per point, from pgbench's
per-transaction logs or sysbench's printed histogram, and the percentiles of it.

Why a histogram, not the values: a fast server logs tens of millions of transactions
per point; an HDR histogram (HdrHistogram's standard, through the `hdrhistogram`
package) holds them in a fixed ~190 kB whatever their number, with a stated relative
precision, and two of them add up exactly. So a summary over repeats or hosts takes
the percentiles of the merged histogram, never an average of percentiles.

Values are whole microseconds from 1 us to one hour, at 3 significant digits: a
percentile read from the histogram is within 0.1 % above the exact one (the upper edge of
the exact value's bucket: see Latencies.percentiles_ms). The encoded form is HDR's
own compressed V2 encoding (base64 text starting with "HISTF"), which other HDR tools
read too.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from dbarena.lazy import lazy_import
from dbarena.records import JSON, JSONObject, json_object

if TYPE_CHECKING:  # numpy itself is imported where it is used: most commands never need it
    import numpy as np
    import numpy.typing as npt

hdrh_histogram = lazy_import("hdrh.histogram")

LOWEST_US = 1
HIGHEST_US = 3_600_000_000  # one hour
SIGNIFICANT_DIGITS = 3
PRECISION = 10.0 ** -SIGNIFICANT_DIGITS  # relative: 0.1 %
ENCODING = "hdr-v2-base64"
# The percentiles dbarena reports, as (name suffix, percentile).
PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0), ("p999", 99.9),
)


def new_hdr() -> Any:  # hdrh.histogram.HdrHistogram (imported lazily)
    return hdrh_histogram.HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


@dataclass
class Latencies:
    """One point's (or a pool's) latency distribution.

    `count` latencies were recorded; `sum_us`, `min_us` and `max_us` are exact (from
    the values, not the buckets), so the mean is exact too. `over_range` counts
    latencies above an hour, recorded as an hour. `outcomes` counts log lines that
    carried no latency (pgbench: skipped, failed, serialization, deadlock).
    `sampling_rate` is the share of transactions logged (pgbench --sampling-rate),
    `source` says where the values came from."""

    # hdrh.histogram.HdrHistogram, made on first use: a reader makes a distribution per
    # block of a log, most of which only ever hold bucket counts (_pending).
    _hdr: Any = field(default=None, repr=False)
    count: int = 0
    sum_us: int = 0
    min_us: int | None = None
    max_us: int | None = None
    over_range: int = 0
    outcomes: dict[str, int] = field(default_factory=dict)
    sampling_rate: float | None = None
    source: str = ""
    _pending: npt.NDArray[np.int64] | None = field(default=None, repr=False, compare=False)  # counts per bucket

    @property
    def hdr(self) -> Any:
        if self._hdr is None:
            self._hdr = new_hdr()
        return self._hdr

    # -------------------------------------------------------------- recording

    def record_counts(self, values: npt.ArrayLike, counts: npt.ArrayLike | None = None) -> None:
        """Record each values[i] counts[i] times (once each without counts): whole
        microseconds, each > 0, as a sequence or a numpy array. The exact figures come
        from the values; each value's HDR bucket is counted in numpy (a bincount over the
        bucket indices) and reaches the histogram once per bucket when it is read, so
        that ten million latencies cost a few array passes, not ten million Python calls."""
        import numpy as np

        values = np.asarray(values, dtype=np.int64)
        if counts is not None:
            counts = np.asarray(counts, dtype=np.int64)
            values, counts = values[counts > 0], counts[counts > 0]
        if len(values) == 0:
            return
        self.count += len(values) if counts is None else int(counts.sum())
        self.sum_us += int(values.sum() if counts is None else (values * counts).sum())
        low, high = int(values.min()), int(values.max())
        self.min_us = low if self.min_us is None else min(self.min_us, low)
        self.max_us = high if self.max_us is None else max(self.max_us, high)
        if high > HIGHEST_US:
            over = values > HIGHEST_US
            self.over_range += int(over.sum() if counts is None else counts[over].sum())
        within = values if LOWEST_US <= low and high <= HIGHEST_US else np.clip(values, LOWEST_US, HIGHEST_US)
        buckets = np.bincount(bucket_index(within), weights=counts,  # (weights give floats: exact below 2**53)
                              minlength=COUNTS_LEN).astype(np.int64, copy=False)
        if self._pending is None:
            self._pending = buckets
        else:
            self._pending += buckets

    def record_array(self, values: npt.ArrayLike) -> None:
        """Record every value once (a numpy array from a log reader)."""
        self.record_counts(values)

    def _flush(self) -> None:
        """Bucket counts from record_array into the histogram."""
        import numpy as np

        pending, self._pending = self._pending, None
        if pending is None:
            return
        hdr = self.hdr
        for index in np.flatnonzero(pending).tolist():
            hdr.record_value(hdr.get_value_from_index(index), int(pending[index]))

    def add_outcome(self, outcome: str, n: int = 1) -> None:
        self.outcomes[outcome] = self.outcomes.get(outcome, 0) + n

    def merge(self, other: "Latencies") -> "Latencies":
        """Add other into this one (in place; returns self)."""
        if other.count:
            # Bucket counts not yet in a histogram are added as arrays (cheap); only what
            # is in other's histogram goes through hdrh.
            if other._pending is not None:
                self._pending = other._pending.copy() if self._pending is None else self._pending + other._pending
            if other._hdr is not None and other._hdr.get_total_count():
                self.hdr.add(other._hdr)
            self.count += other.count
            self.sum_us += other.sum_us
            if other.min_us is not None:
                self.min_us = other.min_us if self.min_us is None else min(self.min_us, other.min_us)
            if other.max_us is not None:
                self.max_us = other.max_us if self.max_us is None else max(self.max_us, other.max_us)
            self.over_range += other.over_range
        for outcome, n in other.outcomes.items():
            self.add_outcome(outcome, n)
        if self.sampling_rate != other.sampling_rate:
            self.sampling_rate = None  # pooled from differently sampled logs: no one rate
        if other.source and other.source not in self.source.split(", "):
            self.source = ", ".join(s for s in (self.source, other.source) if s)
        return self

    # -------------------------------------------------------------- reading

    @property
    def mean_ms(self) -> float | None:
        return self.sum_us / self.count / 1000.0 if self.count else None

    def percentiles_ms(self) -> dict[str, float | None]:
        """{"p50": ms, ..., "p999": ms, "max": ms}; None for an empty distribution.

        The p-th percentile is the smallest recorded value with at least ceil(p/100 x n)
        values at or below it (numpy's "inverted_cdf"), read from the histogram: the
        upper edge of that value's bucket, so never below the exact value and at most
        PRECISION above it (capped at the exact maximum). Not hdrh's own
        get_value_at_percentile, which rounds the rank half up and so can answer a
        value below the exact one. The maximum is the exact one."""
        import numpy as np

        names = [name for name, _ in PERCENTILES]
        if not self.count:
            return {**dict.fromkeys(names), "max": None}
        self._flush()
        hdr = self.hdr
        cumulative = np.cumsum(np.ctypeslib.as_array(hdr.counts)[:hdr.counts_len].astype(np.int64))
        total = int(cumulative[-1])
        out: dict[str, float | None] = {}
        for name, p in PERCENTILES:
            rank = max(1, math.ceil(p / 100.0 * total - 1e-9))  # (the float product may land a hair above)
            index = int(np.searchsorted(cumulative, rank))
            top = hdr.get_highest_equivalent_value(hdr.get_value_from_index(index))
            out[name] = min(top, self.max_us if self.max_us is not None else top) / 1000.0
        out["max"] = (self.max_us or 0) / 1000.0
        return out

    # -------------------------------------------------------------- storing

    def encode(self) -> JSONObject:
        """A JSON record: the HDR encoding and the exact figures beside it."""
        self._flush()
        return {
            "encoding": ENCODING, "unit": "us", "significant_digits": SIGNIFICANT_DIGITS,
            "hdr": self.hdr.encode().decode("ascii") if self.count else None,
            "count": self.count, "sum_us": self.sum_us, "min_us": self.min_us, "max_us": self.max_us,
            "over_range": self.over_range, "outcomes": dict(sorted(self.outcomes.items())),
            "sampling_rate": self.sampling_rate, "source": self.source,
        }

    @classmethod
    def decode(cls, record: Mapping[str, JSON]) -> "Latencies":
        """The distribution of a record encode() made (the store's edge checked its
        figures are counts and numbers, store/edge.histogram_fault)."""
        if record.get("encoding") != ENCODING:
            raise ValueError(f"latency histogram encoded as {record.get('encoding')!r}, which this dbarena "
                             "cannot read: upgrade dbarena")
        encoded = record.get("hdr")
        hdr = hdrh_histogram.HdrHistogram.decode(encoded) if isinstance(encoded, str) and encoded else new_hdr()
        rate = record.get("sampling_rate")
        return cls(_hdr=hdr, count=_whole(record.get("count")) or 0, sum_us=_whole(record.get("sum_us")) or 0,
                   min_us=_whole(record.get("min_us")), max_us=_whole(record.get("max_us")),
                   over_range=_whole(record.get("over_range")) or 0,
                   outcomes={name: n for name, v in json_object(record.get("outcomes")).items()
                             if (n := _whole(v)) is not None},
                   sampling_rate=float(rate) if isinstance(rate, (int, float)) and not isinstance(rate, bool) else None,
                   source=str(record.get("source") or ""))


def _whole(value: JSON) -> int | None:
    """A count (of microseconds, of latencies) as a record holds it, or None where it
    holds none."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return int(value)


# HDR's layout for SIGNIFICANT_DIGITS and a lowest value of 1: values below
# 2**SUB_BUCKET_BITS are their own bucket; above, bucket b (b >= 1) holds the values of
# bit length SUB_BUCKET_BITS + b in steps of 2**b, in half as many sub-buckets.
SUB_BUCKET_BITS = (2 * 10 ** SIGNIFICANT_DIGITS - 1).bit_length()  # 11: 2048 sub-buckets
HALF = 1 << (SUB_BUCKET_BITS - 1)
COUNTS_LEN = ((HIGHEST_US.bit_length() - SUB_BUCKET_BITS) + 2) * HALF


def bucket_index(values: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """HDR's counts index of each value (numpy int64 array, 1 <= value <= HIGHEST_US),
    the one hdrh's record_value uses (the tests compare them)."""
    import numpy as np

    # b: the values' bit length beyond SUB_BUCKET_BITS (0 for values that are their own
    # bucket), from the exponent of their float64, exact below 2**53. Two arrays made,
    # the rest in place: this runs over every latency of a log.
    b = np.array(values, dtype=np.float64).view(np.int64)
    b >>= 52  # the biased exponent: bit length + 1022
    b -= 1022 + SUB_BUCKET_BITS
    np.maximum(b, 0, out=b)
    index = np.right_shift(values, b)
    # Bucket b >= 1 starts at index (b + 1) * HALF and its first sub-bucket is HALF, so
    # index = b * HALF + (value >> b); for b = 0 that is the value, as it should be.
    index += np.left_shift(b, SUB_BUCKET_BITS - 1, out=b)
    return index


def merged(records: Iterable["Latencies"]) -> Latencies | None:
    """One distribution of many (None when there is none)."""
    out: Latencies | None = None
    for record in records:
        if out is None:
            out = Latencies(source=record.source, sampling_rate=record.sampling_rate)
        out.merge(record)
    return out


def from_bucket_rows(rows: Sequence[tuple[float, int]], source: str) -> Latencies:
    """A printed histogram of (value in ms, count) rows, e.g. sysbench's
    `--histogram=on`: each row's count recorded at its value. The tool's own bucket
    width (sysbench: about 1.8 %) stays the limit of what is known."""
    out = Latencies(source=source)
    out.record_counts([max(LOWEST_US, round(value * 1000)) for value, _ in rows], [n for _, n in rows])
    return out
