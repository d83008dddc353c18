"""steadystate.py computes a series at a time with numpy; its figures must stay bit for
bit what the scalar definitions below gave (they are steadystate.py's code before it was
vectorised, kept here as the reference). Checked on every real per-second series in
tests/fixtures (pgbench and sysbench outputs, 6 to 3,608 seconds), and on variants of
them that reach the branches real series rarely do: a constant series (every warm-up
cut ties), a drift (the trend flag), a dip (the dips flag)."""

from __future__ import annotations

import math
import statistics
from pathlib import Path
from typing import Sequence

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dbarena.stats import steadystate
from dbarena.stats.estimate import Estimate, sample_stdev, t_dist
from dbarena.workloads import pgbench, sysbench

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
TEXT = (".db", ".json", ".md", ".tsv", ".xlsx", ".dat", ".html", ".csv", ".gz")


# ------------------------------------------------------------------ the scalar definitions


def mser5(series: Sequence[float]) -> int:
    m = len(series) // 5
    if m < steadystate.MSER_MIN_BATCHES:
        return 0
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


def batch_means(series: Sequence[float], min_batches: int = 4) -> Estimate | None:
    n = len(series)
    if n < 2 * min_batches:
        return None
    size = max(1, math.isqrt(n))
    while True:
        k = n // size
        offset = n - k * size
        means = [sum(series[offset + i * size: offset + (i + 1) * size]) / size for i in range(k)]
        if k // 2 < min_batches or steadystate._lag1(means) <= 0.2:
            break
        size *= 2
    if k < 2:
        return None
    return Estimate(mean=sum(means) / k, se=sample_stdev(means) / math.sqrt(k), df=k - 1, n=k)


def dips(values: Sequence[float], seconds: Sequence[float]) -> tuple[float, ...]:
    if len(values) < 5:
        return ()
    med = statistics.median(values)
    mad = statistics.median(abs(v - med) for v in values) * 1.4826
    limit = min(med - 4 * mad, 0.9 * med)
    return tuple(s for v, s in zip(values, seconds) if v < limit)


def trend(values: Sequence[float]) -> tuple[float, float] | None:
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
    return slope * (n - 1) / my, 2 * float(t_dist().sf(abs(slope / se), n - 2))


def steady_figures(seconds: Sequence[float], values: Sequence[float], duration_s: float | None) -> dict:
    """What steady_state returned, as (start, mean, interval, cv, dips, trend, flags)."""
    cut = mser5(values)
    steady, steady_s = list(values[cut:]), list(seconds[cut:])
    start_s = seconds[cut - 1] if cut else 0.0
    est = batch_means(steady)
    mean = statistics.fmean(steady)
    interval = est.interval() if est else None
    cv = sample_stdev(steady) / mean if len(steady) > 1 and mean else None
    duration = duration_s or (seconds[-1] if seconds else 0)
    codes = []
    if est is None:
        codes.append(steadystate.Warning_.SHORT_SERIES)
    if duration and start_s > duration / 3:
        codes.append(steadystate.Warning_.LONG_WARMUP)
    found = dips(steady, steady_s)
    if found:
        codes.append(steadystate.Warning_.DIPS)
    drift = trend(steady)
    trend_pct = None
    if drift is not None and drift[1] < 0.01 and abs(drift[0]) > 0.05:
        trend_pct = 100 * drift[0]
        codes.append(steadystate.Warning_.TREND)
    return {"start": start_s, "mean": mean, "interval": interval, "cv": cv, "dips": found, "trend_pct": trend_pct,
            "estimate": est, "flags": codes}


# ------------------------------------------------------------------ real series


def _real_series() -> list[tuple[str, list[float], list[float]]]:
    found = []
    for path in sorted(FIXTURES.rglob("*")):
        if not path.is_file() or path.suffix in TEXT:
            continue
        text = path.read_text(errors="replace")
        for read in (pgbench.parse_progress, lambda t: sysbench.read_samples(t, "")):
            try:
                samples = read(text)
            except Exception:  # not this tool's output
                continue
            if len(samples) >= 6:
                found.append((str(path.relative_to(FIXTURES)), [s.second for s in samples], [s.tps for s in samples]))
                break
    return found


REAL = _real_series()


def _variants(seconds: list[float], values: list[float]) -> list[tuple[str, list[float]]]:
    n = len(values)
    mean = statistics.fmean(values)
    dipped = list(values)
    dipped[n // 2] = values[n // 2] * 0.3
    return [("as measured", values), ("reversed", values[::-1]), ("constant", [mean] * n),
            ("drifting", [v * (1 + 0.4 * i / n) for i, v in enumerate(values)]), ("one dip", dipped)]


CASES = [(f"{name} {label}", seconds, series) for name, seconds, values in REAL
         for label, series in _variants(seconds, values)]


def test_the_fixtures_hold_enough_real_series():
    # The comparison below must see long series, not only the fixtures' 6-second ones.
    assert len(REAL) >= 50 and sum(len(v) >= 600 for _, _, v in REAL) >= 3


@pytest.mark.parametrize("name, seconds, values", CASES, ids=[c[0] for c in CASES])
def test_vectorised_figures_equal_the_scalar_ones_bit_for_bit(name, seconds, values):
    assert steadystate.mser5(values) == mser5(values)
    assert steadystate.batch_means(values) == batch_means(values)
    assert steadystate.dips(values, seconds) == dips(values, seconds)
    assert steadystate.trend(values) == trend(values)
    old = steady_figures(seconds, values, None)
    for given in (values, np.array(values)):
        new = steadystate.steady_state(seconds, given)
        assert new is not None
        assert (new.steady_start_s, new.mean, (new.ci_low, new.ci_high) if new.estimate and new.ci_low is not None
                else None, new.cv, new.dips_s, new.trend_pct, new.estimate,
                [f.code for f in new.flags]) == (old["start"], old["mean"], old["interval"], old["cv"], old["dips"],
                                                 old["trend_pct"], old["estimate"], old["flags"])


# Any series, not only measured ones: wide ranges, few distinct values (exact ties
# between cuts), a constant level with noise in its last digits (near ties).
_LEVEL = st.floats(min_value=1e-3, max_value=1e7)
_SERIES = st.one_of(
    st.lists(st.floats(min_value=0, max_value=1e6), min_size=20, max_size=240),
    st.lists(st.sampled_from([1000.0, 1000.5, 999.75, 0.1]), min_size=20, max_size=240),
    st.tuples(_LEVEL, st.lists(st.integers(-3, 3), min_size=20, max_size=240)).map(
        lambda t: [t[0] * (1 + k * 2.0 ** -50) for k in t[1]]),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_SERIES)
def test_the_warm_up_cut_is_the_scalar_one_on_any_series(values):
    assert steadystate.mser5(values) == mser5(values)


def test_many_series_at_once_give_each_one_s_figures():
    # A read computes a batch of points together (grouped by length, then by warm-up
    # cut): each must get what it alone gets, whatever it is grouped with.
    seconds = [s for _, s, _ in CASES]
    series = [np.array(v) for _, _, v in CASES]
    together = steadystate.steady_states(seconds, series, [None] * len(CASES))
    alone = [steadystate.steady_state(s, v) for s, v in zip(seconds, series)]
    assert together == alone
    assert len({len(v) for v in series}) < len(series)  # some groups hold several series


# A series that settles on one value: every cut in the constant tail ties, and the
# statistic of each is taken from shared running sums. Each must be the scalar one, bit
# for bit, whatever the value (sums of 0.1 or 1234.56 round; a prefix differs).
@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(min_value=0, max_value=1e6), max_size=30),
       st.one_of(st.floats(min_value=1e-300, max_value=1e12), st.sampled_from([0.0, 0.1, 1234.56, 1 / 3])),
       st.integers(min_value=1, max_value=400))
def test_the_statistic_of_every_cut_of_a_constant_tail_is_the_scalar_one(prefix, level, length):
    z = prefix + [level] * length
    cuts = list(range(len(z) // 2 + 1))
    expected = [steadystate._mser_value(z, k) for k in cuts]
    assert steadystate._least_cut(np.array(z), cuts) == cuts[expected.index(min(expected))]
    tail = [k for k in cuts if k >= len(prefix)]
    assert steadystate._constant_tail_values(level, [len(z) - k for k in tail]) == expected[len(cuts) - len(tail):]
    assert mser5([v for v in z for _ in range(5)]) == steadystate.mser5([v for v in z for _ in range(5)])


def test_a_long_constant_series_is_cut_as_the_scalar_loop_cuts_it():
    # 4,000 equal seconds of an inexact figure (800 batches, 401 tied cuts): the scalar
    # loop's answer, which the shared sums reach without its 400 passes.
    values = [1234.56] * 4_000
    assert steadystate.mser5(values) == mser5(values)
    assert steadystate.steady_state(list(map(float, range(1, 4_001))), values) is not None
