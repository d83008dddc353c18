"""One point measured by several load generators at once (`fleet run --together`): the
parts each host measured, made into the one point the store keeps. Pure: parts in,
a measurement, a per-second series and the details out.

- **Split**: a level's threads and clients shared out as evenly as whole numbers allow
  (the first hosts take one more), so that the parts add up to the level; an offered
  rate (a workload's `options.rate`, `--rate`) too, in the steps its tool's option takes
  (pgbench -R: tenths of a TPS; sysbench --rate: whole TPS), so that the hosts together
  offer the point's rate, not each of them all of it.
- **Skew**: the spread of the moments the hosts' first transactions began (pgbench's
  per-transaction log: completion time minus latency; a tool without such a log:
  the moment it was started), against 1 % of the point's duration.
- **Common window**: each host's interval series (one sample a second) is placed on
  the wall clock (its tool's start + the sample's elapsed second) and matched to the
  nearest interval of the host that started last; the intervals every host has are the
  common window. The point's TPS and QPS are the mean of the summed series over that
  window: what the server did while all the load was on it, not the ramps at either
  end where only some hosts ran.
- **Counts** (transactions, queries, failures) are the sums of the parts, whole runs.
- **Latency**: the hosts' HDR histograms merged (stats/latency.py: merging histograms
  is exact, the same as the histogram of the union of the logs); the average is
  weighted by transactions, the standard deviation pooled (the parallel-variance
  formula: Chan, Golub, LeVeque 1979), minimum and maximum over the parts.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Iterable, Sequence

from dbarena.model import Measurement, Sample
from dbarena.records import JSONObject
from dbarena.stats.latency import Latencies, merged
from dbarena.stats import pooling
from dbarena.stats.pooling import summed as _sum

# A start skew above this share of the point's duration is flagged.
SKEW_LIMIT = 0.01


@dataclass(frozen=True)
class Part:
    """What one host measured of a point."""

    host: str                  # its inventory name
    label: str                 # its label
    threads: int
    clients: int
    launched_at: float         # Unix time its tool was started
    first_at: float | None     # Unix time its first transaction began (None: not known)
    measurement: Measurement
    samples: tuple[Sample, ...]
    latencies: Latencies | None
    command: tuple[str, ...] = ()  # what it ran
    cpu: JSONObject = field(default_factory=dict)  # its tool's cores and the host's busy share

    @property
    def began_at(self) -> float:
        return self.first_at if self.first_at is not None else self.launched_at


def split(total: int, n: int) -> list[int]:
    """total shared out over n hosts, the first hosts one more; ValueError when some
    host would get none."""
    if n < 1 or total < n:
        raise ValueError(f"{total} cannot be split over {n} load generators (each needs at least 1)")
    return [total // n + (1 if i < total % n else 0) for i in range(n)]


def split_rate(rate: float, n: int, whole: bool) -> list[str]:
    """An offered rate shared out over n hosts as split() shares whole numbers, in the
    steps the tool's option takes (`whole`: whole TPS, else tenths), as that option's
    text; ValueError when some host would get none (sysbench --rate=0 is no limit at all)."""
    step = 1 if whole else 10
    try:
        shares = split(round(rate * step), n)
    except ValueError:
        least = "1" if whole else "0.1"
        raise ValueError(f"the offered rate {rate:g} TPS cannot be split over {n} load generators "
                         f"(each needs at least {least} TPS)") from None
    return [str(s) if whole else f"{s / step:.1f}" for s in shares]


def first_transaction_start(lines: Iterable[str], clients: int | None = None) -> float | None:
    """The Unix time the earliest transaction of a pgbench per-transaction log began:
    over each client's first line (its transactions are sequential, so its first is its
    earliest), time_epoch.time_us minus the latency. Reads until every one of `clients`
    has been seen (all lines when None). Lines without a latency (skipped, failed) and
    a header line are passed over."""
    seen: set[str] = set()
    earliest: float | None = None
    for line in lines:
        fields = line.split()
        if len(fields) < 6 or fields[0] in seen or not fields[2].isdigit():
            continue
        seen.add(fields[0])
        start = int(fields[4]) + int(fields[5]) / 1e6 - int(fields[2]) / 1e6
        earliest = start if earliest is None else min(earliest, start)
        if clients is not None and len(seen) >= clients:
            break
    return earliest


def skew_s(parts: Sequence[Part]) -> float:
    """How far apart the hosts' first transactions began."""
    starts = [p.began_at for p in parts]
    return max(starts) - min(starts)


def aligned(parts: Sequence[Part]) -> tuple[Sample, ...]:
    """The hosts' series summed over the common window (see the module's docstring),
    each sample's `second` the elapsed time of the host that started last."""
    reference = max(parts, key=lambda p: p.launched_at)
    grid = [reference.launched_at + s.second for s in reference.samples]
    matched: list[dict[int, Sample]] = []
    for part in parts:
        found: dict[int, Sample] = {}
        for sample in part.samples:
            at = part.launched_at + sample.second
            index = min(range(len(grid)), key=lambda j: abs(grid[j] - at)) if grid else None
            if index is not None and abs(grid[index] - at) < 0.5:
                found[index] = sample
        matched.append(found)
    out = []
    for j, sample in enumerate(reference.samples):
        if all(j in found for found in matched):
            out.append(_summed(sample.second, [found[j] for found in matched]))
    return tuple(out)




def _summed(second: float, samples: Sequence[Sample]) -> Sample:
    tps = sum(s.tps for s in samples)
    latencies = [s.latency_ms for s in samples]
    # The interval's average latency over all its transactions: weighted by each host's TPS.
    latency = (sum(s.tps * s.latency_ms for s in samples if s.latency_ms is not None) / tps
               if tps > 0 and all(v is not None for v in latencies) else None)
    return Sample(
        second=second, tps=tps, latency_ms=latency, failed=_sum([s.failed for s in samples]),
        skipped=_sum([s.skipped for s in samples]), retried=_sum([s.retried for s in samples]),
        retries=_sum([s.retries for s in samples]), threads=_sum([s.threads for s in samples]),
        qps=_sum([s.qps for s in samples]), reads_per_s=_sum([s.reads_per_s for s in samples]),
        writes_per_s=_sum([s.writes_per_s for s in samples]), other_per_s=_sum([s.other_per_s for s in samples]),
        errors_per_s=_sum([s.errors_per_s for s in samples]),
        reconnects_per_s=_sum([s.reconnects_per_s for s in samples]),
    )






def combine(parts: Sequence[Part], duration_s: float) -> tuple[Measurement, tuple[Sample, ...], JSONObject]:
    """The one point of several parts: its measurement (percentiles from the merged
    histogram still to be read off it: see merged_latencies), its series over the
    common window, and the details that say how it was made."""
    if not parts:
        raise ValueError("no parts to combine")
    series = aligned(parts)
    measurement = _measurement([p.measurement for p in parts], series)
    details = _details(parts, series, duration_s)
    return replace(measurement, details={**measurement.details, **details}), series, details




def _measurement(ms: Sequence[Measurement], series: tuple[Sample, ...]) -> Measurement:
    # Over the common window; without one (a run shorter than an interval) the parts' own rates.
    tps = (sum(s.tps for s in series) / len(series) if series else _sum([m.tps for m in ms]))
    qps_known = [s.qps for s in series if s.qps is not None]
    qps = (sum(qps_known) / len(series) if series and len(qps_known) == len(series) else _sum([m.qps for m in ms]))
    return pooling.pooled(ms, tps=tps, qps=qps, details={k: v for k, v in ms[0].details.items() if k != "histogram"})


def _details(parts: Sequence[Part], series: tuple[Sample, ...], duration_s: float) -> JSONObject:
    skew = skew_s(parts)
    window = (series[-1].second - series[0].second + 1.0) if series else 0.0
    return {
        "load_generators": len(parts),
        "together": {
            "split": [{"host": p.host, "label": p.label, "threads": p.threads, "clients": p.clients} for p in parts],
            "start_skew_ms": round(skew * 1000.0, 3),
            "start_skew_limit_ms": round(SKEW_LIMIT * duration_s * 1000.0, 3),
            "start_skew_flagged": skew > SKEW_LIMIT * duration_s,
            "start_skew_from": "first transaction" if all(p.first_at is not None for p in parts) else "tool start",
            "common_window_s": window,
            "parts": [_part_record(p) for p in parts],
        },
    }


def merged_latencies(parts: Sequence[Part]) -> Latencies | None:
    """The hosts' histograms as one (None unless every part has one)."""
    if any(p.latencies is None for p in parts):
        return None
    return merged(p.latencies for p in parts if p.latencies is not None)


_KEPT = ("tps", "transactions", "qps", "queries", "failed_transactions", "errors", "latency_avg_ms",
         "latency_stddev_ms", "latency_min_ms", "latency_max_ms", "latency_p50_ms", "latency_p95_ms",
         "latency_p99_ms", "initial_connection_ms")


def _part_record(part: Part) -> JSONObject:
    """A host's part as kept in the point's details: its figures, when it started and
    its series (its histogram too, so that its percentiles can be read again)."""
    figures = asdict(part.measurement)
    return {
        "host": part.host, "label": part.label, "threads": part.threads, "clients": part.clients,
        "launched_at": part.launched_at, "first_at": part.first_at,
        **{k: figures[k] for k in _KEPT},
        "samples": [[s.second, s.tps] + ([s.qps] if s.qps is not None else []) for s in part.samples],
        "latency_histogram": part.latencies.encode() if part.latencies is not None else None,
        **({"command": list(part.command)} if part.command else {}),
        **part.cpu,
    }
