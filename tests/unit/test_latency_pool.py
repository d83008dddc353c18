"""Latency over repeats: percentiles of merged histograms, never averages of percentiles."""

from __future__ import annotations

import numpy as np
import pytest
from points import point

from dbarena.records import AnalysedPoint
from dbarena.stats import analysis
from dbarena.stats import latency


def _point(pid: int, values) -> tuple[AnalysedPoint, dict]:
    dist = latency.Latencies(source="pgbench log")
    dist.record_array(np.asarray(values))
    figures = dist.percentiles_ms()
    row = point(point_id=pid, latency_avg_ms=dist.mean_ms, transactions=dist.count,
                **{f"latency_{k}_ms": v for k, v in figures.items()})
    return row, dist.encode()


def test_repeats_pool_by_merging_histograms_not_by_averaging_percentiles():
    fast, fast_h = _point(1, [100] * 990 + [10_000] * 10)  # p99 0.1 ms
    slow, slow_h = _point(2, [200] * 980 + [50_000] * 20)  # p99 50 ms
    records = {1: fast_h, 2: slow_h}
    pooled = analysis.pooled_latency([fast, slow], lambda ids: {i: records[i] for i in ids})
    everything = np.array([100] * 990 + [10_000] * 10 + [200] * 980 + [50_000] * 20)
    exact_p99 = np.percentile(everything, 99, method="inverted_cdf") / 1000
    assert pooled.latency_p99_ms == pytest.approx(exact_p99, rel=latency.PRECISION)
    assert pooled.latency_p99_ms != pytest.approx((fast.latency_p99_ms + slow.latency_p99_ms) / 2)
    assert pooled.latency_avg_ms == pytest.approx(everything.mean() / 1000)
    assert pooled.latency_max_ms == 50.0
    assert pooled.latency_pooled == "merged histograms of 2 points"


def test_one_point_keeps_its_own_figures_and_repeats_without_histograms_get_no_percentile():
    a, a_h = _point(1, [100, 200, 300])
    b, _ = _point(2, [400, 500, 600])
    alone = analysis.pooled_latency([a], None)
    assert alone.latency_p50_ms == a.latency_p50_ms and alone.latency_pooled == "one point"
    partial = analysis.pooled_latency([a, b], lambda ids: {1: a_h})
    assert partial.latency_p99_ms is None and partial.latency_p50_ms is None
    assert "1 of 2 points have no latency histogram" in (partial.latency_pooled or "")
    # the mean weighted by transactions and the maximum are still known
    assert partial.latency_avg_ms == pytest.approx(0.35) and partial.latency_max_ms == 0.6
