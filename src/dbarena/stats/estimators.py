"""Statistics over stored results. Pure functions: numbers in, numbers out.

- Warm-up: MSER-5 (White 1997, "An effective truncation heuristic for bias reduction
  in simulation output"; Franklin & White 2008): average the series in batches of 5,
  and cut the prefix d that minimises the variance of the remaining mean,
  sum((Z_i - mean(Z_d+1..m))^2) / (m - d)^2, over d <= m/2.
- Interval of a single run: non-overlapping batch means (Law & Kelton, Simulation
  Modeling and Analysis, ch. 9.5.3) over the steady part: about sqrt(n) batches of
  about sqrt(n) seconds; while the batch means are still autocorrelated (lag-1 > 0.2),
  the batches are made twice as long (at least 4 kept). Student-t on the batch means.
- Across repeats: mean, median, sample stdev, t-interval, coefficient of variation.
- Comparing two sides: Welch's t-test on the difference of their run means (Welch 1947,
  Satterthwaite degrees of freedom) and a ratio interval by the delta method on the log
  scale. A verdict needs MIN_REPEATS independent runs on each side: the interval within
  one run (batch means) is the precision of that run, blind to what changes between
  runs (connection pool, buffer placement, CPU frequency, neighbours), which is the
  variation a comparison of two machines must beat.
- Adaptive repeats: a point stops once the 95 % interval of its mean over runs, computed
  with an upper confidence bound on the standard deviation (stop_rule), is within the
  precision asked; see precision().
scipy.special supplies only the t and chi-square distributions' quantiles and tail areas.
"""

from __future__ import annotations

import functools
import math
import statistics
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Sequence

CONFIDENCE = 0.95
MIN_REPEATS = 3  # independent runs per side before a comparison gets a verdict
CV_WARN = 0.10  # pyperf's threshold: stdev >= 10 % of the mean is shaky


class _T:
    """Student's t: quantiles and upper tail areas (scipy.special's, which scipy.stats
    uses too, at half the import time of scipy.stats: every command pays it)."""

    def __init__(self) -> None:
        from scipy.special import stdtr, stdtrit

        self._cdf, self._quantile = stdtr, stdtrit

    def ppf(self, q: float, df: float) -> float:
        return float(self._quantile(df, q))

    def sf(self, x: float, df: float) -> float:
        return float(self._cdf(df, -x))


class _Chi2:
    def __init__(self) -> None:
        from scipy.special import chdtri

        self._upper_quantile = chdtri

    def ppf(self, q: float, df: float) -> float:
        return float(self._upper_quantile(df, 1 - q))


def _stdev(values: Sequence[float]) -> float:
    """The sample standard deviation, two-pass with exact sums (math.fsum): as accurate
    as statistics.stdev for benchmark figures, which computes in exact fractions and is
    a hundred times slower on the hundreds of repeats a large store pools."""
    n = len(values)
    if n < 2:
        raise ValueError("stdev needs at least two values")
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


@functools.cache
def _t() -> _T:
    # Imported only when an interval is actually computed, not at every start of the CLI.
    return _T()


@functools.cache
def _chi2() -> _Chi2:
    return _Chi2()


# ------------------------------------------------------------------ warm-up


MSER_MIN_BATCHES = 4


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


# ------------------------------------------------------------------ intervals


@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error and degrees of freedom (for a t interval)."""

    mean: float
    se: float | None
    df: int | None
    n: int  # observations behind it (repeats, or batches)

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        if self.se is None or self.df is None or self.df < 1:
            return None
        half = float(_t().ppf(0.5 + confidence / 2, self.df)) * self.se
        return self.mean - half, self.mean + half


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
    se = _stdev(means) / math.sqrt(k)
    return Estimate(mean=grand, se=se, df=k - 1, n=k)


def repeats(values: Sequence[float], adaptive: bool = False) -> Estimate | None:
    """Mean of independent repeats with its standard error. `adaptive`: their number
    was chosen by the stopping rule (precision), which stops when the spread happens
    to be small; the standard error then uses the rule's upper bound on the standard
    deviation (see precision()), or comparisons of such points would call 8 to 10 %
    of A/A pairs significant instead of at most 5 %."""
    if not values:
        return None
    n = len(values)
    if n == 1:
        return Estimate(mean=values[0], se=None, df=None, n=1)
    sd = _stdev(values)
    if adaptive:
        sd *= _sigma_bound_factor(n)
    return Estimate(mean=statistics.fmean(values), se=sd / math.sqrt(n), df=n - 1, n=n)


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
    p = 2 * float(_t().sf(abs(slope / se), n - 2))
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
    cv = _stdev(steady) / mean if len(steady) > 1 and mean else None
    flags = []
    duration = duration_s or (seconds[-1] if seconds else 0)
    if est is None:
        flags.append(Flag(Warning_.SHORT_SERIES,
                          f"only {len(steady)} steady-state seconds: too few for an interval within the run; "
                          "use a --duration of 30 s or more"))
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


# ------------------------------------------------------------------ across repeats


@dataclass(frozen=True)
class Summary:
    n: int
    failed: int
    median: float | None
    mean: float | None
    stdev: float | None
    ci_low: float | None
    ci_high: float | None
    cv: float | None
    flags: tuple[Flag, ...] = ()
    estimate: Estimate | None = None  # over repeats: what comparisons use
    within_run: bool = False  # ci_low/ci_high are one run's batch-means interval


def summarize(values: Sequence[float], failed: int = 0, single_run: SteadyState | None = None,
              adaptive: bool = False, within_run: tuple[float, float] | None = None) -> Summary:
    """Repeats of one point. With one repeat, the interval shown is that run's
    batch-means interval, marked within_run: the precision of one run, not run-to-run
    variation (the few-repeats warning says so). Comparisons use `estimate`, which
    is always over repeats."""
    flags = []
    n = len(values)
    if failed:
        flags.append(Flag(Warning_.FAILED_POINTS,
                          f"{failed} of {n + failed} repeat(s) failed: see `dbarena results` for the errors"))
    if n == 0:
        return Summary(n=0, failed=failed, median=None, mean=None, stdev=None, ci_low=None, ci_high=None, cv=None,
                       flags=tuple(flags))
    est = repeats(values, adaptive=adaptive)
    assert est is not None  # n > 0
    stdev = _stdev(values) if n > 1 else None
    mean = statistics.fmean(values)
    cv = stdev / mean if stdev is not None and mean else None
    interval = est.interval()
    if n == 1 and single_run is not None and single_run.estimate is not None:
        within_run = single_run.estimate.interval()
    marked = n == 1 and within_run is not None
    if marked:
        interval = within_run
    if n < MIN_REPEATS:
        flags.append(Flag(Warning_.FEW_REPEATS,
                          f"only {n} repeat(s): use --repeat {MIN_REPEATS} or more (or --precision) so that the "
                          "interval covers run-to-run variation and comparisons get a verdict"))
    if cv is not None and cv >= CV_WARN:
        flags.append(Flag(Warning_.HIGH_VARIATION,
                          f"repeats vary by {cv:.0%} (coefficient of variation): look for background load, CPU "
                          "throttling or noisy neighbours; lengthen --duration or add repeats"))
    return Summary(n=n, failed=failed, median=statistics.median(values), mean=mean, stdev=stdev,
                   ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None, cv=cv,
                   flags=tuple(flags), estimate=est, within_run=marked)


# ------------------------------------------------------------------ comparisons


class Verdict(str, Enum):
    FASTER = "faster"
    SLOWER = "slower"
    NOT_SIGNIFICANT = "not significant"


@dataclass(frozen=True)
class Comparison:
    ratio: float  # b / a
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: Verdict | None  # None: the data cannot support one (reason says why)
    reason: str | None
    text: str  # the verdict, or the reason, in words

    @property
    def significant(self) -> bool:
        return self.verdict in (Verdict.FASTER, Verdict.SLOWER)


def welch(a: Estimate, b: Estimate) -> tuple[float, float] | None:
    """(t, df) of Welch's test on b - a; None without standard errors."""
    if a.se is None or b.se is None or a.df is None or b.df is None:
        return None
    va, vb = a.se ** 2, b.se ** 2
    if va + vb == 0:
        return None
    t = (b.mean - a.mean) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va ** 2 / a.df if a.df else 0) + (vb ** 2 / b.df if b.df else 0))
    return t, df


def compare(a: Estimate, b: Estimate, confidence: float = CONFIDENCE,
            min_repeats: int = MIN_REPEATS) -> Comparison:
    """b relative to a, each an estimate over independent runs: the ratio of means, its
    interval, and a verdict when both sides have min_repeats runs."""
    ratio = b.mean / a.mean if a.mean else math.inf
    fewest = min(a.n, b.n)
    if fewest < min_repeats:
        reason = f"no verdict: {fewest} repeat(s); needs {min_repeats}"
        return Comparison(ratio=ratio, ci_low=None, ci_high=None, p_value=None, verdict=None, reason=reason,
                          text=reason)
    test = welch(a, b)
    if test is None or a.mean <= 0 or b.mean <= 0:
        reason = "no verdict: the runs of both sides gave identical figures" if test is None else \
            "no verdict: a mean is not positive"
        return Comparison(ratio=ratio, ci_low=None, ci_high=None, p_value=None, verdict=None, reason=reason,
                          text=reason)
    t, df = test
    assert a.se is not None and b.se is not None  # welch() returns None without them
    p = 2 * float(_t().sf(abs(t), df))
    # Delta method: var(log(b/a)) ~= (se_a/mean_a)^2 + (se_b/mean_b)^2.
    rel_a, rel_b = (a.se / a.mean) ** 2, (b.se / b.mean) ** 2
    se_log = math.sqrt(rel_a + rel_b)
    df_log = (rel_a + rel_b) ** 2 / ((rel_a ** 2 / a.df if a.df else 0) + (rel_b ** 2 / b.df if b.df else 0))
    q = float(_t().ppf(0.5 + confidence / 2, df_log))
    low, high = ratio * math.exp(-q * se_log), ratio * math.exp(q * se_log)
    change = (ratio - 1) * 100
    if p < 1 - confidence:
        verdict = Verdict.FASTER if change > 0 else Verdict.SLOWER
        text = f"{abs(change):.1f} % {verdict.value} (significant, p = {p:.3g})"
    else:
        verdict = Verdict.NOT_SIGNIFICANT
        text = f"not significant ({change:+.1f} %, p = {p:.2f})"
    return Comparison(ratio=ratio, ci_low=low, ci_high=high, p_value=p, verdict=verdict, reason=None, text=text)


# ------------------------------------------------------------------ adaptive repeats

# Stopping when the usual t interval first looks narrow enough favours runs whose
# spread happened to be small: simulated with 3..10 repeats, such "reached" intervals
# cover the true mean only 84 % of the time once the run-to-run noise is 1.5 x the
# precision asked. So the rule (and the interval it reports) uses an upper
# confidence bound on the standard deviation, s * sqrt((n-1) / chi2_{1-SIGMA_BOUND, n-1}),
# in place of s. tests/unit/test_precision.py verifies the coverage of reached
# intervals (at least 93 %) by simulation.
SIGMA_BOUND = 0.8


@dataclass(frozen=True)
class Precision:
    """Where a point stands against a precision target."""

    n: int
    mean: float | None
    half_width: float | None  # relative half width of the conservative 95 % interval (0.02 = +-2 %)
    reached: bool


def _sigma_bound_factor(n: int) -> float:
    """s x this = the upper SIGMA_BOUND confidence bound on the standard deviation."""
    return math.sqrt((n - 1) / float(_chi2().ppf(1 - SIGMA_BOUND, n - 1)))


def _relative_half(mean: float, sd: float, n: int, confidence: float) -> float:
    """Relative half width of the conservative interval of n runs with this mean and spread."""
    return float(_t().ppf(0.5 + confidence / 2, n - 1)) * sd * _sigma_bound_factor(n) / math.sqrt(n) / mean


def _conservative_half(values: Sequence[float], confidence: float) -> float | None:
    n = len(values)
    if n < 2 or statistics.fmean(values) <= 0:
        return None
    return _relative_half(statistics.fmean(values), _stdev(values), n, confidence)


def precision(values: Sequence[float], target: float, confidence: float = CONFIDENCE,
              min_repeats: int = MIN_REPEATS) -> Precision:
    """Has the mean of these runs reached +-target (relative)? Never before min_repeats."""
    n = len(values)
    half = _conservative_half(values, confidence)
    return Precision(n=n, mean=statistics.fmean(values) if values else None, half_width=half,
                     reached=n >= min_repeats and half is not None and half <= target)


def repeats_needed(values: Sequence[float], target: float, max_repeats: int, confidence: float = CONFIDENCE,
                   min_repeats: int = MIN_REPEATS) -> int:
    """A forecast (for the ETA) of the runs a point will take: the smallest n whose
    interval would reach the target if the spread stays as observed, within
    [max(len(values), min_repeats), max_repeats]."""
    n = len(values)
    low = max(n, min_repeats)
    if n < 2:
        return min(low, max_repeats)
    mean, sd = statistics.fmean(values), _stdev(values)
    if mean <= 0:
        return max_repeats
    # The spread stays as observed; n grows: the first n whose interval is narrow enough.
    return next((m for m in range(low, max_repeats + 1) if _relative_half(mean, sd, m, confidence) <= target),
                max_repeats)
