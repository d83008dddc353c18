"""One point's per-second series: its warm-up, steady-state mean and interval within
the run, dips and trend, and the warnings (flags) a point or a summary can carry.

- Warm-up: MSER-5 (White 1997, "An effective truncation heuristic for bias reduction
  in simulation output"; Franklin & White 2008): average the series in batches of 5,
  and cut the prefix d that minimises the variance of the remaining mean,
  sum((Z_i - mean(Z_d+1..m))^2) / (m - d)^2, over d <= m/2.
- Interval of a single run: non-overlapping batch means (Law & Kelton, Simulation
  Modeling and Analysis, ch. 9.5.3) over the steady part: about sqrt(n) batches of
  about sqrt(n) seconds; while the batch means are still autocorrelated (lag-1 > 0.2),
  the batches are made twice as long (at least 4 kept). Student-t on the batch means.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Sequence

from dbarena.stats.estimate import Estimate, sample_stdev, t_dist


# ------------------------------------------------------------------ warm-up


MSER_MIN_BATCHES = 4

# What the short-series warning advises: long enough for MSER's warm-up cut (20 s) and
# batch means over what is left. --quick's 5 s points are shorter by design: the run
# says so once (session.quick_note) instead of this warning on every point.
ADVISED_DURATION_S = 30


def mser5(series: Sequence[float]) -> int:
    """Number of leading samples to drop as warm-up.

    With few batches MSER degenerates (the last batch alone has zero variance), so
    it needs at least MSER_MIN_BATCHES batches (20 s) and keeps at least half of them.
    """
    m = len(series) // 5
    if m < MSER_MIN_BATCHES:
        return 0
    # Batches aligned to the end, so the newest data (the steady state) is all used.
    offset = len(series) - 5 * m
    z = [sum(series[offset + 5 * i: offset + 5 * i + 5]) / 5 for i in range(m)]
    best_d, best = 0, math.inf
    for d in range(0, m // 2 + 1):
        tail = z[d:]
        mean = sum(tail) / len(tail)
        value = sum((x - mean) ** 2 for x in tail) / len(tail) ** 2
        if value < best:
            best_d, best = d, value
    return offset + 5 * best_d if best_d else 0


# ------------------------------------------------------------------ interval within the run


def _lag1(values: Sequence[float]) -> float:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values)
    if var == 0 or n < 3:
        return 0.0
    return sum((values[i] - mean) * (values[i + 1] - mean) for i in range(n - 1)) / var


def batch_means(series: Sequence[float], min_batches: int = 4) -> Estimate | None:
    """Mean of an autocorrelated series with a standard error from batch means."""
    n = len(series)
    if n < 2 * min_batches:
        return None
    size = max(1, math.isqrt(n))
    while True:
        k = n // size
        offset = n - k * size  # drop the oldest remainder, keep the newest data
        means = [sum(series[offset + i * size: offset + (i + 1) * size]) / size for i in range(k)]
        if k // 2 < min_batches or _lag1(means) <= 0.2:
            break
        size *= 2
    if k < 2:
        return None
    grand = sum(means) / k
    se = sample_stdev(means) / math.sqrt(k)
    return Estimate(mean=grand, se=se, df=k - 1, n=k)


# ------------------------------------------------------------------ one point's series


class Warning_(str, Enum):
    """Each warning with advice a user can act on (hyperfine's habit)."""

    HIGH_VARIATION = "high-variation"
    FEW_REPEATS = "few-repeats"
    FAILED_POINTS = "failed-points"
    LOADGEN_BOUND = "load-generator-bound"
    LONG_WARMUP = "long-warm-up"
    DIPS = "dips"
    TREND = "trend"
    SHORT_SERIES = "short-series"
    SEVERAL_HOSTS = "several-hosts"


@dataclass(frozen=True)
class Flag:
    code: Warning_
    message: str

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code.value, "message": self.message}


@dataclass(frozen=True)
class SteadyState:
    steady_start_s: float  # seconds of warm-up cut (0 if none)
    mean: float
    ci_low: float | None
    ci_high: float | None
    cv: float | None  # per-second variation within the steady part
    dips_s: tuple[float, ...] = ()
    trend_pct: float | None = None  # change over the steady part, when significant
    estimate: Estimate | None = None
    flags: tuple[Flag, ...] = field(default=())


def dips(values: Sequence[float], seconds: Sequence[float]) -> tuple[float, ...]:
    """Seconds whose value falls far below the rest: under the median minus 4 robust
    standard deviations (1.4826 x MAD) and under 90 % of the median."""
    if len(values) < 5:
        return ()
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values) * 1.4826
    limit = min(med - 4 * mad, 0.9 * med)
    return tuple(s for v, s in zip(values, seconds) if v < limit)


def trend(values: Sequence[float]) -> tuple[float, float] | None:
    """(relative change over the series, two-sided p) of a least-squares line."""
    n = len(values)
    if n < 6:
        return None
    xs = range(n)
    mx, my = (n - 1) / 2, statistics.fmean(values)
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, values)) / sxx
    residual = sum((y - (my + slope * (x - mx))) ** 2 for x, y in zip(xs, values))
    if residual == 0 or my == 0:
        return (slope * (n - 1) / my if my else 0.0), 0.0 if slope else 1.0
    se = math.sqrt(residual / (n - 2) / sxx)
    p = 2 * float(t_dist().sf(abs(slope / se), n - 2))
    return slope * (n - 1) / my, p


def steady_state(seconds: Sequence[float], values: Sequence[float], duration_s: float | None = None) -> SteadyState | None:
    """Warm-up, steady-state mean and its 95 % interval, dips and trend of a per-second
    series (tps of each interval report)."""
    if not values:
        return None
    cut = mser5(values)
    steady, steady_s = list(values[cut:]), list(seconds[cut:])
    start_s = seconds[cut - 1] if cut else 0.0
    est = batch_means(steady)
    mean = statistics.fmean(steady)
    interval = est.interval() if est else None
    cv = sample_stdev(steady) / mean if len(steady) > 1 and mean else None
    flags = []
    duration = duration_s or (seconds[-1] if seconds else 0)
    if est is None:
        flags.append(Flag(Warning_.SHORT_SERIES,
                          f"only {len(steady)} steady-state seconds: too few for an interval within the run; "
                          f"use a --duration of {ADVISED_DURATION_S} s or more"))
    if duration and start_s > duration / 3:
        flags.append(Flag(Warning_.LONG_WARMUP,
                          f"warm-up took {start_s:.0f} s of a {duration:.0f} s point: use a longer --duration "
                          "so that the steady state dominates"))
    found = dips(steady, steady_s)
    if found:
        gaps = [b - a for a, b in zip(found, found[1:]) if b - a > 1]
        every = f", about every {statistics.median(gaps):.0f} s" if len(gaps) >= 2 else ""
        flags.append(Flag(Warning_.DIPS,
                          f"{len(found)} second(s) with throughput far below the rest{every} "
                          "(periodic dips are usually checkpoints: compare with checkpoint_timeout / max_wal_size)"))
    drift = trend(steady)
    trend_pct = None
    if drift is not None and drift[1] < 0.01 and abs(drift[0]) > 0.05:
        trend_pct = 100 * drift[0]
        flags.append(Flag(Warning_.TREND,
                          f"throughput drifted {trend_pct:+.0f} % over the steady part: not yet at steady state "
                          "(caches, autovacuum, growing tables); use a longer --duration"))
    return SteadyState(
        steady_start_s=start_s, mean=mean, ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None, cv=cv, dips_s=found, trend_pct=trend_pct,
        estimate=est, flags=tuple(flags),
    )


# Once-a-second samples a load-generator verdict needs: the first second of a point is
# connection set-up (at 128 clients the server showed 0.0 CPU in it), and one sample of
# it once flagged a 5 s point as load-generator-bound.
LOADGEN_MIN_SAMPLES = 3


def loadgen_flags(system: Sequence[dict[str, Any]], threads: int, hardware_threads: int) -> tuple[Flag, ...]:
    """Was the load generator, not the database, the bottleneck? (system: stored
    system_samples rows of one point; nothing is said from fewer than
    LOADGEN_MIN_SAMPLES of a figure)"""

    def enough(field: str) -> list[float]:
        found = [s[field] for s in system if s.get(field) is not None]
        return found if len(found) >= LOADGEN_MIN_SAMPLES else []
    lg, idle, server = enough("loadgen_cpu"), enough("cpu_idle_pct"), enough("server_cpu")
    flags = []
    if lg and threads and statistics.fmean(lg) / threads >= 0.8:
        flags.append(Flag(Warning_.LOADGEN_BOUND,
                          f"the load generator used {statistics.fmean(lg) / threads:.0%} of a core per thread: it may "
                          "be the bottleneck; run it on another machine or use fewer clients per thread"))
    elif idle and server and statistics.fmean(idle) < 5 and statistics.fmean(server) < 0.8 * hardware_threads:
        flags.append(Flag(Warning_.LOADGEN_BOUND,
                          f"the machine had {statistics.fmean(idle):.0f} % idle CPU while the server used "
                          f"{statistics.fmean(server):.1f} of {hardware_threads} hardware threads: the load generator "
                          "competes with the database for CPU; run it on another machine"))
    return tuple(flags)

