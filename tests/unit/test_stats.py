"""Statistics: checked against scipy as an oracle, and by simulation: series with a
known mean, known noise and autocorrelation, whose 95 % intervals must cover the
true value about 95 % of the time."""

from __future__ import annotations

import math
import random
import statistics

import numpy as np
import pytest
from scipy import stats as sps

from dbarena.stats import estimators as stats
from dbarena.stats import steadystate


def ar1(n: int, mean: float, sd: float, rho: float, rng: random.Random) -> list[float]:
    """An AR(1) series with stationary standard deviation sd and lag-1 correlation rho."""
    x = rng.gauss(0, sd)
    out = []
    for _ in range(n):
        out.append(mean + x)
        x = rho * x + rng.gauss(0, sd * math.sqrt(1 - rho * rho))
    return out


# ------------------------------------------------------------------ oracle checks

def test_repeats_interval_equals_scipy_t_interval():
    values = [1012.5, 998.1, 1003.7, 1021.0, 987.4]
    est = stats.repeats(values)
    low, high = est.interval()
    want = sps.t.interval(0.95, len(values) - 1, loc=np.mean(values), scale=sps.sem(values))
    assert (low, high) == pytest.approx(want, rel=1e-12)


def test_batch_means_interval_equals_scipy_on_the_batch_means():
    rng = random.Random(7)
    series = ar1(100, 500, 20, 0.3, rng)
    est = steadystate.batch_means(series)
    size = 100 // est.n
    means = [statistics.fmean(series[100 - est.n * size + i * size: 100 - est.n * size + (i + 1) * size])
             for i in range(est.n)]
    want = sps.t.interval(0.95, est.n - 1, loc=np.mean(means), scale=sps.sem(means))
    assert est.interval() == pytest.approx(want, rel=1e-12)


def test_welch_equals_scipy_ttest_ind():
    a = [100.0, 103.0, 98.5, 101.2, 99.9]
    b = [104.0, 107.5, 103.1, 106.0]
    t, df = stats.welch(stats.repeats(a), stats.repeats(b))
    want = sps.ttest_ind(b, a, equal_var=False)
    assert t == pytest.approx(want.statistic, rel=1e-12)
    c = stats.compare(stats.repeats(a), stats.repeats(b))
    assert c.p_value == pytest.approx(want.pvalue, rel=1e-9)
    assert c.significant and c.verdict == stats.Verdict.FASTER and "faster (significant" in c.text
    assert c.ratio == pytest.approx(np.mean(b) / np.mean(a))
    assert c.ci_low < c.ratio < c.ci_high


def test_trend_p_value_equals_scipy_linregress():
    rng = random.Random(3)
    values = [100 + 0.5 * i + rng.gauss(0, 3) for i in range(40)]
    change, p = steadystate.trend(values)
    fit = sps.linregress(range(40), values)
    assert p == pytest.approx(fit.pvalue, rel=1e-9)
    assert change == pytest.approx(fit.slope * 39 / np.mean(values), rel=1e-9)


def test_not_significant_is_said_plainly():
    a = stats.repeats([100.0, 102.0, 98.0])
    b = stats.repeats([101.0, 99.0, 102.5])
    c = stats.compare(a, b)
    # Not significant, and the interval (-3.4 % to +5.2 % from three runs a side)
    # reaches past +-5 %: inconclusive, not "no difference".
    assert not c.significant and c.verdict == stats.Verdict.INCONCLUSIVE and c.text.startswith("inconclusive (")
    assert 1.05 < c.ci_high and c.text.endswith("; the CI reaches past ±5%)")
    # Many more runs of the same spread narrow it inside the margin: no difference.
    a = stats.repeats([100.0, 102.0, 98.0] * 8)
    b = stats.repeats([101.0, 99.0, 102.5] * 8)
    c = stats.compare(a, b)
    assert c.verdict == stats.Verdict.SAME and c.text.startswith("no difference (") and 0.95 < c.ci_low < c.ci_high < 1.05


@pytest.mark.parametrize("a, b, n", [([100.0], [110.0], 1), ([100.0, 101.0], [150.0, 151.0, 149.0], 2)])
def test_fewer_than_three_repeats_give_a_ratio_and_no_verdict(a, b, n):
    c = stats.compare(stats.repeats(a), stats.repeats(b))
    assert c.ratio == pytest.approx(np.mean(b) / np.mean(a))
    assert c.verdict is None and not c.significant and c.ci_low is None and c.p_value is None
    assert c.reason == c.text == f"no verdict: {n} repeat(s); needs 3"
    assert "significant" not in c.text


def test_a_single_runs_interval_is_marked_as_within_that_run_and_never_used_for_a_verdict():
    rng = random.Random(1)
    steady = steadystate.steady_state([float(i) for i in range(1, 61)], ar1(60, 1000, 30, 0.2, rng), 60)
    s = stats.summarize([steady.mean], single_run=steady)
    assert s.within_run and s.estimate.n == 1 and s.estimate.se is None
    other = stats.summarize([steady.mean * 1.5], single_run=steady)
    assert stats.compare(s.estimate, other.estimate).verdict is None


# ------------------------------------------------------------------ simulations

@pytest.mark.parametrize("n, rho", [(60, 0.0), (120, 0.5), (300, 0.5)])
def test_batch_means_interval_covers_the_true_mean_about_95_percent(n, rho):
    rng = random.Random(20261121 + n)
    reps = 400
    covered = 0
    for _ in range(reps):
        low, high = steadystate.batch_means(ar1(n, 1000.0, 50.0, rho, rng)).interval()
        covered += low <= 1000.0 <= high
    # 95 % nominal; binomial sd at 400 reps is 1.1 %, batch means undercover slightly.
    assert 0.90 <= covered / reps <= 0.99


def test_ratio_interval_covers_the_true_ratio_about_95_percent():
    rng = random.Random(5)
    reps, covered, significant = 400, 0, 0
    for _ in range(reps):
        a = stats.repeats([rng.gauss(1000, 40) for _ in range(5)])
        b = stats.repeats([rng.gauss(1100, 40) for _ in range(5)])
        c = stats.compare(a, b)
        covered += c.ci_low <= 1.1 <= c.ci_high
        significant += c.significant
    assert 0.90 <= covered / reps <= 0.99
    assert significant / reps > 0.9  # a 10 % difference with 4 % noise is found


def test_no_difference_is_called_significant_about_5_percent_of_the_time():
    rng = random.Random(11)
    reps = 400
    false = sum(stats.compare(stats.repeats([rng.gauss(1000, 40) for _ in range(5)]),
                              stats.repeats([rng.gauss(1000, 40) for _ in range(5)])).significant for _ in range(reps))
    assert false / reps <= 0.09


def test_steady_state_excludes_a_warm_up_and_covers_the_steady_mean():
    rng = random.Random(2)
    ramp = [300 + 35 * i for i in range(20)]  # 20 s climbing to ~1000
    series = ramp + ar1(100, 1000, 30, 0.3, rng)
    result = steadystate.steady_state([float(i + 1) for i in range(120)], series, 120)
    assert 15 <= result.steady_start_s <= 25
    assert result.ci_low <= 1000 <= result.ci_high
    assert abs(result.mean - 1000) < 20
    assert not any(f.code == steadystate.Warning_.LONG_WARMUP for f in result.flags)


def test_mser5_cuts_nothing_from_a_stationary_series_nor_a_short_one():
    rng = random.Random(4)
    assert steadystate.mser5(ar1(100, 1000, 30, 0.0, rng)) <= 10
    assert steadystate.mser5([1, 2, 3, 50, 50, 50, 50, 50, 50, 50, 50, 50]) == 0  # 12 s: too short to judge


def test_checkpoint_dips_are_flagged_with_their_period():
    rng = random.Random(8)
    series = ar1(120, 1000, 15, 0.2, rng)
    for s in range(10, 120, 30):
        series[s] = 400.0
    result = steadystate.steady_state([float(i + 1) for i in range(120)], series, 120)
    assert list(result.dips_s) == [11.0, 41.0, 71.0, 101.0]
    (flag,) = [f for f in result.flags if f.code == steadystate.Warning_.DIPS]
    assert "about every 30 s" in flag.message


def test_a_drift_is_flagged():
    rng = random.Random(9)
    series = [1000 - 3 * i + rng.gauss(0, 10) for i in range(100)]
    result = steadystate.steady_state([float(i + 1) for i in range(100)], series, 100)
    assert result.trend_pct is not None and result.trend_pct < -10
    assert any(f.code == steadystate.Warning_.TREND for f in result.flags)


# ------------------------------------------------------------------ summaries and warnings

def test_summary_of_repeats():
    s = stats.summarize([1000.0, 1100.0, 1050.0])
    assert (s.n, s.median, s.mean) == (3, 1050.0, 1050.0)
    assert s.stdev == pytest.approx(50.0)
    assert s.cv == pytest.approx(50 / 1050)
    assert (s.ci_low, s.ci_high) == pytest.approx(sps.t.interval(0.95, 2, loc=1050, scale=50 / math.sqrt(3)))
    assert [f.code for f in s.flags] == []


def test_summary_warnings_have_advice():
    s = stats.summarize([1000.0, 1400.0], failed=1)
    codes = {f.code for f in s.flags}
    assert codes == {steadystate.Warning_.FAILED_POINTS, steadystate.Warning_.FEW_REPEATS, steadystate.Warning_.HIGH_VARIATION}
    assert all("--" in f.message or "see" in f.message or "look for" in f.message for f in s.flags)


def test_single_repeat_takes_its_run_interval():
    rng = random.Random(1)
    steady = steadystate.steady_state([float(i) for i in range(1, 61)], ar1(60, 1000, 30, 0.2, rng), 60)
    s = stats.summarize([steady.mean], single_run=steady)
    assert (s.ci_low, s.ci_high) == (steady.ci_low, steady.ci_high) and s.within_run
    assert any(f.code == steadystate.Warning_.FEW_REPEATS for f in s.flags)


def test_load_generator_warnings():
    busy_client = [{"loadgen_cpu": 1.8, "cpu_idle_pct": 50.0, "server_cpu": 2.0}] * 5
    assert [f.code for f in steadystate.loadgen_flags(busy_client, threads=2, hardware_threads=8)] == [
        steadystate.Warning_.LOADGEN_BOUND]
    saturated = [{"loadgen_cpu": 0.5, "cpu_idle_pct": 1.0, "server_cpu": 1.4}] * 5
    (flag,) = steadystate.loadgen_flags(saturated, threads=2, hardware_threads=2)
    assert "competes with the database" in flag.message
    fine = [{"loadgen_cpu": 0.3, "cpu_idle_pct": 40.0, "server_cpu": 1.0}] * 5
    assert steadystate.loadgen_flags(fine, threads=2, hardware_threads=2) == ()
    # A server on another machine: 98 % of this one busy, 0.3 of it the load generator's,
    # the rest other processes': neighbours, never the load generator.
    remote = [{"loadgen_cpu": 0.3, "cpu_idle_pct": 2.0, "server_cpu": None}] * 5
    (flag,) = steadystate.loadgen_flags(remote, threads=2, hardware_threads=2)
    assert flag.code == steadystate.Warning_.NEIGHBOURS and "neighbours took 1.6 of 2 CPUs" in flag.message
    quiet_remote = [{"loadgen_cpu": 0.3, "cpu_idle_pct": 80.0, "server_cpu": None}] * 5
    assert steadystate.loadgen_flags(quiet_remote, threads=2, hardware_threads=2) == ()
    # Two samples (a 4 s point, the first second connection set-up) say nothing either way.
    assert steadystate.loadgen_flags(saturated[:2], threads=2, hardware_threads=2) == ()
    assert steadystate.loadgen_flags(busy_client[:2], threads=2, hardware_threads=8) == ()


def test_points_of_two_load_generators_are_another_configuration_than_of_one():
    from dbarena.stats import configkey

    common = dict(engine="postgres", workload="pgbench-tpcb", threads=4, clients=4, duration_s=60, warmup_s=0,
                  params={"scale": 10}, options={}, settings={}, variant="", server_version="17.2",
                  flavour="postgresql", host=None)
    one, two = configkey.build(**common), configkey.build(**common, load_generators=2)
    assert "load_generators" not in one  # every key made before --together is unchanged
    assert configkey.digest(one) != configkey.digest(two)
    assert configkey.differing(one, two) == ["load_generators"] and not configkey.matches(one, two)
    assert configkey.describe(one, two, ["load_generators"]) == "load_generators 1 vs 2"
    assert configkey.unknown(one, two) == []
