"""Inference over independent repeats of a point: their summary, the comparison of
two sides, and when adaptive repeats may stop.

- Across repeats: mean, median, sample stdev, t-interval, coefficient of variation.
- Comparing two sides: a t-test on the difference of their means (Welch 1947,
  Satterthwaite degrees of freedom; or Student's on pooled spreads) and a ratio interval
  by the delta method on the log scale. Two labels or variants are compared over their
  sessions (over_sessions; stats/sessions.py): the interval of one session's runs is
  blind to what changes between server starts and hours of the machine, as the interval
  within one run (batch means, steadystate.py) is blind to what changes between runs.
  compare() itself, over runs, needs MIN_REPEATS of them a side (history's change
  points compare runs, each a session, with 2).
- Adaptive repeats: a point stops once the 95 % interval of its mean over runs, computed
  with an upper confidence bound on the standard deviation (stop_rule), is within the
  precision asked; see precision().
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from enum import Enum
from typing import Sequence

from dbarena.records import MeanEstimate
from dbarena.stats import metric, sessions, verdicts
from dbarena.stats.estimate import CONFIDENCE, Estimate, chi2_dist, sample_stdev, t_dist
from dbarena.stats.steadystate import Flag, SteadyState, Warning_

MIN_REPEATS = 3  # independent runs per side before a comparison gets a verdict
CV_WARN = 0.10  # pyperf's threshold: stdev >= 10 % of the mean is shaky


# ------------------------------------------------------------------ across repeats


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
    sd = sample_stdev(values)
    if adaptive:
        sd *= _sigma_bound_factor(n)
    return Estimate(mean=statistics.fmean(values), se=sd / math.sqrt(n), df=n - 1, n=n)


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
    stdev = sample_stdev(values) if n > 1 else None
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
                          "interval covers run-to-run variation (a verdict against another label needs "
                          "sessions too: --sessions 2)"))
    if cv is not None and cv >= CV_WARN:
        flags.append(Flag(Warning_.HIGH_VARIATION,
                          f"repeats vary by {cv:.0%} (coefficient of variation): look for background load, CPU "
                          "throttling or noisy neighbours; lengthen --duration or add repeats"))
    return Summary(n=n, failed=failed, median=statistics.median(values), mean=mean, stdev=stdev,
                   ci_low=interval[0] if interval else None, ci_high=interval[1] if interval else None, cv=cv,
                   flags=tuple(flags), estimate=est, within_run=marked)


# ------------------------------------------------------------------ comparisons


class Verdict(str, Enum):
    # The words of stats/verdicts.py, the one vocabulary.
    FASTER = verdicts.FASTER
    SLOWER = verdicts.SLOWER
    SAME = verdicts.SAME
    INCONCLUSIVE = verdicts.INCONCLUSIVE


@dataclass(frozen=True)
class Comparison:
    ratio: float  # b / a
    ci_low: float | None
    ci_high: float | None
    p_value: float | None
    verdict: Verdict | None  # None: the data cannot support one (reason says why)
    reason: str | None
    text: str  # the verdict, or the reason, in words
    # The ratio's spread on the log scale (delta method) and its degrees of freedom:
    # what combining several levels' ratios into one (stats/decision.py) needs.
    log_se: float | None = None
    log_df: float | None = None

    @property
    def significant(self) -> bool:
        return self.verdict in (Verdict.FASTER, Verdict.SLOWER)


def welch(a: MeanEstimate, b: MeanEstimate) -> tuple[float, float] | None:
    """(t, df) of Welch's test on b - a; None without standard errors."""
    if a.se is None or b.se is None or a.df is None or b.df is None:
        return None
    va, vb = a.se ** 2, b.se ** 2
    if va + vb == 0:
        return None
    t = (b.mean - a.mean) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / ((va ** 2 / a.df if a.df else 0) + (vb ** 2 / b.df if b.df else 0))
    return t, df


def over_sessions(a: MeanEstimate, b: MeanEstimate, of: str = metric.TPS, one_host: bool = False) -> Comparison:
    """b relative to a, each an estimate over sessions (stats/sessions.py: a session's
    mean of its runs is one observation): what every verdict between two labels or
    variants rests on, since two sides never share a session. A side whose spread
    between sessions is unknown (one session, and no other of its configuration) has
    no interval: the comparison is inconclusive, says why and what measures it.

    `one_host`: both sides ran on the same machine (their keys' host facts equal), so
    their sessions vary alike on the relative scale: the spreads are pooled (Student's
    t with n_a + n_b - 2 degrees of freedom). Two sessions a side leave Welch's test
    about one degree of freedom (t = 12.7): a 65 % difference with sessions 9 % apart
    was not found; pooled, it has two (t = 4.3). Between machines, Welch's."""
    # A side's estimate borrowed (or pooled with) another group's spread where its degrees
    # of freedom exceed its own sessions' (sessions.estimate).
    borrowed = (a.df or 0) > a.n - 1 or (b.df or 0) > b.n - 1
    if one_host and not borrowed and a.se is not None and b.se is not None and a.df and b.df and \
            a.n >= sessions.MIN_SESSIONS and b.n >= sessions.MIN_SESSIONS and a.mean > 0 and b.mean > 0:
        rel_a, rel_b = a.se / a.mean * math.sqrt(a.n), b.se / b.mean * math.sqrt(b.n)
        both = a.df + b.df
        pooled = math.sqrt((a.df * rel_a ** 2 + b.df * rel_b ** 2) / both)
        a = Estimate(mean=a.mean, se=a.mean * pooled / math.sqrt(a.n), df=a.df, n=a.n)
        b = Estimate(mean=b.mean, se=b.mean * pooled / math.sqrt(b.n), df=b.df, n=b.n)
        return compare(a, b, min_repeats=1, of=of, df=both, pooled=True)
    if a.se is None or b.se is None:
        ratio = b.mean / a.mean if a.mean else math.inf
        # Short, for a table's verdict column: the decision above the table says the
        # rest once (the spread between sessions unknown, and what measures it).
        reason = f"inconclusive: {sessions.words(a.n, b.n)}"
        return Comparison(ratio=ratio, ci_low=None, ci_high=None, p_value=None, verdict=None, reason=reason,
                          text=reason)
    # A side of one session borrowed its spread from a pool (sessions.known_for) that may
    # hold the other side's sessions, or lend both sides the same estimate: the two
    # variances are not independent, and Satterthwaite's degrees of freedom, which adds
    # them as if they were, would be up to twice too many. The pool's own, the fewer.
    fewest = min(a.df or math.inf, b.df or math.inf) if borrowed else None
    # (The sessions behind it are a column of the level tables and in the decision's words.)
    # A borrowed spread is a pool's relative one (sessions.estimate: its log-scale variance
    # times the side's mean): tested on the log scale, as pooled ones are, where the
    # interval is. (On the linear scale a -98 % change whose interval was -99.3 % to
    # -93.8 % had p = 0.065: "inconclusive" beside an interval far from 1.)
    return compare(a, b, min_repeats=1, of=of, df=fewest, log_test=borrowed)


def compare(a: MeanEstimate, b: MeanEstimate, confidence: float = CONFIDENCE,
            min_repeats: int = MIN_REPEATS, of: str = metric.TPS, said: str | None = None,
            df: float | None = None, pooled: bool = False, log_test: bool = False) -> Comparison:
    """b relative to a, each an estimate over independent runs: the ratio of means, its
    interval, and a verdict when both sides have min_repeats runs. `of`: the metric
    (metric.py) the estimates are of; for seconds (lower is better) a ratio below 1
    is "faster". `said`: what the observations are, added to the verdict's words
    ("2 sessions a side"); `df`: the difference's degrees of freedom where Welch's
    would overstate them (over_sessions); `pooled`: the two spreads are one pooled
    estimate, whose `df` are the difference's (more than Welch's); `pooled` or
    `log_test`: the spreads are relative, and the test is on the log scale, where the
    interval is (so that the verdict and the interval agree)."""
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
    t, welch_df = test
    assert a.se is not None and b.se is not None  # welch() returns None without them
    # Delta method: var(log(b/a)) ~= (se_a/mean_a)^2 + (se_b/mean_b)^2.
    rel_a, rel_b = (a.se / a.mean) ** 2, (b.se / b.mean) ** 2
    se_log = math.sqrt(rel_a + rel_b)
    df_log = (rel_a + rel_b) ** 2 / ((rel_a ** 2 / a.df if a.df else 0) + (rel_b ** 2 / b.df if b.df else 0))
    if df is not None:
        df_log = df if pooled else min(df, df_log)
    if pooled or log_test:
        # Pooled (and borrowed: log_test) spreads are relative (over_sessions): the test is on the log scale, where
        # they were pooled and where the interval is. (On the linear scale the larger
        # side's mean would carry the other's relative spread: a -97 % change, its
        # interval -99 % to -86 %, was "not significant" there.)
        p = 2 * float(t_dist().sf(abs(math.log(ratio)) / se_log, df_log))
    else:
        p = 2 * float(t_dist().sf(abs(t), welch_df if df is None else min(df, welch_df)))
    q = float(t_dist().ppf(0.5 + confidence / 2, df_log))
    low, high = ratio * math.exp(-q * se_log), ratio * math.exp(q * se_log)
    change = (ratio - 1) * 100
    if p < 1 - confidence:
        verdict = Verdict.FASTER if (change > 0) != metric.lower_is_better(of) else Verdict.SLOWER
        text = f"{metric.change_words(change, of)} (significant, p = {p:.3g}{f'; {said}' if said else ''})"
    else:
        verdict = Verdict(verdicts.of_interval((change > 0) != metric.lower_is_better(of), low, high, 1.0))
        # The interval is in the table beside it: only where it lies against the margin.
        where = "within" if verdicts.within(low, high) else "reaches past"
        text = (f"{verdict.value} ({change:+.1f} %, p = {p:.2f}; the CI {where} ±{verdicts.MARGIN:.0%}"
                f"{f'; {said}' if said else ''})")
    return Comparison(ratio=ratio, ci_low=low, ci_high=high, p_value=p, verdict=verdict, reason=None, text=text,
                      log_se=se_log, log_df=df_log)


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
    return math.sqrt((n - 1) / float(chi2_dist().ppf(1 - SIGMA_BOUND, n - 1)))


def _relative_half(mean: float, sd: float, n: int, confidence: float) -> float:
    """Relative half width of the conservative interval of n runs with this mean and spread."""
    return float(t_dist().ppf(0.5 + confidence / 2, n - 1)) * sd * _sigma_bound_factor(n) / math.sqrt(n) / mean


def _conservative_half(values: Sequence[float], confidence: float) -> float | None:
    n = len(values)
    if n < 2 or statistics.fmean(values) <= 0:
        return None
    return _relative_half(statistics.fmean(values), sample_stdev(values), n, confidence)


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
    mean, sd = statistics.fmean(values), sample_stdev(values)
    if mean <= 0:
        return max_repeats
    # The spread stays as observed; n grows: the first n whose interval is narrow enough.
    return next((m for m in range(low, max_repeats + 1) if _relative_half(mean, sd, m, confidence) <= target),
                max_repeats)
