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
from itertools import repeat
from typing import Any, Callable, Mapping, Sequence, cast

import numpy as np
import numpy.typing as npt

from dbarena.stats import interference, thresholds
from dbarena.stats.estimate import Estimate, sample_stdev, t_dist


# ------------------------------------------------------------------ exact arithmetic

Floats = npt.NDArray[np.floating[Any]]
_pow: Callable[[float, int], float] = pow  # x ** 2 as the scalar code squares (libm's pow)


def _list(values: Floats) -> list[float]:
    return cast(list[float], values.tolist())

# The figures are computed with numpy, a series at a time instead of a value at a time
# (a first read of a 10 k-point store computes 10 k of them), and stay bit for bit what
# the scalar definitions gave: sums are taken left to right as Python's sum() adds
# (np.sum adds pairwise, which differs in the last bits), means of a whole series with
# math.fsum as statistics.fmean does, and a square that reaches a stored figure with
# pow(), which libm rounds differently from x * x once in about a thousand squares.
# tests/unit/test_steadystate_exact.py holds the scalar definitions and checks both agree.


def _left_to_right(rows: Floats) -> Floats:
    """Each row's sum, added left to right as Python's sum() does."""
    return np.cumsum(rows, axis=-1)[..., -1]


def _fmean(values: Floats) -> float:
    """statistics.fmean: the correctly rounded sum (math.fsum) over the count."""
    return math.fsum(_list(values)) / len(values)


# ------------------------------------------------------------------ warm-up


MSER_MIN_BATCHES = 4

# What the short-series warning advises: long enough for MSER's warm-up cut (20 s) and
# batch means over what is left. --quick's 5 s points are shorter by design: the run
# says so once (preflight.quick_note) instead of this warning on every point.
ADVISED_DURATION_S = 30

def _mser_value(z: list[float], d: int) -> float:
    """MSER's statistic for the cut d, as defined: the scalar arithmetic."""
    tail = z[d:]
    mean = sum(tail) / len(tail)
    return sum((x - mean) ** 2 for x in tail) / len(tail) ** 2


def _mser_cuts(z: Floats) -> list[int]:
    """For each row of batch means z (series x m), the first d <= m/2 whose
    _mser_value is the least, as the scalar loop finds it.

    Every candidate's statistic is first computed at once from suffix sums (about a
    shift, which keeps the cancellation small); each differs from the scalar one by
    at most its rounding error, bounded below. Only the candidates within twice that
    bound of the best can be the scalar minimum: one is the answer; among several (a
    near tie, or a constant series) the scalar statistic decides."""
    m = z.shape[1]
    d = np.arange(m // 2 + 1)
    length = (m - d).astype(float)
    w = z - np.median(z, axis=1)[:, None]
    a = np.cumsum(w[:, ::-1], axis=1)[:, ::-1][:, :len(d)]
    b = np.cumsum((w * w)[:, ::-1], axis=1)[:, ::-1][:, :len(d)]
    q = b - a * a / length
    approx = q / length ** 2
    # Rounding: sums of up to m terms (gamma), the scalar mean's error (the top value's
    # gamma) and the suffix sums' (b's gamma); four times over for good measure.
    gamma = (m + 4) * float(np.finfo(float).eps)
    top = np.abs(z).max(axis=1)[:, None]
    held = np.maximum(q, 0.0)
    error = (2 * np.sqrt(length * held) * gamma * top + length * (gamma * top) ** 2 + 3 * gamma * held
             + 6 * gamma * b) / length ** 2
    near = approx <= approx.min(axis=1)[:, None] + 8 * error.max(axis=1)[:, None]
    cuts = []
    for row, candidates in enumerate(near):
        found = np.flatnonzero(candidates)
        if len(found) == 1:
            cuts.append(int(found[0]))
            continue
        cuts.append(_least_cut(z[row], [int(k) for k in found]))
    return cuts


def _least_cut(z: Floats, cuts: list[int]) -> int:
    """Of the cuts, the first whose _mser_value is the least, as the scalar loop finds it.

    A cut whose tail is one value repeated (a series that settles on a constant: every
    such cut ties) is not computed pass by pass, which took time in the square of the
    series (80,000 equal seconds: 11.8 s): its statistic is bounded from its deviation,
    and only those that can be the least are computed, bit for bit, from running sums
    shared by all of them (_constant_tail_values)."""
    z_list = _list(z)
    m = len(z_list)
    last = z_list[-1]
    # Where the run of values equal to the last one begins (an equal value, 0.0 == -0.0,
    # changes no sum or square below).
    differs = np.flatnonzero(z != last)
    constant_from = int(differs[-1]) + 1 if len(differs) else 0
    exact = {k: _mser_value(z_list, k) for k in cuts if k < constant_from}
    shared = [k for k in cuts if k >= constant_from]
    if shared:
        lengths = np.array([m - k for k in shared], dtype=float)
        squares = _constant_tail_squares(last, [m - k for k in shared])
        # sum() of n equal terms is n x square within a relative (n - 1) eps (Higham,
        # Accuracy and Stability of Numerical Algorithms, 2nd ed., 4.2), the division
        # rounds once more, and a result near the subnormal range loses a unit or two
        # of 2**-1074: bounds twice as wide as that.
        approx = np.array(squares) / lengths
        slack = 2 * lengths * float(np.finfo(float).eps)
        tiny = 4 * 2.0 ** -1074
        low, high = approx * (1 - slack) - tiny, approx * (1 + slack) + tiny
        best = min(float(high.min()), min(exact.values(), default=math.inf))
        kept = cast(list[int], np.flatnonzero(low <= best).tolist())
        exact.update(zip((shared[i] for i in kept), _constant_tail_values(last, [m - shared[i] for i in kept])))
    least = min(exact.values())
    return next(k for k in cuts if exact.get(k) == least)


def _constant_tail_squares(c: float, lengths: list[int]) -> list[float]:
    """The one deviation (x - mean) ** 2 of each tail that is `c` repeated, one per
    length: sum() adds c left to right, and np.cumsum adds in that order (each prefix's
    sum is that of a tail that long)."""
    sums = _list(np.cumsum(np.full(max(lengths), c)))
    return [_pow(c - sums[n - 1] / n, 2) for n in lengths]


def _constant_tail_values(c: float, lengths: list[int]) -> list[float]:
    """_mser_value of tails that are `c` repeated, one per length, bit for bit: the one
    deviation of each added as many times, left to right as sum() adds. Deviations take
    few values (the mean of equal values is the value, or a rounding or so off it): one
    running sum of each serves every tail with that deviation."""
    if not lengths:
        return []
    squares = _constant_tail_squares(c, lengths)
    longest: dict[float, int] = {}
    for square, n in zip(squares, lengths):
        longest[square] = max(longest.get(square, 0), n)
    running = {square: np.cumsum(np.full(n, square)) for square, n in longest.items() if square}
    return [(float(running[square][n - 1]) if square else 0.0) / n ** 2 for square, n in zip(squares, lengths)]


def _mser5_rows(series: Floats) -> list[int]:
    """mser5 of each row (series of one length)."""
    rows, n = series.shape
    m = n // 5
    if m < MSER_MIN_BATCHES:
        return [0] * rows
    # Batches aligned to the end, so the newest data (the steady state) is all used.
    offset = n - 5 * m
    batches = series[:, offset:].reshape(rows, m, 5)
    z = batches[:, :, 0] + batches[:, :, 1]
    for column in range(2, 5):
        z += batches[:, :, column]
    z /= 5
    return [offset + 5 * d if d else 0 for d in _mser_cuts(z)]


def mser5(series: Sequence[float] | Floats) -> int:
    """Number of leading samples to drop as warm-up.

    With few batches MSER degenerates (the last batch alone has zero variance), so
    it needs at least MSER_MIN_BATCHES batches (20 s) and keeps at least half of them.
    """
    return _mser5_rows(np.asarray(series, dtype=float)[None, :])[0]


# ------------------------------------------------------------------ interval within the run


def _lag1(values: Sequence[float]) -> float:
    n = len(values)
    mean = sum(values) / n
    var = sum((v - mean) ** 2 for v in values)
    if var == 0 or n < 3:
        return 0.0
    return sum((values[i] - mean) * (values[i + 1] - mean) for i in range(n - 1)) / var


def _batch_means_rows(series: Floats, min_batches: int = 4) -> list[Estimate | None]:
    """batch_means of each row (series of one length)."""
    rows, n = series.shape
    if n < 2 * min_batches:
        return [None] * rows
    out: list[Estimate | None] = [None] * rows
    active = list(range(rows))
    size = max(1, math.isqrt(n))
    while active:
        k = n // size
        offset = n - k * size  # drop the oldest remainder, keep the newest data
        # The batches' means in numpy; what is decided on them (a few dozen) as defined.
        means = _left_to_right(series[active, offset:].reshape(len(active), k, size)) / size
        again = []
        for row, row_means in zip(active, cast(list[list[float]], means.tolist())):
            if k // 2 < min_batches or _lag1(row_means) <= 0.2:
                if k >= 2:
                    out[row] = Estimate(mean=sum(row_means) / k, se=sample_stdev(row_means) / math.sqrt(k),
                                        df=k - 1, n=k)
            else:
                again.append(row)
        active = again
        size *= 2
    return out


def batch_means(series: Sequence[float] | Floats, min_batches: int = 4) -> Estimate | None:
    """Mean of an autocorrelated series with a standard error from batch means."""
    return _batch_means_rows(np.asarray(series, dtype=float)[None, :], min_batches)[0]


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
    NEIGHBOURS = "neighbours"  # other processes (stats/interference.py) took much of the machine's CPU


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


def _medians(ordered: Floats) -> Floats:
    """statistics.median of each sorted row: the middle value, or the mean of the two."""
    half = ordered.shape[1] // 2
    if ordered.shape[1] % 2:
        return ordered[:, half]
    return (ordered[:, half - 1] + ordered[:, half]) / 2


def _dips_rows(series: Floats, seconds: Sequence[Sequence[float]]) -> list[tuple[float, ...]]:
    """dips of each row (series of one length) with its seconds."""
    rows, n = series.shape
    if n < 5:
        return [()] * rows
    med = _medians(np.sort(series, axis=1))
    mad = _medians(np.sort(np.abs(series - med[:, None]), axis=1)) * 1.4826
    limit = np.minimum(med - 4 * mad, 0.9 * med)
    below = series < limit[:, None]
    return [tuple(seconds[row][int(i)] for i in np.flatnonzero(below[row])) if below[row].any() else ()
            for row in range(rows)]


def dips(values: Sequence[float] | Floats, seconds: Sequence[float]) -> tuple[float, ...]:
    """Seconds whose value falls far below the rest: under the median minus 4 robust
    standard deviations (1.4826 x MAD) and under 90 % of the median."""
    return _dips_rows(np.asarray(values, dtype=float)[None, :], [seconds])[0]


def _slope(series: Floats, my: float) -> tuple[float, float, float, Floats]:
    """A least-squares line through the series whose fmean is my: (slope, my, sum of
    squared x deviations, x deviations), each sum left to right as trend() takes them."""
    n = len(series)
    x = np.arange(n) - (n - 1) / 2
    sxx = float(_left_to_right(x * x))  # half-integers: their squares are exact either way
    return float(_left_to_right(x * (series - my))) / sxx, my, sxx, x


def _trend_p(series: Floats, slope: float, my: float, sxx: float, x: Floats) -> float | None:
    """trend()'s two-sided p of the slope; None where trend() gives no p of its own."""
    n = len(series)
    residual = sum(map(_pow, _list(series - (my + slope * x)), repeat(2)))
    if residual == 0 or my == 0:
        return None
    se = math.sqrt(residual / (n - 2) / sxx)
    return 2 * float(t_dist().sf(abs(slope / se), n - 2))


def trend(values: Sequence[float] | Floats) -> tuple[float, float] | None:
    """(relative change over the series, two-sided p) of a least-squares line."""
    n = len(values)
    if n < 6:
        return None
    series = np.asarray(values, dtype=float)
    slope, my, sxx, x = _slope(series, _fmean(series))
    p = _trend_p(series, slope, my, sxx, x)
    if p is None:
        return (slope * (n - 1) / my if my else 0.0), 0.0 if slope else 1.0
    return slope * (n - 1) / my, p


def _significant_trends(series: Floats, means: list[float]) -> list[float | None]:
    """trend()'s relative change of each row (series of one length, their fmeans)
    where steady_state flags it (p < 0.01 and beyond 5 %): the p, a t distribution's
    tail, is computed only for changes beyond 5 %."""
    rows, n = series.shape
    if n < 6:
        return [None] * rows
    x = np.arange(n) - (n - 1) / 2
    sxx = float(_left_to_right(x * x))  # half-integers: their squares are exact either way
    slopes = cast(list[float], (_left_to_right(x * (series - np.array(means)[:, None])) / sxx).tolist())
    out: list[float | None] = []
    for row, (slope, my) in enumerate(zip(slopes, means)):
        change = slope * (n - 1) / my if my else 0.0
        p = _trend_p(series[row], slope, my, sxx, x) if abs(change) > 0.05 else None
        if p is None and abs(change) > 0.05:
            p = 0.0 if slope else 1.0
        out.append(change if p is not None and p < 0.01 else None)
    return out


# What a warning advises, in the engine's own terms: the settings behind periodic dips
# (checkpoints) and the background work that makes throughput drift. An engine family
# not listed gets advice that names no engine's settings.
_DIPS_CAUSE = {
    "postgres": "periodic dips are usually checkpoints: compare with checkpoint_timeout / max_wal_size",
    # InnoDB flushes dirty pages as its redo log fills (innodb_log_file_size; MySQL 8.0.30+:
    # innodb_redo_log_capacity), at the pace innodb_io_capacity allows.
    "mysql": "periodic dips are usually InnoDB's checkpoints: compare with innodb_log_file_size (MySQL 8.0.30+: "
             "innodb_redo_log_capacity) / innodb_io_capacity",
}
_DIPS_CAUSE_ANY = "periodic dips are usually the server's checkpoints"
_DRIFT_CAUSES = {"postgres": "caches, autovacuum, growing tables", "mysql": "caches, InnoDB's purge, growing tables"}
_DRIFT_CAUSES_ANY = "caches, background work, growing tables"


def steady_state(seconds: Sequence[float], values: Sequence[float] | Floats,
                 duration_s: float | None = None, engine: str | None = None) -> SteadyState | None:
    """Warm-up, steady-state mean and its 95 % interval, dips and trend of a per-second
    series (tps of each interval report); `engine` (its family: postgres, mysql) words
    the warnings' advice."""
    if isinstance(seconds, np.ndarray):
        seconds = _list(seconds)  # the seconds a point reports are plain floats
    return steady_states([seconds], [np.asarray(values, dtype=float)], [duration_s], [engine])[0]


def steady_states(seconds: Sequence[Sequence[float]], series: Sequence[Floats],
                  durations: Sequence[float | None], engines: Sequence[str | None] | None = None
                  ) -> list[SteadyState | None]:
    """steady_state of many series (a read's batch of points): the series of one length
    are computed together, and then those with the same warm-up cut."""
    engine_of: Sequence[str | None] = engines if engines is not None else [None] * len(series)
    out: list[SteadyState | None] = [None] * len(series)
    by_length: dict[int, list[int]] = {}
    for i, values in enumerate(series):
        if len(values):
            by_length.setdefault(len(values), []).append(i)
    for rows in by_length.values():
        block = np.stack([np.asarray(series[i], dtype=float) for i in rows])
        by_cut: dict[int, list[int]] = {}
        for row, cut in enumerate(_mser5_rows(block)):
            by_cut.setdefault(cut, []).append(row)
        for cut, at in by_cut.items():
            steady = block[at, cut:]
            n = steady.shape[1]
            lists = cast(list[list[float]], steady.tolist())
            means = [math.fsum(row) / n for row in lists]
            ests = _batch_means_rows(steady)
            spreads = cast(list[list[float]], (steady - np.array(means)[:, None]).tolist()) if n > 1 else []
            found = _dips_rows(steady, [seconds[rows[a]][cut:] for a in at])
            drifts = _significant_trends(steady, means)
            for j, a in enumerate(at):
                i = rows[a]
                cv = math.sqrt(math.fsum(map(_pow, spreads[j], repeat(2))) / (n - 1)) / means[j] \
                    if n > 1 and means[j] else None
                out[i] = _steady(seconds[i], cut, n, means[j], ests[j], cv, found[j], drifts[j], durations[i],
                                 engine_of[i])
    return out


def report_interval(seconds: Sequence[float]) -> float:
    """How often the tool reported: the mean step between its interval reports, to a
    tenth of a second (1 s for pgbench -P 1; 60 s for a sysbench --report-interval=60
    someone published). From the first and last only: a store's seconds are read lazily,
    and only for a warning that needs them."""
    if len(seconds) < 2:
        return 1.0
    return round((seconds[-1] - seconds[0]) / (len(seconds) - 1), 1) or 1.0


def reports(count: int, step: float) -> str:
    """A count of interval reports in the data's own unit: seconds where the tool
    reported every second, else intervals of their length ("3 intervals of 60 s")."""
    if abs(step - 1.0) < 0.01:
        return f"{count} second{'' if count == 1 else 's'}"
    return f"{count} interval{'' if count == 1 else 's'} of {step:g} s"


def _steady(seconds: Sequence[float], cut: int, n: int, mean: float, est: Estimate | None, cv: float | None,
            found: tuple[float, ...], drift: float | None, duration_s: float | None,
            engine: str | None = None) -> SteadyState:
    """One series' SteadyState from its figures, with the warnings they call for."""
    start_s = seconds[cut - 1] if cut else 0.0
    interval = est.interval() if est else None
    flags = []
    duration = duration_s or (seconds[-1] if len(seconds) else 0)
    step = report_interval(seconds) if est is None or found else 1.0
    if est is None:
        flags.append(Flag(Warning_.SHORT_SERIES,
                          f"only {reports(n, step)} in the steady state: too few for an interval within the run; "
                          f"use a --duration of {ADVISED_DURATION_S} s or more"))
    if duration and start_s > duration / 3:
        flags.append(Flag(Warning_.LONG_WARMUP,
                          f"warm-up took {start_s:.0f} s of a {duration:.0f} s point: use a longer --duration "
                          "so that the steady state dominates"))
    if found:
        gaps = [b - a for a, b in zip(found, found[1:]) if b - a > 1.5 * step]
        every = f", about every {statistics.median(gaps):.0f} s" if len(gaps) >= 2 else ""
        flags.append(Flag(Warning_.DIPS,
                          f"{reports(len(found), step)} with throughput far below the rest{every} "
                          f"({_DIPS_CAUSE.get(engine or '', _DIPS_CAUSE_ANY)})"))
    trend_pct = None
    if drift is not None:
        trend_pct = 100 * drift
        flags.append(Flag(Warning_.TREND,
                          f"throughput drifted {trend_pct:+.0f} % over the steady part: not yet at steady state "
                          f"({_DRIFT_CAUSES.get(engine or '', _DRIFT_CAUSES_ANY)}); use a longer --duration"))
    return SteadyState(
        steady_start_s=start_s, mean=mean, ci_low=interval[0] if interval else None,
        ci_high=interval[1] if interval else None, cv=cv, dips_s=found, trend_pct=trend_pct,
        estimate=est, flags=tuple(flags),
    )


# Once-a-second samples a load-generator verdict needs: the first second of a point is
# connection set-up (at 128 clients the server showed 0.0 CPU in it), and one sample of
# it once flagged a 5 s point as load-generator-bound.
LOADGEN_MIN_SAMPLES = 3


def loadgen_flags(system: Sequence[Mapping[str, float | None]], threads: int, hardware_threads: int
                  ) -> tuple[Flag, ...]:
    """Was the load generator, not the database, the bottleneck? (system: stored
    system_samples rows of one point; nothing is said from fewer than
    LOADGEN_MIN_SAMPLES of a figure)"""

    def enough(field: str) -> list[float]:
        found = [v for s in system if (v := s.get(field)) is not None]
        return found if len(found) >= LOADGEN_MIN_SAMPLES else []
    means = {f: statistics.fmean(found) for f in ("loadgen_cpu", "cpu_idle_pct", "cpu_iowait_pct", "cpu_steal_pct",
                                                  "server_cpu") if (found := enough(f))}
    return loadgen_verdict(means, threads, hardware_threads)


def loadgen_verdict(means: Mapping[str, float | None], threads: int, hardware_threads: int,
                    machine_threads: int | None = None) -> tuple[Flag, ...]:
    """loadgen_flags() from the means of a point's system figures (loadgen_cpu,
    cpu_idle_pct, cpu_iowait_pct, cpu_steal_pct, server_cpu), each left out or None where
    it has too few samples. `hardware_threads`: those the server could use;
    `machine_threads`: the machine's [hardware_threads].

    The load generator is blamed where it is itself the limit: its own CPU near its
    threads' capacity, or, on a machine left without idle CPU while the server was not
    saturated, where it took more of that CPU than the other processes did. Where the
    others (stats/interference.py) took a notable share, the `neighbours` warning says
    so instead, with their figure: moving the load generator would not help then."""
    machine = machine_threads or hardware_threads
    lg, idle, server = means.get("loadgen_cpu"), means.get("cpu_idle_pct"), means.get("server_cpu")
    steal_pct = means.get("cpu_steal_pct")
    neighbours = interference.neighbour_cpu(idle, means.get("cpu_iowait_pct"), steal_pct, server, lg, machine)
    steal = interference.steal_cpu(steal_pct, machine)
    starved = idle is not None and server is not None and idle < thresholds.NEARLY_NO_IDLE_PCT \
        and server < thresholds.SATURATED * hardware_threads
    flags = []
    if lg is not None and threads and lg / threads >= thresholds.SATURATED:
        flags.append(Flag(Warning_.LOADGEN_BOUND,
                          f"the load generator used {lg / threads:.0%} of a core per thread: it may "
                          "be the bottleneck; run it on another machine or use fewer clients per thread"))
    elif starved and lg is not None and neighbours is not None and lg >= neighbours:
        assert idle is not None and server is not None
        flags.append(Flag(Warning_.LOADGEN_BOUND,
                          f"the machine had {idle:.0f} % idle CPU while the server used "
                          f"{server:.1f} of {hardware_threads} hardware threads: the load generator "
                          f"(using {lg:.1f} CPUs, other processes {neighbours:.1f}) competes with the database "
                          "for CPU; run it on another machine"))
    stolen = interference.notable(steal, machine)
    if interference.notable(neighbours, machine) or stolen:
        took = []
        if neighbours is not None and interference.notable(neighbours, machine):
            took.append(f"neighbours took {interference.cpus(neighbours)} of {machine} CPUs")
        if steal is not None and stolen:
            took.append(f"the hypervisor took (steal) {interference.cpus(steal)}")
        if starved:
            assert idle is not None and server is not None
            said = (f"{' and '.join(took)} while the server used {server:.1f} of {hardware_threads} hardware "
                    f"threads (the machine {idle:.0f} % idle"
                    + (f", the load generator {lg:.1f} CPUs" if lg is not None else "") +
                    "): other processes, not the load generator, took the CPU the server could have used")
        else:
            said = f"{' and '.join(took)} while the point ran: its figures move with their load"
        flags.append(Flag(Warning_.NEIGHBOURS, said + "; measure on a quiet machine, and compare only points "
                                                      "measured under the same load"))
    return tuple(flags)
